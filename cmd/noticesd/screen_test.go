package main

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/noticesd/noticesd/api"
	"github.com/noticesd/noticesd/internal/config"
	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/store/sqlite"
)

// TestScreenCommand: noticesd screen against a real server on a loopback
// port: the answer on stdout (the file's columns and rows, results
// appended, a byte-order mark with --bom, a filter from --filter), progress
// on stderr, and the usage errors (exit 2).
func TestScreenCommand(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st, err := sqlite.Open(ctx, filepath.Join(dir, "notices.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	acn := "004085616"
	if _, err := st.UpsertNotices(ctx, []notice.Notice{{SourceID: "S1", ID: notice.IDFor("S1"), PublishedAt: "2026-11-20T01:00:00.000Z",
		PublishedDate: "2026-11-20", ACN: &acn, CompanyName: "CAFÉ PTY LTD", NoticePurpose: "Appointment", State: "VIC"}}); err != nil {
		t.Fatal(err)
	}
	acc, err := st.CreateAccount(ctx, "screeners", "standard")
	if err != nil {
		t.Fatal(err)
	}
	srv := api.New(config.Default(), api.Deps{Notices: st, Accounts: st, Watches: st})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() {
		c, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(c)
	})
	base := "http://" + ln.Addr().String()
	file := filepath.Join(dir, "book.csv")
	if err := os.WriteFile(file, []byte("Loan Ref,ACN\nL1,004085616\nL2,004 085 616\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name       string
		args       []string
		code       int
		out, inErr string
	}{
		{"answer", []string{"screen", "--url", base, "--key", acc.ReadKey, "--rows", "1", file}, 0,
			"Loan Ref,ACN,identifier,result,screen_acn,company_name,notice_count,latest_notice_id,latest_published_date,latest_notice_purpose,insolvency,latest_insolvency_notice_id,latest_insolvency_published_date,latest_insolvency_notice_purpose,notice_purposes\r\n" +
				"L1,004085616,004085616,matched,004085616,CAFÉ PTY LTD,1," + notice.IDFor("S1") + ",2026-11-20,Appointment,true," + notice.IDFor("S1") + ",2026-11-20,Appointment,Appointment\r\n" +
				"L2,004 085 616,004085616,matched,004085616,CAFÉ PTY LTD,1," + notice.IDFor("S1") + ",2026-11-20,Appointment,true," + notice.IDFor("S1") + ",2026-11-20,Appointment,Appointment\r\n",
			"screen: done: 2 rows in 2 parts"},
		{"bom and filter", []string{"screen", "--url", base, "--key", acc.ReadKey, "--bom", "--filter", "state=NSW", "--quiet", file}, 0,
			"\xef\xbb\xbfLoan Ref,ACN,identifier,result,screen_acn,company_name,notice_count,latest_notice_id,latest_published_date,latest_notice_purpose,insolvency,latest_insolvency_notice_id,latest_insolvency_published_date,latest_insolvency_notice_purpose,notice_purposes\r\n" +
				"L1,004085616,004085616,unmatched,004085616,,0,,,,false,,,,\r\nL2,004 085 616,004085616,unmatched,004085616,,0,,,,false,,,,\r\n", ""},
		{"refused", []string{"screen", "--url", base, "--key", "nk_read_wrong", "--quiet", file}, 1, "", "401 Unauthorized: unauthorised: the API key is not recognised"},
		{"no file", []string{"screen", "--url", base, "--key", "k"}, 2, "", "screen needs one FILE"},
		{"no url", []string{"screen", "--key", "k", file}, 2, "", "screen needs --url"},
		{"no key", []string{"screen", "--url", base, file}, 2, "", "screen needs --key"},
		{"rows over the limit", []string{"screen", "--url", base, "--key", "k", "--rows", "50001", file}, 2, "", "--rows 50001 is out of range"},
		{"unknown filter", []string{"screen", "--url", base, "--key", "k", "--filter", "colour=red", file}, 2, "", `--filter "colour=red" is not NAME=VALUE`},
		{"help", []string{"screen", "--help"}, 0, "Usage: noticesd screen --url URL --key KEY", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("NOTICES_API_KEY", "")
			var stdout, stderr bytes.Buffer
			if code := run(c.args, &stdout, &stderr); code != c.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, c.code, stdout.String(), stderr.String())
			}
			if c.code == 0 && c.name != "help" && stdout.String() != c.out {
				t.Errorf("stdout\n%q\nwant\n%q", stdout.String(), c.out)
			}
			if c.name == "help" && !strings.Contains(stdout.String(), c.out) {
				t.Errorf("stdout %q lacks %q", stdout.String(), c.out)
			}
			if !strings.Contains(stderr.String(), c.inErr) {
				t.Errorf("stderr %q lacks %q", stderr.String(), c.inErr)
			}
		})
	}
}
