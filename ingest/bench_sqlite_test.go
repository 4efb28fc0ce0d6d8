//go:build sqlite_fts5

package ingest

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/noticesd/noticesd/internal/store/sqlite"
)

// Run: go test -tags sqlite_fts5 -run X -bench SQLite -benchtime 1x ./ingest/
func BenchmarkNoticesIntoSQLite(b *testing.B) {
	const rows = 20000
	path := filepath.Join(b.TempDir(), "notices.jsonl.gz")
	writeNotices(b, path, rows)
	for _, batch := range []int{1000, DefaultNoticeBatch, 5000} {
		b.Run(fmt.Sprint("batch", batch), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				st, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "n.db"))
				if err != nil {
					b.Fatal(err)
				}
				sum, err := Notices(context.Background(), st, []string{path}, Options{BatchSize: batch})
				st.Close()
				if err != nil || sum.Inserted != rows {
					b.Fatalf("%v %+v", err, sum)
				}
				b.ReportMetric(float64(sum.RowsPerSecond()), "rows/s")
			}
		})
	}
}

func BenchmarkRegisterIntoSQLite(b *testing.B) {
	const rows = 200000
	path := filepath.Join(b.TempDir(), "register.tsv")
	writeRegister(b, path, rows)
	for _, batch := range []int{2000, DefaultRegisterBatch, 20000} {
		b.Run(fmt.Sprint("batch", batch), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				st, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "r.db"))
				if err != nil {
					b.Fatal(err)
				}
				sum, err := Register(context.Background(), st, path, Options{BatchSize: batch})
				st.Close()
				if err != nil || sum.Inserted != rows {
					b.Fatalf("%v %+v", err, sum)
				}
				b.ReportMetric(float64(sum.RowsPerSecond()), "rows/s")
			}
		})
	}
}
