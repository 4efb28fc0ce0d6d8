package ingest

import (
	"context"
	"io"

	"github.com/noticesd/noticesd/internal/store"
)

// NoticesFrom loads JSON Lines notices (plain or gzipped) from r into w, the
// way Notices loads a file: in batches of opt.BatchSize, a known source_id
// updated in place, bad lines reported to opt.Report as "NAME:LINE: reason"
// and skipped. name stands for the input in reports and errors (a file
// name, a redacted URL).
//
// A read failure (a truncated gzip stream, a connection cut mid-body) or a
// writer error stops the load and is returned with the counts so far;
// batches written before it stay written, while notices read since the
// last full batch are dropped. Callers that must tell the two apart can
// wrap w and note its errors.
func NoticesFrom(ctx context.Context, w store.NoticeWriter, r io.Reader, name string, opt Options) (sum Summary, err error) {
	sum.Kind = "notices"
	start := opt.now()
	defer func() { sum.Duration = opt.now().Sub(start) }()
	in := &input{name: name, count: &countingReader{r: r}}
	prog := newProgressFor(opt, "notices", -1, func() int64 { return in.count.n })
	rep := &reporter{w: opt.Report, progress: prog}
	size := noticeBatch(w, opt)

	produce := func(ctx context.Context, out chan<- []linedNotice) error {
		b := newNoticeBatcher(ctx, out, size)
		b.file = name
		if err := readNotices(in, b.add, &sum, rep, prog); err != nil {
			return err
		}
		return b.flush()
	}
	err = storeNotices(ctx, w, produce, &sum, rep, opt)
	rep.finish()
	prog.finish()
	return sum, err
}
