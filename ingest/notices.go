package ingest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"reflect"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	gojson "github.com/goccy/go-json"
	"github.com/noticesd/noticesd/internal/errs"
	"github.com/noticesd/noticesd/internal/ident"
	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/store"
)

// DefaultNoticeBatch is the number of notices per UpsertNotices call of a
// serial writer (the embedded store). Each batch is one transaction: the
// embedded store adds it to the full-text index as one segment and writes
// every index page it changed to the WAL once, at commit, so larger
// batches mean fewer segments to merge and fewer copies of the same
// random index pages (id, acn, abn). 1,000,000 notices into a fresh
// database (docs/benchmarks.md, 2026-11-25): 13,325 rows/s in batches of
// 5,000, 18,215 at 20,000, 19,666 and 20,566 at 50,000, 20,683 at 100,000;
// with the writer's larger checkpoint interval, 19,734 and 20,018 at
// 20,000 and 21,216 and 22,027 at 50,000. The cost is that the load holds
// SQLite's write lock for a whole batch (about 2.5 s at that speed), so
// serve's own writes wait up to that long while a load runs; --batch
// lowers it.
const DefaultNoticeBatch = 50000

// noticeBatch is the number of notices per write call of a load into w:
// opt.BatchSize when set, else the writer's own default (store.BatchSizer),
// else DefaultNoticeBatch.
func noticeBatch(w store.NoticeWriter, opt Options) int {
	if bs, ok := w.(store.BatchSizer); ok {
		return opt.batch(bs.NoticeBatch())
	}
	return opt.batch(DefaultNoticeBatch)
}

// noticeLine is the input shape of one JSON Lines notice: API.md's notice
// object without id, notice_seq, collected_at and published_date (those are
// derived or assigned; present in the input they are ignored, like any
// unknown field).
type noticeLine struct {
	SourceID        *string               `json:"source_id"`
	SourceURL       *string               `json:"source_url"`
	PublishedAt     *string               `json:"published_at"`
	ACN             *string               `json:"acn"`
	ABN             *string               `json:"abn"`
	CompanyName     string                `json:"company_name"`
	NoticeType      string                `json:"notice_type"`
	NoticeCode      string                `json:"notice_code"`
	NoticePurpose   string                `json:"notice_purpose"`
	AppointmentType *string               `json:"appointment_type"`
	State           string                `json:"state"`
	Status          string                `json:"status"`
	Text            string                `json:"text"`
	Practitioners   []notice.Practitioner `json:"practitioners"`
	Replaces        *string               `json:"replaces"`
}

