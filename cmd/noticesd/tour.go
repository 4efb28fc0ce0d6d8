package main

import (
	"bufio"
	"context"
	"os"
	"strings"

	"github.com/noticesd/noticesd/internal/ident"
	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/store"
)

// tour holds identifiers of the demo database for the README's tour, so
// every tour command returns data. The sample's notices depend on the date
// it was generated, so they are picked from the database, not fixed.
type tour struct {
	ACN    string // a company with several notices in VIC or NSW
	ABN    string // another company with notices, by its ABN (spaced)
	Quiet  string // a registered company without notices
	Notice string // a notice of ACN
}

// pickTour finds the tour's identifiers; any it cannot find stay empty.
// registerFile is the sample register, scanned for a company without
// notices.
func pickTour(ctx context.Context, st store.Notices, registerFile string) tour {
	var t tour
	page, err := st.Search(ctx, notice.SearchQuery{
		Filter: notice.Filter{State: []string{"VIC", "NSW"}}, Sort: notice.SortPublishedDesc, Limit: 100, Page: 1,
	})
	if err != nil {
		return t
	}
	for _, n := range page.Notices {
		if n.ACN == nil || (t.ACN != "" && *n.ACN == t.ACN) {
			continue
		}
		id, err := ident.ParseParam(*n.ACN)
		if err != nil || !ident.ValidACN(*n.ACN) {
			continue
		}
		c, err := st.Company(ctx, id)
		if err != nil || c.NoticeCount < 2 || c.ABN == nil || len(*c.ABN) != 11 {
			continue
		}
		if t.ACN == "" {
			t.ACN, t.Notice = *n.ACN, n.ID
			continue
		}
		a := *c.ABN
		t.ABN = a[:2] + " " + a[2:5] + " " + a[5:8] + " " + a[8:]
		break
	}
	f, err := os.Open(registerFile)
	if err != nil {
		return t
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for i := 0; sc.Scan() && i < 5000; i++ {
		fields := strings.Split(sc.Text(), "\t")
		// Company Name, ACN, Type, Class, Sub Class, Status, ...
		if i == 0 || len(fields) < 6 || fields[5] != "REGD" || !ident.ValidACN(fields[1]) {
			continue
		}
		id, err := ident.ParseParam(fields[1])
		if err != nil {
			continue
		}
		if c, err := st.Company(ctx, id); err == nil && c.NoticeCount == 0 {
			t.Quiet = fields[1]
			break
		}
	}
	return t
}

// exports is the tour's export line: the identifiers found (one the data
// does not hold is left out rather than exported empty).
func (t tour) exports() string {
	var parts []string
	for _, v := range []struct{ name, value string }{{"ACN", t.ACN}, {"ABN", t.ABN}, {"QUIET", t.Quiet}, {"NOTICE", t.Notice}} {
		if v.value != "" {
			parts = append(parts, v.name+"='"+v.value+"'")
		}
	}
	return strings.Join(parts, " ")
}

// missing says which tour identifiers were not found, and why ("" when
// all were), as a line of the demo's output.
func (t tour) missing() string {
	var names []string
	for _, v := range []struct{ name, value string }{{"ACN", t.ACN}, {"ABN", t.ABN}, {"QUIET", t.Quiet}, {"NOTICE", t.Notice}} {
		if v.value == "" {
			names = append(names, v.name)
		}
	}
	if len(names) == 0 {
		return ""
	}
	return "  (" + strings.Join(names, ", ") + " not found in this data: QUIET needs the sample's company_register.tsv\n" +
		"   under NOTICES_DATA_DIR/sample, the others notices in VIC or NSW; the tour lines using them will not answer)\n"
}

// matchIDs is the start of the tour's /v1/match identifiers: the found
// ones, as shell-quoted JSON strings each followed by a comma.
func (t tour) matchIDs() string {
	var b strings.Builder
	for _, v := range []struct{ name, value string }{{"ACN", t.ACN}, {"ABN", t.ABN}, {"QUIET", t.Quiet}} {
		if v.value != "" {
			b.WriteString(`\"$` + v.name + `\", `)
		}
	}
	return b.String()
}
