package query

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// The tokeniser is SQLite FTS5's `unicode61 remove_diacritics 2`, the
// tokeniser the embedded store indexes notices with, so that a parsed query,
// its FTS5 rendering, the in-memory Match and the text the scale backend
// indexes (Fold) all see the tokens FTS5 sees:
//
//   - a token starts with a token character: a letter, a digit (Unicode L*,
//     N*), a private-use character (Co), or a code point SQLite's Unicode
//     tables leave unassigned; every other character separates tokens;
//   - inside a token, the combining diacritical marks that unicode61 treats
//     as diacritics (isDiacritic) continue the token and are removed; at a
//     token's start they separate, like every other mark;
//   - each character is lower-cased, and a Latin letter with diacritics is
//     folded to its ASCII base letter (é -> e, ǖ -> u). Letters of other
//     scripts keep their marks, as in unicode61.
//
// The rules are applied with Go's Unicode tables, which are newer than the
// ones SQLite was built with. Where the two disagree, SQLite's answer is in
// unicode61_table.go (unicode61Classes, unicode61Folds), generated from the
// SQLite that go.mod bundles by TestGenerateUnicode61Table; sqlite_test.go
// checks every code point against that SQLite. Invalid UTF-8 is out of
// scope: Go reads each invalid byte as U+FFFD (a separator), SQLite decodes
// some such sequences otherwise.

//go:generate env NOTICES_GENERATE_UNICODE61=1 go test -tags sqlite_fts5 -run ^TestGenerateUnicode61Table$ .

// isTokenRune reports whether r is a token character, one that starts or
// continues a token.
func isTokenRune(r rune) bool {
	if uint32(r) < latinEnd {
		return latinTokens[r]
	}
	return isTokenRuneSlow(r)
}

func isTokenRuneSlow(r rune) bool {
	if c, ok := findClass(r); ok {
		return c.token
	}
	return goIsTokenRune(r)
}

// goIsTokenRune is the token-character rule by Go's Unicode tables: a
// letter, a digit or a private-use character.
func goIsTokenRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsNumber(r) || unicode.Is(unicode.Co, r)
}

// isDiacritic reports whether r is one of the combining marks that SQLite's
// unicode61 tokeniser keeps inside a token (and removes when folding). The
// bit masks are those of sqlite3Fts5UnicodeIsdiacritic (U+0300..U+0331).
func isDiacritic(r rune) bool {
	const mask0, mask1 = 0x08029FDF, 0x000361F8
	switch {
	case r < 768 || r > 817:
		return false
	case r < 768+32:
		return mask0&(1<<(r-768)) != 0
	default:
		return mask1&(1<<(r-768-32)) != 0
	}
}

// latinEnd bounds the runes of latinFolds and latinTokens: ASCII, Latin-1
// Supplement, Latin Extended-A and -B, the non-ASCII letters of nearly
// every notice, so that they cost a lookup instead of a normalisation.
const latinEnd = 0x250

// latinFolds holds foldRune of every rune below latinEnd, and latinTokens
// isTokenRune.
var latinFolds, latinTokens = func() (f [latinEnd]rune, t [latinEnd]bool) {
	for r := range rune(latinEnd) {
		f[r], t[r] = foldRuneSlow(r), isTokenRuneSlow(r)
	}
	return f, t
}()

// foldRune lower-cases r and strips its diacritics. It returns -1 when r
// folds to nothing (a combining diacritic).
func foldRune(r rune) rune {
	if uint32(r) < latinEnd {
		return latinFolds[r]
	}
	return foldRuneSlow(r)
}

func foldRuneSlow(r rune) rune {
	if f, ok := findFold(r); ok {
		return r + f.delta
	}
	return goFoldRune(r)
}

// goFoldRune is the folding rule by Go's Unicode tables.
func goFoldRune(r rune) rune {
	if r < utf8.RuneSelf {
		if 'A' <= r && r <= 'Z' {
			return r + 'a' - 'A'
		}
		return r
	}
	if isDiacritic(r) {
		return -1
	}
	r = unicode.ToLower(unicode.ToUpper(r))
	if !unicode.Is(unicode.Latin, r) {
		return r
	}
	// A Latin letter whose canonical decomposition is an ASCII letter
	// followed only by combining marks folds to that ASCII letter.
	d := norm.NFD.String(string(r))
	base, size := utf8.DecodeRuneInString(d)
	if base >= utf8.RuneSelf || size == len(d) {
		return r
	}
	for _, m := range d[size:] {
		if !unicode.Is(unicode.Mn, m) {
			return r
		}
	}
	return base
}

