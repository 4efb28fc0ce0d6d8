package query

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// The tokeniser mirrors SQLite FTS5's `unicode61 remove_diacritics 2`, the
// tokeniser the embedded store indexes notices with, so that a parsed query,
// its FTS5 rendering and the in-memory Match all see the same tokens:
//
//   - a token starts with a letter, a digit (Unicode L*, N*) or a private-use
//     character (Co); every other character separates tokens;
//   - inside a token, the combining diacritical marks that unicode61 treats
//     as diacritics continue the token and are removed;
//   - each character is lower-cased, and a Latin letter with diacritics is
//     folded to its ASCII base letter (é -> e, ǖ -> u). Letters of other
//     scripts keep their marks, as in unicode61.
//
// Go's Unicode tables are newer than SQLite's, so characters assigned in
// recent Unicode versions may be classified differently; sqlite_test.go
// checks agreement over the Latin, Greek and Cyrillic blocks.

// isTokenRune reports whether r is a token character: a letter, a digit or a
// private-use character.
func isTokenRune(r rune) bool {
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

// foldExceptions are the characters whose unicode61 folding differs from
// the general rule below (found by sqlite_test.go): dotless i has no simple
// case folding, and unicode61 keeps the a with dot above and macron.
var foldExceptions = map[rune]rune{
	'\u0131': '\u0131', // ı
	'\u01E0': '\u01E1', // Ǡ -> ǡ
	'\u01E1': '\u01E1', // ǡ
}

// latinFolds holds foldRune of every rune below U+0250 (ASCII, Latin-1
// Supplement, Latin Extended-A and -B), the non-ASCII letters of nearly
// every notice, so that folding them costs a lookup instead of a
// normalisation.
var latinFolds = func() (t [0x250]rune) {
	for r := range t {
		t[r] = foldRuneSlow(rune(r))
	}
	return t
}()

// foldRune lower-cases r and strips its diacritics. It returns -1 when r
// folds to nothing (a combining diacritic).
func foldRune(r rune) rune {
	if r >= 0 && r < rune(len(latinFolds)) {
		return latinFolds[r]
	}
	return foldRuneSlow(r)
}

func foldRuneSlow(r rune) rune {
	if r < utf8.RuneSelf {
		if 'A' <= r && r <= 'Z' {
			return r + 'a' - 'A'
		}
		return r
	}
	if isDiacritic(r) {
		return -1
	}
	if f, ok := foldExceptions[r]; ok {
		return f
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
// backend), so that its standard analyzer sees the same tokens Parse and
// FTS5 see.
//
// It is tokens(s) joined by spaces, written in one pass into one buffer
// (the scale ingester folds every notice's texts: this is its hot loop).
func Fold(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	in := false
	start := func() {
		if !in {
			if b.Len() > 0 {
				b.WriteByte(' ')
			}
			in = true
		}
	}
	for _, r := range s {
		if r < utf8.RuneSelf {
			switch {
			case 'a' <= r && r <= 'z', '0' <= r && r <= '9':
				start()
				b.WriteByte(byte(r))
			case 'A' <= r && r <= 'Z':
				start()
				b.WriteByte(byte(r + 'a' - 'A'))
			default:
				in = false
			}
			continue
		}
		if isTokenRune(r) || (in && isDiacritic(r)) {
			start()
			if f := foldRune(r); f >= 0 {
				b.WriteRune(f)
			}
			continue
		}
		in = false
	}
	return b.String()
}
