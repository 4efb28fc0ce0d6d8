//go:build sqlite_fts5

package query

import (
	"bytes"
	"database/sql"
	"fmt"
	"go/format"
	"os"
	"strings"
	"sync"
	"testing"
	"unicode"
	"unicode/utf8"
)

// A probe is what a tokeniser does with one code point r, read from the
// tokens of the text "a<r>b <r>x": whether r starts a token (<r>x is one
// token), whether it continues one (a<r>b is one token), and what r folds
// to inside a token ("" when it is dropped).
type probe struct {
	start, cont bool
	fold        string
}

// probeRunes is every code point a Go string can hold but U+0000 (where
// SQLite's text ends): U+0001..U+10FFFF without the surrogates.
func probeRunes() []rune {
	rs := make([]rune, 0, utf8.MaxRune)
	for r := rune(1); r <= utf8.MaxRune; r++ {
		if utf8.ValidRune(r) {
			rs = append(rs, r)
		}
	}
	return rs
}

// probesPerText is how many code points one probe text holds.
const probesPerText = 512

// probeTexts puts rs into probe texts of probesPerText code points each:
// "a<r>b <r>x" for each code point, separated by spaces.
func probeTexts(rs []rune) []string {
	var out []string
	var b strings.Builder
	for i, r := range rs {
		if i%probesPerText != 0 {
			b.WriteByte(' ')
		}
		b.WriteByte('a')
		b.WriteRune(r)
		b.WriteString("b ")
		b.WriteRune(r)
		b.WriteByte('x')
		if i%probesPerText == probesPerText-1 || i == len(rs)-1 {
			out = append(out, b.String())
			b.Reset()
		}
	}
	return out
}

// readProbes reads the probes of rs from toks, the tokens of the probe
// texts of rs one after the other.
func readProbes(rs []rune, toks []string) ([]probe, error) {
	out := make([]probe, len(rs))
	i := 0
	next := func() (string, bool) {
		if i >= len(toks) {
			return "", false
		}
		i++
		return toks[i-1], true
	}
	for k, r := range rs {
		var p probe
		t, ok := next()
		switch {
		case !ok:
			return nil, fmt.Errorf("U+%04X: the tokens end early", r)
		case t == "a":
			if t, ok = next(); !ok || t != "b" {
				return nil, fmt.Errorf("U+%04X: a<r>b gave a, then %q", r, t)
			}
		case len(t) >= 2 && t[0] == 'a' && t[len(t)-1] == 'b':
			p.cont, p.fold = true, t[1:len(t)-1]
		default:
			return nil, fmt.Errorf("U+%04X: a<r>b gave %q", r, t)
		}
		if t, ok = next(); !ok || !strings.HasSuffix(t, "x") {
			return nil, fmt.Errorf("U+%04X: <r>x gave %q", r, t)
		}
		switch {
		case t != "x":
			if !p.cont || t != p.fold+"x" {
				return nil, fmt.Errorf("U+%04X: <r>x gave %q, a<r>b %+v", r, t, p)
			}
			p.start = true
		case p.cont && p.fold == "" && !isDiacritic(r):
			// <r>x gives x whether r is a separator or a token character
			// that folds to nothing: only diacritics are known to be the
			// former.
			return nil, fmt.Errorf("U+%04X continues a token and folds to nothing, but is not a diacritic: cannot tell whether it starts one", r)
		}
		out[k] = p
	}
	if i != len(toks) {
		return nil, fmt.Errorf("%d tokens left over", len(toks)-i)
	}
	return out, nil
}

// goProbes reads the probes of rs from this package's tokens.
func goProbes(rs []rune) ([]probe, error) {
	var toks []string
	for _, s := range probeTexts(rs) {
		toks = append(toks, tokens(s)...)
	}
	return readProbes(rs, toks)
}

// sqliteProbeSet is the probes of every code point (probeRunes) through
// SQLite's unicode61 remove_diacritics 2, read once per test binary.
var sqliteProbeSet struct {
	once    sync.Once
	rs      []rune
	ps      []probe
	version string
	err     error
}

