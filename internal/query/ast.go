// Package query parses the `q` search grammar of API.md into a small syntax
// tree that every backend translates (SQLite FTS5, Elasticsearch). One parser
// serves all backends, so every backend accepts and rejects the same inputs.
//
// Grammar: words (implicit AND), "exact phrase", OR, NOT or a leading '-',
// parentheses, a trailing '*' for prefix (at least 2 characters before it).
// Words are tokenised and folded (lower case, Latin diacritics removed) by
// Parse exactly as SQLite FTS5's `unicode61 remove_diacritics 2` tokeniser
// folds the indexed text. At most MaxLength characters.
package query

// MaxLength is the longest accepted q, in characters.
const MaxLength = 500

// Node is one node of a parsed query.
type Node interface{ node() }

// Term is one word, lower-cased. Prefix is true for a trailing '*'.
type Term struct {
	Text   string
	Prefix bool
}

// Phrase is an exact sequence of lower-cased words, within one field.
// Prefix is true for a trailing '*' ("acme hold*"): the last word then
// matches as a prefix, like Term.Prefix.
type Phrase struct {
	Words  []string
	Prefix bool
}

// And matches when every child matches.
type And struct {
	Children []Node
}

// Or matches when any child matches.
type Or struct {
	Children []Node
}

// Not matches when its child does not.
type Not struct {
	Child Node
}

func (Term) node()   {}
func (Phrase) node() {}
func (And) node()    {}
func (Or) node()     {}
func (Not) node()    {}

// Deref returns n with a pointer node (*Term, *And, ...) replaced by its
// value, so translators need only switch on value nodes; a nil pointer is
// nil.
func Deref(n Node) Node { return deref(n) }
