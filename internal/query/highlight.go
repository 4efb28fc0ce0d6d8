package query

import (
	"html"
	"strings"
	"unicode/utf8"
)

// The fragment rule of a search result's highlight (docs/api.md,
// "Highlights"). Both backends answer it from this one function over the
// stored text, rather than from their engines' highlighters (FTS5's
// snippet() and Elasticsearch's highlighter count, cut and escape
// differently), so the fragments are the same bytes on both.
const (
	// MaxFragments is the most fragments one text gives.
	MaxFragments = 3
	// FragmentWords is the most words (tokens) one fragment holds.
	FragmentWords = 20
	// LeadWords is how many words a fragment shows before the match that
	// opens it, when the text (and the previous fragment) leave room.
	LeadWords = 5
	// MarkOpen and MarkClose wrap each matched word.
	MarkOpen, MarkClose = "<mark>", "</mark>"
	// Ellipsis begins a fragment that does not begin at the text's first
	// word and ends one that does not end at its last.
	Ellipsis = "…"
)

// Highlight returns the fragments of text around the words n looks for,
// as HTML: the text escaped (& < > " ' as html.EscapeString), each matched
// word wrapped in <mark>…</mark>. A word matches when its folded form (the
// tokeniser of Parse) equals a word of n outside any NOT, or begins with a
// prefix word; the words of a phrase match one by one. The first fragment
// opens at the first matched word, LeadWords words before it (fewer at the
// start of the text), and holds up to FragmentWords words; each next one
// opens the same way at the first match after the previous fragment, never
// overlapping it; at most MaxFragments. A fragment is the text from its
// first word's first byte to its last word's last byte, with Ellipsis
// before it unless it starts at the text's first word and after it unless
// it ends at the last. A fragment holding the first word starts at the
// text's first byte, and one holding the last word ends at its last byte,
// so a short text is given whole. No match (or a nil n): an empty, non-nil slice.
func Highlight(n Node, text string) []string {
	out := []string{}
	words := highlightWords(n, nil)
	if len(words) == 0 {
		return out
	}
	toks, folded := byteSpans(text)
	matched := make([]bool, len(toks))
	found := false
	for i, t := range toks {
		w := folded[t.fold:t.foldEnd]
		for _, q := range words {
			if q.Text != "" && (w == q.Text || (q.Prefix && strings.HasPrefix(w, q.Text))) {
				matched[i], found = true, true
				break
			}
		}
	}
	if !found {
		return out
	}
	next := 0 // the first token a new fragment may hold
	for i := 0; i < len(toks) && len(out) < MaxFragments; i++ {
		if !matched[i] || i < next {
			continue
		}
		first := max(i-LeadWords, next)
		last := min(first+FragmentWords, len(toks)) - 1
		out = append(out, fragment(text, toks, matched, first, last))
		next = last + 1
		i = last
	}
	return out
}

// fragment renders tokens first..last of text.
func fragment(text string, toks []byteSpan, matched []bool, first, last int) string {
	var b strings.Builder
	if first > 0 {
		b.WriteString(Ellipsis)
	}
	at := toks[first].start
	if first == 0 {
		at = 0
	}
	for i := first; i <= last; i++ {
		if !matched[i] {
			continue
		}
		b.WriteString(html.EscapeString(text[at:toks[i].start]))
		b.WriteString(MarkOpen)
		b.WriteString(html.EscapeString(text[toks[i].start:toks[i].end]))
		b.WriteString(MarkClose)
		at = toks[i].end
	}
	end := toks[last].end
	if last == len(toks)-1 {
		end = len(text)
	}
	b.WriteString(html.EscapeString(text[at:end]))
	if last < len(toks)-1 {
		b.WriteString(Ellipsis)
	}
	return b.String()
}

// highlightWords appends the words n looks for outside any NOT: each
// Term, and each word of each Phrase (its last a prefix when the phrase's
// is).
func highlightWords(n Node, dst []Term) []Term {
	switch n := deref(n).(type) {
	case Term:
		return append(dst, n)
	case Phrase:
		for i, w := range n.Words {
			dst = append(dst, Term{Text: w, Prefix: n.Prefix && i == len(n.Words)-1})
		}
	case And:
		for _, c := range n.Children {
			dst = highlightWords(c, dst)
		}
	case Or:
		for _, c := range n.Children {
			dst = highlightWords(c, dst)
		}
	}
	return dst
}

// byteSpan is one token of a text: the byte offsets of its first
// character and of the byte after its last, and those of its folded form
// in the folded buffer byteSpans returns.
type byteSpan struct {
	start, end    int
	fold, foldEnd int
}

// byteSpans splits s into tokens exactly as tokenSpans does (the same
// token characters, diacritics and folding), with byte offsets, and
// returns the folded tokens concatenated.
func byteSpans(s string) ([]byteSpan, string) {
	var (
		out    []byteSpan
		folded = make([]byte, 0, len(s))
		in     bool
		cur    byteSpan
	)
	out = make([]byteSpan, 0, len(s)/6)
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			// ASCII: a letter or digit (folded by asciiFold) or a separator.
			if f := asciiFold[c]; f != 0 {
				if !in {
					in = true
					cur = byteSpan{start: i, fold: len(folded)}
				}
				folded = append(folded, f)
				i++
				cur.end, cur.foldEnd = i, len(folded)
				continue
			}
			if in {
				out = append(out, cur)
				in = false
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if isTokenRune(r) || (in && isDiacritic(r)) {
			if !in {
				in = true
				cur = byteSpan{start: i, fold: len(folded)}
			}
			if f := foldRune(r); f >= 0 {
				folded = utf8.AppendRune(folded, f)
			}
			i += size
			cur.end, cur.foldEnd = i, len(folded)
			continue
		}
		if in {
			out = append(out, cur)
			in = false
		}
		i += size
	}
	if in {
		out = append(out, cur)
	}
	return out, string(folded)
}
