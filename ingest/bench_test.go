package ingest

import (
	"bufio"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/noticesd/noticesd/internal/ident"
)

// writeNotices writes n synthetic notices (about 900 bytes each) to path,
// gzipped when the name ends in .gz.
func writeNotices(tb testing.TB, path string, n int) {
	tb.Helper()
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	var w io.Writer = f
	if strings.HasSuffix(path, ".gz") {
		zw := gzip.NewWriter(f)
		defer zw.Close()
		w = zw
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	defer bw.Flush()
	states := []string{"NSW", "VIC", "QLD", "WA", "SA", "TAS", "ACT", "NT"}
	for i := 0; i < n; i++ {
		first8 := fmt.Sprintf("%08d", i*7+1000000)
		acn := first8 + fmt.Sprint(ident.ACNCheckDigit(first8))
		fmt.Fprintf(bw, `{"source_id":"6B%07d","source_url":"https://insolvencynotices.asic.gov.au/browsesearch-notices/notice-details/%d","published_at":"2025-%02d-%02dT0%d:15:00+10:00","acn":"%s","company_name":"EXAMPLE TRADING %d PTY LTD","notice_type":"Appointment of Liquidator","notice_code":"APLQ","notice_purpose":"Appointment","appointment_type":"Creditors' Voluntary Liquidation","state":"%s","status":"In Liquidation","text":"Notice is given that on the date above the company resolved to be wound up voluntarily and that the person named below was appointed liquidator. Creditors with claims should lodge them with the liquidator. Company number %s. Dated this day.","practitioners":[{"name":"Jane Citizen %d","firm":"Citizen Partners","role":"Liquidator"},{"name":"John Smith","firm":"Citizen Partners","role":"Liquidator"}]}`+"\n",
			i, i, i%12+1, i%28+1, i%10, acn, i, states[i%len(states)], acn, i%50)
	}
}

// writeRegister writes n synthetic register rows, two names per company.
func writeRegister(tb testing.TB, path string, n int) {
	tb.Helper()
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	bw := bufio.NewWriterSize(f, 1<<20)
	defer bw.Flush()
	bw.WriteString(strings.Join(RegisterColumns, "\t") + "\r\n")
	for i := 0; i < n; i++ {
		c := i / 2
		first8 := fmt.Sprintf("%08d", c*7+1000000)
		acn := first8 + fmt.Sprint(ident.ACNCheckDigit(first8))
		if i%2 == 0 {
			fmt.Fprintf(bw, "EXAMPLE TRADING %d PTY LTD\t%s\tAPTY\tLMSH\tPROP\tREGD\t%02d/%02d/19%02d\t\tNSW\t4686%04d\t\tY\t%s\t\t\r\n",
				c, acn, c%28+1, c%12+1, c%100, c%10000, ident.ABNFromACN(acn))
		} else {
			fmt.Fprintf(bw, "OLD NAME %d PTY LTD\t%s\tAPTY\tLMSH\tPROP\tREGD\t%02d/%02d/19%02d\t\tNSW\t4686%04d\t\t\t%s\tEXAMPLE TRADING %d PTY LTD\t%02d/%02d/2016\r\n",
				c, acn, c%28+1, c%12+1, c%100, c%10000, ident.ABNFromACN(acn), c, c%28+1, c%12+1)
		}
	}
}

func BenchmarkNoticeReader(b *testing.B) {
	for _, name := range []string{"notices.jsonl", "notices.jsonl.gz"} {
		b.Run(name, func(b *testing.B) {
			path := filepath.Join(b.TempDir(), name)
			const rows = 20000
			writeNotices(b, path, rows)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				f, err := os.Open(path)
				if err != nil {
					b.Fatal(err)
				}
				r, err := NewNoticeReader(f)
				if err != nil {
					b.Fatal(err)
				}
				got := 0
				for {
					_, err := r.Next()
					if errors.Is(err, io.EOF) {
						break
					} else if err != nil {
						b.Fatal(err)
					}
					got++
				}
				f.Close()
				if got != rows {
					b.Fatalf("%d rows, want %d", got, rows)
				}
			}
			b.ReportMetric(float64(rows*b.N)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}

func BenchmarkRegisterReader(b *testing.B) {
	path := filepath.Join(b.TempDir(), "register.tsv")
	const rows = 200000
	writeRegister(b, path, rows)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		f, err := os.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		r, err := NewRegisterReader(f)
		if err != nil {
			b.Fatal(err)
		}
		got := 0
		for {
			_, err := r.Next()
			if errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				b.Fatal(err)
			}
			got++
		}
		f.Close()
		if got != rows {
			b.Fatalf("%d rows, want %d", got, rows)
		}
	}
	b.ReportMetric(float64(rows*b.N)/b.Elapsed().Seconds(), "rows/s")
}