func sqliteProbes(t testing.TB) ([]rune, []probe, string) {
	t.Helper()
	p := &sqliteProbeSet
	p.once.Do(func() {
		p.rs = probeRunes()
		p.ps, p.version, p.err = runSQLiteProbes(p.rs)
	})
	if p.err != nil {
		t.Fatal(p.err)
	}
	return p.rs, p.ps, p.version
}

// runSQLiteProbes writes the probe texts of rs into an in-memory FTS5
// table tokenised as the embedded store's, reads its tokens back through
// fts5vocab and returns the probes and SQLite's version.
func runSQLiteProbes(rs []rune) ([]probe, string, error) {
	db, err := sql.Open("sqlite3", ":memory:")
	if err != nil {
		return nil, "", err
	}
	defer db.Close()
	db.SetMaxOpenConns(1) // one connection: one in-memory database
	var version string
	if err := db.QueryRow(`SELECT sqlite_version()`).Scan(&version); err != nil {
		return nil, "", err
	}
	for _, s := range []string{
		`CREATE VIRTUAL TABLE probe USING fts5(t, tokenize = 'unicode61 remove_diacritics 2')`,
		`CREATE VIRTUAL TABLE probe_vocab USING fts5vocab(probe, 'instance')`,
		`BEGIN`,
	} {
		if _, err := db.Exec(s); err != nil {
			return nil, "", fmt.Errorf("%s: %w", s, err)
		}
	}
	for i, s := range probeTexts(rs) {
		if _, err := db.Exec(`INSERT INTO probe(rowid, t) VALUES (?, ?)`, i+1, s); err != nil {
			return nil, "", err
		}
	}
	if _, err := db.Exec(`COMMIT`); err != nil {
		return nil, "", err
	}
	rows, err := db.Query(`SELECT term FROM probe_vocab ORDER BY doc, offset`)
	if err != nil {
		return nil, "", err
	}
	defer rows.Close()
	var toks []string
	for rows.Next() {
		var term string
		if err := rows.Scan(&term); err != nil {
			return nil, "", err
		}
		toks = append(toks, term)
	}
	if err := rows.Err(); err != nil {
		return nil, "", err
	}
	ps, err := readProbes(rs, toks)
	if err != nil {
		return nil, "", fmt.Errorf("unicode61: %w", err)
	}
	return ps, version, nil
}

// unicode61TableFile is the file TestGenerateUnicode61Table writes.
const unicode61TableFile = "unicode61_table.go"

