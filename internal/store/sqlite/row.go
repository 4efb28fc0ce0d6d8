package sqlite

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/noticesd/noticesd/internal/notice"
)

// noticeColumns are the columns scanNotice reads, qualified by alias n.
const noticeColumns = `n.seq, n.id, n.source_id, n.source_url, n.published_date, n.published_at,
	n.collected_at, n.acn, n.abn, n.company_name, n.notice_type, n.notice_code, n.notice_purpose,
	n.appointment_type, n.state, n.status, n.text, n.practitioners, n.replaces`

type scanner interface{ Scan(dest ...any) error }

func scanNotice(r scanner) (notice.Notice, error) {
	var (
		n                                       notice.Notice
		sourceURL, acn, abn, apptType, replaces sql.NullString
		practitioners                           string
	)
	err := r.Scan(&n.Seq, &n.ID, &n.SourceID, &sourceURL, &n.PublishedDate, &n.PublishedAt,
		&n.CollectedAt, &acn, &abn, &n.CompanyName, &n.NoticeType, &n.NoticeCode, &n.NoticePurpose,
		&apptType, &n.State, &n.Status, &n.Text, &practitioners, &replaces)
	if err != nil {
		return n, err
	}
	n.SourceURL = ptr(sourceURL)
	n.ACN = ptr(acn)
	n.ABN = ptr(abn)
	n.AppointmentType = ptr(apptType)
	n.Replaces = ptr(replaces)
	n.Practitioners = []notice.Practitioner{}
	if practitioners != "" && practitioners != "[]" {
		if err := json.Unmarshal([]byte(practitioners), &n.Practitioners); err != nil {
			return n, fmt.Errorf("sqlite: notice %s has unreadable practitioners JSON: %w", n.ID, err)
		}
	}
	return n, nil
}

func scanNotices(rows *sql.Rows) ([]notice.Notice, error) {
	defer rows.Close()
	out := []notice.Notice{}
	for rows.Next() {
		n, err := scanNotice(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, rows.Err()
}

func ptr(s sql.NullString) *string {
	if !s.Valid {
		return nil
	}
	v := s.String
	return &v
}

// nullable stores nil and "" as NULL.
func nullable(s *string) any {
	if s == nil || *s == "" {
		return nil
	}
	return *s
}

// placeholders returns "?, ?, ..." with n marks.
func placeholders(n int) string {
	if n <= 0 {
		return ""
	}
	return strings.Repeat("?, ", n-1) + "?"
}
