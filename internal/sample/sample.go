package sample

import (
	"bufio"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/noticesd/noticesd/internal/errs"
)

// DefaultYears is the span of publication dates when Options.Years is 0.
const DefaultYears = 5

// File names WriteFiles writes inside its directory.
const (
	NoticesFile  = "notices.jsonl.gz"
	RegisterFile = "company_register.tsv"
)

// Options says what to generate. The same Options always give byte-identical
// output.
type Options struct {
	// Notices is the number of notice lines to write.
	Notices int
	// Companies is the number of register ROWS to write (`--companies M`
	// means M rows). The register has one row per company name and about
	// 17% of companies have one or more former names, so the number of
	// distinct companies is about Companies/1.22. Summary.Companies reports
	// it.
	Companies int
	// Seed selects the sample; the same seed gives the same files.
	Seed int64
	// Now is the end of the publication window and "today" of the
	// register. Required: the generator never reads the clock.
	Now time.Time
	// Years is the span of publication dates before Now (default 5).
	Years int
}

// Summary counts what was written.
type Summary struct {
	// Notices is the number of notice lines written.
	Notices int64 `json:"notices"`
	// RegisterRows is the number of register rows written (header excluded).
	RegisterRows int64 `json:"register_rows"`
	// Companies is the number of distinct companies (ACNs) in the register.
	Companies int64 `json:"companies"`
	// BadACNNotices counts notices whose ACN has a wrong check digit.
	BadACNNotices int64 `json:"bad_acn_notices"`
	// UnregisteredNotices counts notices naming a company the register does
	// not hold (an ACN outside it, or no ACN or ABN at all).
	UnregisteredNotices int64 `json:"unregistered_notices"`
	// DeregistrationNotices counts notices whose notice_purpose is
	// Deregistration.
	DeregistrationNotices int64 `json:"deregistration_notices"`
	// ReplacementNotices counts notices with a non-null replaces.
	ReplacementNotices int64 `json:"replacement_notices"`
}

// Files are the paths WriteFiles wrote and what they hold.
type Files struct {
	// Notices is the gzip-compressed JSON Lines notices file.
	Notices string `json:"notices"`
	// Register is the tab-separated company register file.
	Register string `json:"register"`
	// Summary counts what the files hold.
	Summary Summary `json:"summary"`
}

// check validates opts and fills defaults.
func (o Options) check() (Options, error) {
	if o.Notices < 0 {
		return o, errs.New(errs.InvalidParameter, "the number of notices is %d; give zero or more", o.Notices)
	}
	if o.Companies < 0 {
		return o, errs.New(errs.InvalidParameter, "the number of register rows is %d; give zero or more", o.Companies)
	}
	if o.Years == 0 {
		o.Years = DefaultYears
	}
	if o.Years < 1 || o.Years > 50 {
		return o, errs.New(errs.InvalidParameter, "years is %d; give a span of 1 to 50 years", o.Years)
	}
	if o.Now.IsZero() {
		return o, errs.New(errs.InvalidParameter, "Now is not set; pass the end of the publication window (the generator never reads the clock)")
	}
	if y := o.Now.Year(); y < 1990+o.Years || y > 9000 {
		return o, errs.New(errs.InvalidParameter, "Now is %s; give a time after %d and before 9000", o.Now.Format(time.RFC3339), 1990+o.Years)
	}
	return o, nil
}

// Generate writes opts.Notices notices to notices as JSON Lines, in
// ascending publication order, then the company register (opts.Companies
// rows) to register in the ASIC company dataset's tab-separated form. Both
// writers are buffered internally. Memory use is a few bytes per register
// company plus the notices in flight; nothing else is held.
func Generate(opts Options, notices io.Writer, register io.Writer) (Summary, error) {
	opts, err := opts.check()
	if err != nil {
		return Summary{}, err
	}
	g := newGenerator(opts)
	nw := bufio.NewWriterSize(notices, 1<<20)
	if err := g.writeNotices(nw); err != nil {
		return g.sum, fmt.Errorf("sample: writing notices: %w", err)
	}
	if err := nw.Flush(); err != nil {
		return g.sum, fmt.Errorf("sample: writing notices: %w", err)
	}
	rw := bufio.NewWriterSize(register, 1<<20)
	if err := g.writeRegister(rw); err != nil {
		return g.sum, fmt.Errorf("sample: writing the register: %w", err)
	}
	if err := rw.Flush(); err != nil {
		return g.sum, fmt.Errorf("sample: writing the register: %w", err)
	}
	return g.sum, nil
}

// WriteFiles generates the sample into dir (created if missing):
// dir/notices.jsonl.gz and dir/company_register.tsv. Files are written under
// temporary names and renamed when complete, so a failed run never leaves a
// truncated file under the final name.
func WriteFiles(opts Options, dir string) (Files, error) {
	if _, err := opts.check(); err != nil {
		return Files{}, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Files{}, fmt.Errorf("sample: cannot create the output directory: %w", err)
	}
	files := Files{Notices: filepath.Join(dir, NoticesFile), Register: filepath.Join(dir, RegisterFile)}
	nf, err := os.CreateTemp(dir, ".notices-*.tmp")
	if err != nil {
		return files, fmt.Errorf("sample: cannot write in %s: %w", dir, err)
	}
	defer os.Remove(nf.Name())
	defer nf.Close()
	rf, err := os.CreateTemp(dir, ".register-*.tmp")
	if err != nil {
		return files, fmt.Errorf("sample: cannot write in %s: %w", dir, err)
	}
	defer os.Remove(rf.Name())
	defer rf.Close()

	gz, err := gzip.NewWriterLevel(nil, gzip.BestSpeed)
	if err != nil {
		return files, err
	}
	aw := newAsyncWriter(gz, nf)
	sum, err := Generate(opts, aw, rf)
	if cerr := aw.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("sample: writing notices: %w", cerr)
	}
	if err != nil {
		return files, err
	}
	files.Summary = sum
	for _, f := range []*os.File{nf, rf} {
		if err := f.Chmod(0o644); err != nil {
			return files, fmt.Errorf("sample: writing %s: %w", f.Name(), err)
		}
		if err := f.Sync(); err != nil {
			return files, fmt.Errorf("sample: writing %s: %w", f.Name(), err)
		}
		if err := f.Close(); err != nil {
			return files, fmt.Errorf("sample: writing %s: %w", f.Name(), err)
		}
	}
	if err := os.Rename(nf.Name(), files.Notices); err != nil {
		return files, fmt.Errorf("sample: cannot rename the notices file into place: %w", err)
	}
	if err := os.Rename(rf.Name(), files.Register); err != nil {
		return files, fmt.Errorf("sample: cannot rename the register file into place: %w", err)
	}
	return files, nil
}