// classRange says that SQLite classifies the code points lo..hi alike:
// as token characters or as separators.
type classRange struct {
	lo, hi rune
	token  bool
}

// foldRange says that SQLite folds each code point r of lo..hi (that is a
// token character or a diacritic) to r+delta.
type foldRange struct {
	lo, hi, delta rune
}

// findClass finds r in unicode61Classes (binary search).
func findClass(r rune) (classRange, bool) {
	lo, hi := 0, len(unicode61Classes)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		switch c := unicode61Classes[m]; {
		case r < c.lo:
			hi = m
		case r > c.hi:
			lo = m + 1
		default:
			return c, true
		}
	}
	return classRange{}, false
}

// findFold finds r in unicode61Folds (binary search).
func findFold(r rune) (foldRange, bool) {
	lo, hi := 0, len(unicode61Folds)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		switch f := unicode61Folds[m]; {
		case r < f.lo:
			hi = m
		case r > f.hi:
			lo = m + 1
		default:
			return f, true
		}
	}
	return foldRange{}, false
}

// span is one token of a text: its folded form and the rune offsets of its
// first character and of the character after its last one.
type span struct {
	text       string
	start, end int
}

// tokenSpans splits s into folded tokens with their rune positions.
func tokenSpans(s string) []span {
	var (
		out   []span
		b     strings.Builder
		in    bool
		start int
		pos   int
	)
	flush := func() {
		if in {
			out = append(out, span{text: b.String(), start: start, end: pos})
			b.Reset()
			in = false
		}
	}
	for _, r := range s {
		switch {
		case isTokenRune(r) || (in && isDiacritic(r)):
			if !in {
				in, start = true, pos
			}
			if f := foldRune(r); f >= 0 {
				b.WriteRune(f)
			}
		default:
			flush()
		}
		pos++
	}
	flush()
	return out
}

// tokens splits s into folded tokens, the way FTS5's unicode61 tokeniser
// with remove_diacritics 2 does.
func tokens(s string) []string {
	spans := tokenSpans(s)
	out := make([]string, len(spans))
	for i, sp := range spans {
		out[i] = sp.text
	}
	return out
}

// Fold returns s as its folded tokens joined by single spaces: the form a
// backend without the unicode61 tokeniser indexes (the Elasticsearch
// backend, whose analyzer splits the text at spaces only), so that it sees
// the same tokens Parse and FTS5 see.
func Fold(s string) string {
	return string(AppendFold(make([]byte, 0, len(s)), s))
}

// asciiFold maps an ASCII letter or digit to its folded byte (lower case)
// and every other ASCII byte, a separator, to 0.
var asciiFold = func() (t [utf8.RuneSelf]byte) {
	for c := byte('0'); c <= '9'; c++ {
		t[c] = c
	}
	for c := byte('a'); c <= 'z'; c++ {
		t[c], t[c-'a'+'A'] = c, c
	}
	return t
}()

// AppendFold appends Fold(s) to dst: tokens(s) joined by spaces, written
// in one pass (the scale ingester folds every notice's texts straight into
// the document it sends: this is its hot loop). Its bytes are ASCII
// letters, digits and spaces and the UTF-8 of folded letters and digits.
func AppendFold(dst []byte, s string) []byte {
	begin := len(dst)
	in := false
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			i++
			f := asciiFold[c]
			if f == 0 {
				in = false
				continue
			}
			if !in {
				if len(dst) > begin {
					dst = append(dst, ' ')
				}
				in = true
			}
			dst = append(dst, f)
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		if isTokenRune(r) || (in && isDiacritic(r)) {
			if !in {
				if len(dst) > begin {
					dst = append(dst, ' ')
				}
				in = true
			}
			if f := foldRune(r); f >= 0 {
				dst = utf8.AppendRune(dst, f)
			}
			continue
		}
		in = false
	}
	return dst
}

// Words splits s into its folded words (tokens), as Parse and the search
// index split text: the words a company name search looks for.
func Words(s string) []string { return tokens(s) }