// ParseNoticeLine parses one JSON Lines notice into the notice a
// NoticeWriter stores: ID from source_id, published_at in the service's UTC
// form, published_date its Sydney date, strings trimmed, state upper-cased,
// acn/abn normalised, practitioners never nil. Seq and CollectedAt are left
// for the store. A line that cannot be loaded gives a *LineError saying why
// (without a line number).
func ParseNoticeLine(line []byte) (notice.Notice, error) {
	if !utf8.Valid(line) {
		return notice.Notice{}, reject("not valid UTF-8 at byte %d; notices files must be UTF-8 (convert the file, e.g. with iconv -f latin1 -t utf-8)", invalidUTF8At(line))
	}
	var in noticeLine
	if err := decodeObject(line, &in); err != nil {
		return notice.Notice{}, err
	}
	var n notice.Notice

	n.SourceID = trimmed(in.SourceID)
	if n.SourceID == "" {
		if in.SourceID == nil {
			return notice.Notice{}, reject("source_id is missing; every notice needs the regulator's notice identifier")
		}
		return notice.Notice{}, reject("source_id is empty; every notice needs the regulator's notice identifier")
	}
	n.ID = notice.IDFor(n.SourceID)

	if in.PublishedAt == nil {
		return notice.Notice{}, reject("published_at is missing; give an RFC 3339 timestamp or a YYYY-MM-DD date")
	}
	at, ok := parsePublished(strings.TrimSpace(*in.PublishedAt))
	if !ok {
		return notice.Notice{}, reject("published_at %s is not an RFC 3339 timestamp or YYYY-MM-DD date", errs.Quote(*in.PublishedAt))
	}
	if y, sy := at.UTC().Year(), at.In(notice.Sydney).Year(); y < 1 || y > 9999 || sy < 1 || sy > 9999 {
		return notice.Notice{}, reject("published_at %s falls outside the years 0001-9999 (in UTC or in Sydney time)", errs.Quote(*in.PublishedAt))
	}
	n.PublishedAt = notice.Timestamp(at)
	n.PublishedDate = notice.PublishedDate(at)

	var err *LineError
	if n.ACN, err = identifier("acn", in.ACN, ident.ACN); err != nil {
		return notice.Notice{}, err
	}
	if n.ABN, err = identifier("abn", in.ABN, ident.ABN); err != nil {
		return notice.Notice{}, err
	}
	n.CompanyName = strings.TrimSpace(in.CompanyName)
	if n.ACN == nil && n.ABN == nil && n.CompanyName == "" {
		return notice.Notice{}, reject("none of acn, abn and company_name is given; a notice needs at least one to name its company")
	}

	n.SourceURL = optional(in.SourceURL)
	if n.SourceURL != nil && !webURL(*n.SourceURL) {
		return notice.Notice{}, reject("source_url %s is not an http:// or https:// URL; give the notice's web address, or null", errs.Quote(*n.SourceURL))
	}
	n.NoticeType = strings.TrimSpace(in.NoticeType)
	n.NoticeCode = strings.TrimSpace(in.NoticeCode)
	n.NoticePurpose = strings.TrimSpace(in.NoticePurpose)
	n.AppointmentType = optional(in.AppointmentType)
	n.State = strings.ToUpper(strings.TrimSpace(in.State))
	n.Status = strings.TrimSpace(in.Status)
	n.Text = strings.TrimSpace(in.Text)
	n.Practitioners = practitioners(in.Practitioners)
	n.Replaces = replaces(in.Replaces)
	for _, f := range []struct {
		name string
		v    string
	}{{"notice_code", n.NoticeCode}, {"notice_purpose", n.NoticePurpose}, {"appointment_type", trimmed(n.AppointmentType)},
		{"state", n.State}, {"status", n.Status}} {
		if len(f.v) > MaxValueBytes {
			return notice.Notice{}, reject("%s is %d bytes long; a filter value may have at most %d", f.name, len(f.v), MaxValueBytes)
		}
	}
	return n, nil
}

// MaxValueBytes bounds the fields searches filter and count by
// (notice_code, notice_purpose, appointment_type, state, status): far above
// any real value, and far below what a search engine indexes as one term.
const MaxValueBytes = 1000

// invalidUTF8At is the offset of the first byte of b that is not valid
// UTF-8.
func invalidUTF8At(b []byte) int {
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size <= 1 {
			return i
		}
		i += size
	}
	return len(b)
}

// decodeObject unmarshals one JSON object, turning decoder errors into
// reasons an operator can act on.
func decodeObject(line []byte, v any) *LineError {
	if err := objectStart(line); err != nil {
		return err
	}
	// go-json decodes a well-formed line about twice as fast as
	// encoding/json (docs/benchmarks.md, 2026-11-24); a line it refuses is
	// decoded again by encoding/json, whose errors the reasons below are
	// written for (FuzzDecodeObject holds both decoders to the same answers).
	if gojson.Unmarshal(line, v) == nil {
		return nil
	}
	reflect.ValueOf(v).Elem().SetZero() // what go-json set before it stopped
	return decodeReason(json.Unmarshal(line, v))
}

// objectStart refuses a line that does not start (after blanks) as a
// JSON object.
func objectStart(line []byte) *LineError {
	i := 0
	for i < len(line) && (line[i] == ' ' || line[i] == '\t') {
		i++
	}
	if i == len(line) || line[i] != '{' {
		return reject("not a JSON object; each line must hold one notice as {...}")
	}
	return nil
}

