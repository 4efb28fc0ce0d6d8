package ingest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/noticesd/noticesd/internal/ident"
	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/store"
)

// DefaultRegisterBatch is the number of register rows per RegisterLoad.Add call.
const DefaultRegisterBatch = 5000

// RegisterColumns is the header row of the ASIC company dataset, in order.
// The file must start with exactly this row (tab-separated).
var RegisterColumns = []string{
	"Company Name",
	"ACN",
	"Type",
	"Class",
	"Sub Class",
	"Status",
	"Date of Registration",
	"Date of Deregistration",
	"Previous State of Registration",
	"State Registration number",
	"Modified since last report",
	"Current Name Indicator",
	"ABN",
	"Current Name",
	"Current Name Start Date",
}

// RegisterReader reads the ASIC company dataset: a tab-separated header
// row, then one row per company name. Fields are split on tabs only (the
// data has stray quotes in names, so quotes mean nothing) and trimmed.
type RegisterReader struct {
	lines *lineReader
}

// NewRegisterReader reads the dataset from r (gunzipping it when it starts
// with the gzip magic bytes) and checks its header row. A UTF-8 byte order
// mark and \r\n line ends are accepted. A wrong header is an error naming
// the expected and found columns.
func NewRegisterReader(r io.Reader) (*RegisterReader, error) {
	d, err := Decompress(r)
	if err != nil {
		return nil, err
	}
	rr := &RegisterReader{lines: newLineReader(d)}
	head, tooLong, err := rr.lines.next()
	switch {
	case errors.Is(err, io.EOF):
		return nil, errors.New("the register file is empty; expected the ASIC company dataset with its header row")
	case err != nil:
		return nil, fmt.Errorf("reading the header row: %w", err)
	case tooLong:
		return nil, errors.New("the first line is not the ASIC company dataset header row (it is far too long)")
	}
	if err := checkHeader(string(head)); err != nil {
		return nil, err
	}
	return rr, nil
}

func checkHeader(head string) error {
	found := strings.Split(head, "\t")
	for i, want := range RegisterColumns {
		if i >= len(found) || found[i] != want {
			got := "nothing"
			if i < len(found) {
				got = fmt.Sprintf("%q", found[i])
			}
			return fmt.Errorf("the header row is not the ASIC company dataset's: column %d is %s, expected %q.\n  expected %d tab-separated columns: %s\n  found    %d: %s",
				i+1, got, want, len(RegisterColumns), quoteAll(RegisterColumns), len(found), quoteAll(found))
		}
	}
	if len(found) > len(RegisterColumns) {
		return fmt.Errorf("the header row is not the ASIC company dataset's: it has %d columns, expected %d; extra: %s.\n  expected: %s",
			len(found), len(RegisterColumns), quoteAll(found[len(RegisterColumns):]), quoteAll(RegisterColumns))
	}
	return nil
}

func quoteAll(cols []string) string {
	q := make([]string, len(cols))
	for i, c := range cols {
		q[i] = fmt.Sprintf("%q", c)
	}
	return strings.Join(q, ", ")
}

// Next returns the next register row. A row that cannot be loaded gives a
// *LineError with its line number (the header is line 1); Next can be
// called again. Blank lines are skipped. io.EOF ends the input; any other
// error is a read failure.
func (r *RegisterReader) Next() (notice.RegisterRow, error) {
	return nextRecord(r.lines, ParseRegisterLine)
}

// ParseRegisterLine parses one data row of the ASIC company dataset:
// 15 tab-separated fields, a 9-digit ACN, an 11-digit ABN or blank, and
// DD/MM/YYYY dates (or blank) turned into YYYY-MM-DD. Fields are trimmed; a
// row that is not valid UTF-8 is decoded as Latin-1. A bad row gives a
// *LineError (without a line number).
func ParseRegisterLine(line []byte) (notice.RegisterRow, error) {
	if n := bytes.Count(line, []byte{'\t'}) + 1; n != len(RegisterColumns) {
		return notice.RegisterRow{}, reject("has %d tab-separated fields, expected %d", n, len(RegisterColumns))
	}
	// One string for the whole line; the fields are slices of it. A line
	// that is not UTF-8 is read as Latin-1, so no byte turns into U+FFFD.
	var s string
	if utf8.Valid(line) {
		s = string(line)
	} else {
		s = latin1(line)
	}
	var f [15]string
	for i := 0; i < len(f)-1; i++ {
		j := strings.IndexByte(s, '\t')
		f[i] = strings.TrimSpace(s[:j])
		s = s[j+1:]
	}
	f[len(f)-1] = strings.TrimSpace(s)

	row := notice.RegisterRow{
		CompanyName:             f[0],
		Type:                    f[2],
		Class:                   f[3],
		SubClass:                f[4],
		Status:                  f[5],
		PreviousState:           f[8],
		StateRegistrationNumber: f[9],
		ModifiedSinceLastReport: f[10],
		CurrentNameIndicator:    f[11],
		CurrentName:             f[13],
	}
	if row.CompanyName == "" {
		return notice.RegisterRow{}, reject("Company Name is blank")
	}
	acn, ok := ident.Normalise(f[1])
	if !ok || acn.Kind != ident.ACN {
		return notice.RegisterRow{}, reject("ACN %q is not 9 digits", f[1])
	}
	row.ACN = acn.Value
	// The dataset's help file says a company without an ABN may show "0".
	if f[12] != "" && f[12] != "0" {
		abn, ok := ident.Normalise(f[12])
		if !ok || abn.Kind != ident.ABN {
			return notice.RegisterRow{}, reject("ABN %q is not 11 digits (or blank)", f[12])
		}
		row.ABN = abn.Value
	}
	var err *LineError
	if row.RegisteredOn, err = registerDate("Date of Registration", f[6]); err != nil {
		return notice.RegisterRow{}, err
	}
	if row.DeregisteredOn, err = registerDate("Date of Deregistration", f[7]); err != nil {
		return notice.RegisterRow{}, err
	}
	if row.CurrentNameStart, err = registerDate("Current Name Start Date", f[14]); err != nil {
		return notice.RegisterRow{}, err
	}
	return row, nil
}