// TestGenerateUnicode61Table derives unicode61_table.go from SQLite: the
// classes and folds of the code points where SQLite's unicode61 differs
// from the rules by Go's Unicode tables (goIsTokenRune, goFoldRune). With
// NOTICES_GENERATE_UNICODE61=1 it writes the file; otherwise it fails when
// the file is not what it would write.
func TestGenerateUnicode61Table(t *testing.T) {
	rs, ps, version := sqliteProbes(t)
	src, err := unicode61Table(rs, ps, version)
	if err != nil {
		t.Fatal(err)
	}
	if os.Getenv("NOTICES_GENERATE_UNICODE61") != "" {
		if err := os.WriteFile(unicode61TableFile, src, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	old, err := os.ReadFile(unicode61TableFile)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(old, src) {
		t.Errorf("%s is not what SQLite %s and Go's Unicode %s give; regenerate it: %s",
			unicode61TableFile, version, unicode.Version, generateCommand)
	}
}

const generateCommand = "NOTICES_GENERATE_UNICODE61=1 go test -tags sqlite_fts5 -run '^TestGenerateUnicode61Table$' ./internal/query/ (or go generate ./internal/query/)"

// unicode61Table writes the source of unicode61_table.go from the SQLite
// probes ps of rs.
//
// Classes: each range holds code points SQLite classifies alike, starts
// and ends at one Go's rule classifies otherwise, and may include between
// them code points on which the two agree (fewer ranges to search).
// Folds: likewise for the token characters and diacritics whose folded
// form differs; code points that are neither do not matter (foldRune is
// not used on them).
func unicode61Table(rs []rune, ps []probe, version string) ([]byte, error) {
	var (
		classes                  []classRange
		openClass                bool
		toToken, toSep, nClasses int
	)
	for k, r := range rs {
		p := ps[k]
		if p.cont != (p.start || isDiacritic(r)) {
			return nil, fmt.Errorf("U+%04X: SQLite continues a token with it (%v) but starts one (%v): the rule is token characters and diacritics", r, p.cont, p.start)
		}
		if openClass && classes[len(classes)-1].token != p.start {
			openClass = false
		}
		if p.start == goIsTokenRune(r) {
			continue
		}
		nClasses++
		if p.start {
			toToken++
		} else {
			toSep++
		}
		if openClass {
			classes[len(classes)-1].hi = r
		} else {
			classes = append(classes, classRange{r, r, p.start})
			openClass = true
		}
	}
	var (
		folds    []foldRange
		openFold bool
		nFolds   int
	)
	for k, r := range rs {
		p := ps[k]
		if !p.cont {
			continue
		}
		if p.fold == "" {
			if goFoldRune(r) >= 0 {
				return nil, fmt.Errorf("U+%04X: SQLite drops it, Go's rule folds it: a fold range cannot say so", r)
			}
			openFold = false
			continue
		}
		f, size := utf8.DecodeRuneInString(p.fold)
		if size != len(p.fold) {
			return nil, fmt.Errorf("U+%04X folds to %q, not one character", r, p.fold)
		}
		if openFold && r+folds[len(folds)-1].delta != f {
			openFold = false
		}
		if goFoldRune(r) == f {
			continue
		}
		nFolds++
		if openFold {
			folds[len(folds)-1].hi = r
		} else {
			folds = append(folds, foldRange{r, r, f - r})
			openFold = true
		}
	}

	var b bytes.Buffer
	fmt.Fprintf(&b, `// Code generated by TestGenerateUnicode61Table; DO NOT EDIT.
//
// Regenerate with:
//
//	%s
//
// from SQLite %s (github.com/mattn/go-sqlite3 in go.mod) and Go's Unicode
// %s tables. The test writes every code point (but U+0000 and the
// surrogates) into an in-memory FTS5 table tokenised with unicode61
// remove_diacritics 2, reads the tokens back through fts5vocab, and lists
// where they differ from the rules by Go's tables (goIsTokenRune,
// goFoldRune in token.go). Without NOTICES_GENERATE_UNICODE61 the test
// fails when this file is out of date.

package query

// unicode61Classes: %d code points whose class differs, in %d ranges:
// %d that SQLite treats as token characters though Go's tables do not
// (mostly code points unassigned in SQLite's tables, which unicode61 counts
// as token characters, and characters assigned since in categories that
// are not letters or digits) and %d that it treats as separators though
// Go's tables say letter or digit (a category changed since).
var unicode61Classes = [...]classRange{
`, generateCommand, version, unicode.Version, nClasses, len(classes), toToken, toSep)
	for _, c := range classes {
		fmt.Fprintf(&b, "\t{%#04x, %#04x, %v},\n", c.lo, c.hi, c.token)
	}
	fmt.Fprintf(&b, `}

// unicode61Folds: %d token characters whose folded form differs, in %d
// ranges: letters that Go's rule lower-cases or strips of diacritics and
// SQLite does not (case pairs added to Unicode since, lower-case letters
// whose upper-case form lower-cases to another letter, letters outside
// SQLite's diacritic table). A range may include code points on which the
// two agree.
var unicode61Folds = [...]foldRange{
`, nFolds, len(folds))
	for _, f := range folds {
		fmt.Fprintf(&b, "\t{%#04x, %#04x, %d},\n", f.lo, f.hi, f.delta)
	}
	b.WriteString("}\n")
	return format.Source(b.Bytes())
}