// decodeReason turns an encoding/json decoding error (nil: none) into a
// reason an operator can act on.
func decodeReason(err error) *LineError {
	if err == nil {
		return nil
	}
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return reject("invalid JSON at byte %d: %s", syn.Offset, strings.TrimPrefix(syn.Error(), "json: "))
	case errors.As(err, &typ) && typ.Field != "":
		return reject("%s is a JSON %s; it must be %s", typ.Field, typ.Value, jsonKind(typ.Type))
	}
	return reject("invalid JSON: %s", strings.TrimPrefix(err.Error(), "json: "))
}

// jsonKind names the JSON shape a Go type decodes from.
func jsonKind(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string (or null where allowed)"
	case reflect.Slice:
		return "an array"
	case reflect.Struct:
		return "an object"
	}
	return t.Kind().String()
}

// parsePublished accepts an RFC 3339 timestamp or a YYYY-MM-DD date, which
// means midnight of that day in Australia/Sydney.
func parsePublished(s string) (time.Time, bool) {
	if len(s) == len(notice.DateLayout) {
		d, ok := notice.ParseDate(s)
		if !ok {
			return time.Time{}, false
		}
		return time.Date(d.Year(), d.Month(), d.Day(), 0, 0, 0, 0, notice.Sydney), true
	}
	if !rfc3339.MatchString(s) {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	return t, err == nil
}

// rfc3339 is the strict form of an RFC 3339 timestamp: two-digit fields
// and an offset of at most 23:59 (time.Parse alone lets "T5:03:09" and
// "+24:00" through).
var rfc3339 = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}[Tt](\d{2}):\d{2}:\d{2}(\.\d+)?([Zz]|[+-]([01]\d|2[0-3]):[0-5]\d)$`)

// identifier normalises an acn or abn field: absent, null or blank is nil;
// otherwise it must be digits (spaces allowed) of the kind's length. A
// wrong check digit is kept: real notices carry some.
func identifier(field string, v *string, kind ident.Kind) (*string, *LineError) {
	s := trimmed(v)
	if s == "" {
		return nil, nil
	}
	id, ok := ident.Normalise(s)
	if !ok || id.Kind != kind {
		want := "9 digits"
		if kind == ident.ABN {
			want = "11 digits"
		}
		return nil, reject("%s %q is not an %s: it must be %s (spaces allowed)", field, *v, kind, want)
	}
	return &id.Value, nil
}

// replaces keeps a notice id ("ntc_...") as given and turns anything else,
// taken as the replaced notice's source_id, into that notice's id.
func replaces(v *string) *string {
	s := trimmed(v)
	if s == "" {
		return nil
	}
	if !strings.HasPrefix(s, "ntc_") {
		s = notice.IDFor(s)
	}
	return &s
}

// practitioners trims each entry, drops empty ones and never returns nil.
func practitioners(in []notice.Practitioner) []notice.Practitioner {
	out := make([]notice.Practitioner, 0, len(in))
	for _, p := range in {
		p.Name = strings.TrimSpace(p.Name)
		p.Firm = strings.TrimSpace(p.Firm)
		p.Role = strings.TrimSpace(p.Role)
		if p.Name == "" && p.Firm == "" && p.Role == "" {
			continue
		}
		out = append(out, p)
	}
	return out
}

// webURL reports whether s is an absolute http or https URL with a host:
// the only links the console and API clients may follow. A javascript:,
// data: or relative URL would be a link that runs or hides something.
func webURL(s string) bool {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		return false
	}
	return strings.EqualFold(u.Scheme, "http") || strings.EqualFold(u.Scheme, "https")
}

func trimmed(v *string) string {
	if v == nil {
		return ""
	}
	return strings.TrimSpace(*v)
}

// optional trims a nullable string; blank becomes null.
func optional(v *string) *string {
	s := trimmed(v)
	if s == "" {
		return nil
	}
	return &s
}

// NoticeReader reads notices from JSON Lines, plain or gzipped, one notice
// per line. Blank lines are skipped.
type NoticeReader struct {
	lines *lineReader
}

// NewNoticeReader reads JSON Lines from r, gunzipping it when it starts
// with the gzip magic bytes.
func NewNoticeReader(r io.Reader) (*NoticeReader, error) {
	d, err := Decompress(r)
	if err != nil {
		return nil, err
	}
	return &NoticeReader{lines: newLineReader(d)}, nil
}

// Next returns the next notice. A line that cannot be loaded gives a
// *LineError with its line number; the reader has moved past it and Next
// can be called again. io.EOF ends the input; any other error is a read
// failure (a truncated gzip file, an I/O error).
func (r *NoticeReader) Next() (notice.Notice, error) {
	return nextRecord(r.lines, ParseNoticeLine)
}

// Line is the number of the line last read.
func (r *NoticeReader) Line() int { return r.lines.line() }

// Notices loads JSON Lines notice files (plain or gzipped; "-" is stdin)
// into w in batches, in order. A known source_id is updated in place. Bad
// lines are reported to opt.Report as "FILE:LINE: reason" and skipped.
// Every path is checked before anything is written. An unreadable file or
// a writer error stops the load and is returned (exit 1), with the counts
// so far; batches already written stay written.
func Notices(ctx context.Context, w store.NoticeWriter, paths []string, opt Options) (sum Summary, err error) {
	sum.Kind = "notices"
	start := opt.now()
	defer func() { sum.Duration = opt.now().Sub(start) }()
	if len(paths) == 0 {
		return sum, errors.New("no notice files given; pass one or more .jsonl or .jsonl.gz files, or - for standard input")
	}
	total, err := inputSizes(paths)
	if err != nil {
		return sum, err
	}
	var done int64 // bytes of files already finished, for progress
	var cur *input
	prog := newProgressFor(opt, "notices", total, func() int64 {
		if cur == nil {
			return done
		}
		return done + cur.count.n
	})
	rep := &reporter{w: opt.Report, progress: prog}
	size := noticeBatch(w, opt)

	produce := func(ctx context.Context, out chan<- []linedNotice) error {
		b := newNoticeBatcher(ctx, out, size)
		for _, path := range paths {
			in, err := openInput(path)
			if err != nil {
				return err
			}
			cur = in
			b.file = in.name
			err = readNotices(in, b.add, &sum, rep, prog)
			done += in.count.n
			cur = nil
			in.Close()
			if err != nil {
				return err
			}
		}
		return b.flush()
	}
	err = storeNotices(ctx, w, produce, &sum, rep, opt)
	rep.finish()
	prog.finish()
	return sum, err
}

// linedNotice is a parsed notice and where it came from, so that a notice
// the store refuses is reported with its line number.
type linedNotice struct {
	notice.Notice
	file string
	line int
}

// noticeBatcher groups parsed notices into batches for the writing side of
// a pipe.
type noticeBatcher struct {
	ctx     context.Context
	out     chan<- []linedNotice
	size    int
	file    string // the input being read
	batch   []linedNotice
	inBatch map[string]struct{}
}

func newNoticeBatcher(ctx context.Context, out chan<- []linedNotice, size int) *noticeBatcher {
	return &noticeBatcher{ctx: ctx, out: out, size: size,
		batch: make([]linedNotice, 0, size), inBatch: make(map[string]struct{}, size)}
}

// add appends n, read from line of the current input, sending the batch
// when it is full.
func (b *noticeBatcher) add(n notice.Notice, line int) error {
	// A source_id twice in one batch would make the second an update of a
	// row the store has not written yet: send the batch first.
	if _, dup := b.inBatch[n.SourceID]; dup {
		if err := b.flush(); err != nil {
			return err
		}
	}
	b.inBatch[n.SourceID] = struct{}{}
	b.batch = append(b.batch, linedNotice{Notice: n, file: b.file, line: line})
	if len(b.batch) >= b.size {
		return b.flush()
	}
	return nil
}

// flush sends the batch so far, if any.
func (b *noticeBatcher) flush() error {
	if len(b.batch) == 0 {
		return nil
	}
	select {
	case b.out <- b.batch:
	case <-b.ctx.Done():
		return b.ctx.Err()
	}
	b.batch = make([]linedNotice, 0, b.size)
	clear(b.inBatch)
	return nil
}

// starter is a NoticeWriter that takes a batch while the one before it is
// still being finished (scale mode: the next batch's bulk requests under
// way during a batch's refresh and publish). StartNotices places the batch
// after every batch started before it and returns; wait gives its answer.
type starter interface {
	StartNotices(ctx context.Context, batch []notice.Notice) (wait func() (store.UpsertResult, error))
}

// storeNotices runs a notice pipe: produce reads the batches (parsing runs
// ahead on its own goroutine), and they are written to w in order, two in
// flight when w is a starter. Notices w refuses one by one are counted in
// sum.Rejected.
func storeNotices(ctx context.Context, w store.NoticeWriter, produce func(context.Context, chan<- []linedNotice) error,
	sum *Summary, rep *reporter, opt Options) error {
	var refused int
	defer func() { sum.Rejected += refused }()
	record := recordNotices(sum, rep, &refused)
	st, ok := w.(starter)
	if !ok {
		return pipe(ctx, produce, func(batch []linedNotice) error {
			res, err := w.UpsertNotices(ctx, notices(batch))
			return record(batch, res, err)
		})
	}
	var last func() error // the answer of the batch in flight
	err := pipe(ctx, produce, func(batch []linedNotice) error {
		wait := st.StartNotices(ctx, notices(batch))
		var err error
		if last != nil {
			err = last()
		}
		last = func() error { res, err := wait(); return record(batch, res, err) }
		return err
	})
	if last != nil {
		if lerr := last(); err == nil {
			err = lerr
		}
	}
	return err
}

// notices returns the notices of a batch.
func notices(batch []linedNotice) []notice.Notice {
	ns := make([]notice.Notice, len(batch))
	for i := range batch {
		ns[i] = batch[i].Notice
	}
	return ns
}

// recordNotices returns what the writing side of a notice pipe does with
// the answer to each batch, in input order: count what happened in sum,
// report the notices a store refused one by one (store.BatchError) with
// their line numbers and count them in refused (the load goes on), and
// turn any other error into the one that stops the load.
func recordNotices(sum *Summary, rep *reporter, refused *int) func([]linedNotice, store.UpsertResult, error) error {
	return func(batch []linedNotice, res store.UpsertResult, err error) error {
		var be *store.BatchError
		if errors.As(err, &be) {
			for _, it := range be.Items {
				if it.Index >= 0 && it.Index < len(batch) {
					*refused++
					rep.reject(batch[it.Index].file, &LineError{Line: batch[it.Index].line, Reason: it.Reason})
				}
			}
			err = nil
		}
		if err != nil {
			return fmt.Errorf("storing notices failed after %d were stored (the failed batch of %d may be partly stored: run the same ingest again, it stores the rest and duplicates nothing): %w",
				sum.Inserted+sum.Updated, len(batch), err)
		}
		sum.Inserted += res.Inserted
		sum.Updated += res.Updated
		rep.progress.stored(res.Inserted + res.Updated)
		return nil
	}
}

// readNotices reads one input to its end, handing each good notice to add
// and reporting bad lines.
func readNotices(in *input, add func(notice.Notice, int) error, sum *Summary, rep *reporter, prog *progress) error {
	r, err := NewNoticeReader(in.count)
	if err != nil {
		return fmt.Errorf("%s: %w", in.name, err)
	}
	for {
		n, err := r.Next()
		if err == nil {
			sum.Read++
			prog.row()
			if err := add(n, r.Line()); err != nil {
				return err
			}
			continue
		}
		var le *LineError
		switch {
		case errors.As(err, &le):
			sum.Read++
			sum.Rejected++
			prog.row()
			rep.reject(in.name, le)
		case errors.Is(err, io.EOF):
			return nil
		default:
			return fmt.Errorf("%s: %w", in.name, err)
		}
	}
}