var daysIn = [13]int{0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31}

// registerDate turns DD/MM/YYYY (day and month may have one digit) into
// YYYY-MM-DD; blank stays blank.
func registerDate(column, s string) (string, *LineError) {
	if s == "" {
		return "", nil
	}
	bad := func() (string, *LineError) {
		return "", reject("%s %q is not a DD/MM/YYYY date", column, s)
	}
	d1 := strings.IndexByte(s, '/')
	if d1 < 1 || d1 > 2 {
		return bad()
	}
	d2 := strings.IndexByte(s[d1+1:], '/')
	if d2 < 1 || d2 > 2 {
		return bad()
	}
	d2 += d1 + 1
	day, okD := atoi(s[:d1])
	month, okM := atoi(s[d1+1 : d2])
	year, okY := atoi(s[d2+1:])
	if !okD || !okM || !okY || len(s)-d2-1 != 4 || month < 1 || month > 12 || day < 1 || day > daysIn[month] {
		return bad()
	}
	if month == 2 && day == 29 && !(year%4 == 0 && (year%100 != 0 || year%400 == 0)) {
		return bad()
	}
	var b [10]byte
	b[0], b[1], b[2], b[3] = byte('0'+year/1000), byte('0'+year/100%10), byte('0'+year/10%10), byte('0'+year%10)
	b[4] = '-'
	b[5], b[6] = byte('0'+month/10), byte('0'+month%10)
	b[7] = '-'
	b[8], b[9] = byte('0'+day/10), byte('0'+day%10)
	return string(b[:]), nil
}

// latin1 decodes ISO 8859-1 bytes.
func latin1(b []byte) string {
	r := make([]rune, len(b))
	for i, c := range b {
		r[i] = rune(c)
	}
	return string(r)
}

// atoi parses a short run of ASCII digits.
func atoi(s string) (int, bool) {
	if s == "" {
		return 0, false
	}
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
		n = n*10 + int(s[i]-'0')
	}
	return n, true
}

// Register replaces the company register with the ASIC company dataset at
// path (plain or gzipped; "-" is stdin). Rows go to one RegisterLoad in
// batches and are committed at the end, so readers see the old register
// until the new one is complete. Bad rows are reported to opt.Report as
// "FILE:LINE: reason" and skipped. A wrong header, a read or write error,
// or a file without a single good row is returned as an error (exit 1) and
// the load is rolled back: the old register stays.
func Register(ctx context.Context, w store.RegisterWriter, path string, opt Options) (sum Summary, err error) {
	sum.Kind = "register"
	start := opt.now()
	defer func() { sum.Duration = opt.now().Sub(start) }()
	total, err := inputSizes([]string{path})
	if err != nil {
		return sum, err
	}
	in, err := openInput(path)
	if err != nil {
		return sum, err
	}
	defer in.Close()
	r, err := NewRegisterReader(in.count)
	if err != nil {
		return sum, fmt.Errorf("%s: %w", in.name, err)
	}
	load, err := w.BeginRegister(ctx)
	if err != nil {
		return sum, fmt.Errorf("starting the register load: %w", err)
	}
	committed := false
	defer func() {
		if !committed {
			if rerr := load.Rollback(); rerr != nil && err != nil {
				err = fmt.Errorf("%w (and rolling back failed: %v)", err, rerr)
			}
		}
	}()

	prog := newProgressFor(opt, "register", total, func() int64 { return in.count.n })
	rep := &reporter{w: opt.Report, progress: prog}
	size := opt.batch(DefaultRegisterBatch)
	produce := func(ctx context.Context, out chan<- []notice.RegisterRow) error {
		batch := make([]notice.RegisterRow, 0, size)
		send := func() error {
			if len(batch) == 0 {
				return nil
			}
			select {
			case out <- batch:
			case <-ctx.Done():
				return ctx.Err()
			}
			batch = make([]notice.RegisterRow, 0, size)
			return nil
		}
		for {
			row, err := r.Next()
			var le *LineError
			switch {
			case err == nil:
				sum.Read++
				prog.row()
				batch = append(batch, row)
				if len(batch) >= size {
					if err := send(); err != nil {
						return err
					}
				}
			case errors.As(err, &le):
				sum.Read++
				sum.Rejected++
				prog.row()
				rep.reject(in.name, le)
			case errors.Is(err, io.EOF):
				return send()
			default:
				return fmt.Errorf("%s: %w", in.name, err)
			}
		}
	}
	consume := func(batch []notice.RegisterRow) error {
		if err := load.Add(ctx, batch); err != nil {
			return fmt.Errorf("adding register rows failed after %d rows; the old register is kept: %w", sum.Inserted, err)
		}
		sum.Inserted += len(batch)
		prog.stored(len(batch))
		return nil
	}
	err = pipe(ctx, produce, consume)
	rep.finish()
	prog.finish()
	if err != nil {
		return sum, err
	}
	if sum.Inserted == 0 {
		return sum, fmt.Errorf("%s has no loadable rows (%d rejected); the register was left unchanged", in.name, sum.Rejected)
	}
	committed = true // Commit ends the load either way; no Rollback after it
	if err := load.Commit(ctx); err != nil {
		_ = load.Rollback()
		return sum, fmt.Errorf("committing the new register failed; the old register is kept: %w", err)
	}
	return sum, nil
}
