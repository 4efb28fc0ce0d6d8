package redisstore

import (
	"context"
	"errors"
	"io"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/noticesd/noticesd/ingest"
	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/sample"
)

// BenchmarkRegisterBytesPerRow measures what the register costs in Redis:
// the MEMORY USAGE (SAMPLES 0: every element counted) of every key of a
// committed generation, over the rows loaded, for the register of
// `noticesd sample` (seed 1) of NOTICES_BENCH_REGISTER rows (default
// 4,000,000, about the national register; its ACNs span the range issued
// to date whatever the size, so a smaller register costs more a row).
// Measured, not asserted (the target is 60 bytes a row).
//
//	go test -tags sqlite_fts5 -run '^$' -bench RegisterBytesPerRow -benchtime 1x ./internal/store/redisstore
func BenchmarkRegisterBytesPerRow(b *testing.B) {
	n := 4_000_000
	if v, err := strconv.Atoi(os.Getenv("NOTICES_BENCH_REGISTER")); err == nil && v > 0 {
		n = v
	}
	files, err := sample.WriteFiles(sample.Options{Notices: 1, Companies: n, Seed: 1, Now: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)}, b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	f := newFixture(b, Options{})
	for b.Loop() {
		start := time.Now()
		l, err := f.rs.BeginRegister(ctx)
		if err != nil {
			b.Fatal(err)
		}
		rows := loadSampleRegister(b, files.Register, l)
		if err := l.Commit(ctx); err != nil {
			b.Fatal(err)
		}
		took := time.Since(start)
		var total, keys int64
		for _, k := range f.genKeys(b, l.v) {
			m, err := f.rdb.MemoryUsage(ctx, k, 0).Result()
			if err == redis.Nil {
				continue // a part this register has none of
			}
			if err != nil {
				b.Fatal(err)
			}
			total += m
			keys++
		}
		b.ReportMetric(float64(total)/float64(rows), "bytes-per-row")
		b.ReportMetric(float64(total)/(1<<20), "MiB")
		b.ReportMetric(float64(keys), "keys")
		b.ReportMetric(took.Seconds(), "load-s")
		b.Logf("%d register rows: %d keys, %d bytes in Redis (%.1f a row), loaded in %v", rows, keys, total, float64(total)/float64(rows), took.Round(time.Millisecond))
	}
}

// loadSampleRegister adds the rows of a register file to l, 10,000 an
// Add, and returns how many it added.
func loadSampleRegister(b *testing.B, path string, l *RegisterLoad) int {
	file, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer file.Close()
	rr, err := ingest.NewRegisterReader(file)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	batch, n := make([]notice.RegisterRow, 0, 10000), 0
	for {
		r, err := rr.Next()
		if err != nil && !errors.Is(err, io.EOF) {
			b.Fatal(err)
		}
		if err == nil {
			batch = append(batch, r)
		}
		if len(batch) == cap(batch) || (errors.Is(err, io.EOF) && len(batch) > 0) {
			if err := l.Add(ctx, batch); err != nil {
				b.Fatal(err)
			}
			n += len(batch)
			batch = batch[:0]
		}
		if errors.Is(err, io.EOF) {
			return n
		}
	}
}
