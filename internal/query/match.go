package query

import "strings"

// Doc is a document's searchable text, tokenised once (same tokenisation and
// folding as Parse / FTS5 unicode61 remove_diacritics 2). Each field is kept
// apart, as FTS5 keeps columns apart: a phrase never spans two fields.
type Doc struct {
	fields [][]string
	words  map[string]struct{}
}

// NewDoc tokenises the given fields (for a notice: company name, notice
// type, text, practitioner names and firms, one field each, in the same
// split as the FTS5 table's columns).
func NewDoc(fields ...string) *Doc {
	d := &Doc{fields: make([][]string, 0, len(fields)), words: map[string]struct{}{}}
	for _, f := range fields {
		ts := tokens(f)
		d.fields = append(d.fields, ts)
		for _, t := range ts {
			d.words[t] = struct{}{}
		}
	}
	return d
}

// Match reports whether n matches d: Term = some token equals Text (or has it
// as prefix when Prefix); Phrase = the words appear consecutively within one
// field; And/Or/Not as usual. A nil n matches everything. It agrees with
// SQL (and FTS5, where that is ok) over the same text; an empty Term or
// Phrase, an empty Or and unknown nodes match nothing, an empty And
// everything. A nil d is a document without text.
func Match(n Node, d *Doc) bool {
	if d == nil {
		d = &Doc{}
	}
	return d.match(n)
}

func (d *Doc) match(n Node) bool {
	switch n := deref(n).(type) {
	case nil:
		return true
	case Term:
		return d.hasTerm(n)
	case Phrase:
		return d.hasPhrase(n)
	case And:
		for _, c := range n.Children {
			if !d.match(c) {
				return false
			}
		}
		return true
	case Or:
		for _, c := range n.Children {
			if d.match(c) {
				return true
			}
		}
		return false
	case Not:
		return !d.match(n.Child)
	default:
		return false
	}
}

func (d *Doc) hasTerm(t Term) bool {
	if t.Text == "" {
		return false
	}
	if !t.Prefix {
		_, ok := d.words[t.Text]
		return ok
	}
	for w := range d.words {
		if strings.HasPrefix(w, t.Text) {
			return true
		}
	}
	return false
}

func (d *Doc) hasPhrase(p Phrase) bool {
	if len(p.Words) == 0 {
		return false
	}
	last := len(p.Words) - 1
	for _, f := range d.fields {
	start:
		for i := 0; i+last < len(f); i++ {
			for j, w := range p.Words {
				if j == last && p.Prefix {
					if !strings.HasPrefix(f[i+j], w) {
						continue start
					}
				} else if f[i+j] != w {
					continue start
				}
			}
			return true
		}
	}
	return false
}
