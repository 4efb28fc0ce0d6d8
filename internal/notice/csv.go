package notice

import "strconv"

// CSVColumns are the columns of a notice in a CSV export of GET
// /v1/notices, in order.
var CSVColumns = []string{"id", "notice_seq", "published_date", "acn", "abn", "company_name",
	"notice_purpose", "notice_type", "appointment_type", "state", "status", "source_url"}

// CSVRecord returns the notice's cells in CSVColumns order, appended to
// dst[:0]; a null value is an empty cell.
func (n *Notice) CSVRecord(dst []string) []string {
	return append(dst[:0], n.ID, strconv.FormatInt(n.Seq, 10), n.PublishedDate, deref(n.ACN), deref(n.ABN),
		n.CompanyName, n.NoticePurpose, n.NoticeType, deref(n.AppointmentType), n.State, n.Status, deref(n.SourceURL))
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
