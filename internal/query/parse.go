package query

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/noticesd/noticesd/internal/errs"
)

// Parse parses q, the search grammar of API.md, into a syntax tree.
//
//   - Words are ANDed: `smith jones`. `AND` (upper case) may be written.
//   - `"exact phrase"` matches consecutive words.
//   - `OR` (upper case; `or` is a word) binds loosest: `a b OR c` is (a b) OR c.
//   - `NOT a` or `-a` (the '-' glued to a word, phrase or group) excludes;
//     it binds tightest. A query of only exclusions, such as `-foo`, is valid
//     and matches every notice without foo.
//   - Parentheses group: `(a OR b) c`.
//   - A trailing `*` makes a prefix: `liquid*`, with at least 2 letters or
//     digits before it. In a phrase it applies to the last word: `"acme hold*"`.
//
// Words are split into tokens the way the search index splits text (any
// character that is not a letter or digit separates tokens), lower-cased and
// stripped of Latin diacritics: `Café` is cafe, `smith-jones` is the phrase
// "smith jones", and a word of punctuation only, such as `&`, is ignored.
//
// Blank input gives (nil, nil): no text condition. Every other failure is an
// *errs.Error with code invalid_query whose message gives the character
// position (counting from 1) of the problem and how to fix it. The returned
// tree is simplified: And and Or never directly contain their own kind or a
// single child, and double negations are removed.
func Parse(q string) (Node, error) {
	if strings.TrimSpace(q) == "" {
		return nil, nil
	}
	if n := utf8.RuneCountInString(q); n > MaxLength {
		return nil, errs.New(errs.InvalidQuery,
			"q is %d characters long; the maximum is %d: shorten the query", n, MaxLength)
	}
	ls, err := lex(q)
	if err != nil {
		return nil, err
	}
	p := parser{ls: ls}
	n, err := p.or()
	if err != nil {
		return nil, err
	}
	if p.i < len(ls) {
		// Unreachable while lex balances parentheses; kept as a guard.
		l := ls[p.i]
		return nil, errs.New(errs.InvalidQuery,
			"q has an unexpected %s at character %d; remove it", l.describe(), l.pos)
	}
	if n == nil {
		return nil, errs.New(errs.InvalidQuery,
			"q holds no searchable word: every word is punctuation only; search for letters or digits")
	}
	return n, nil
}

// parser is a recursive-descent parser over the lexemes of q:
//
//	or    = and { "OR" and }
//	and   = unary { ["AND"] unary }
//	unary = ("NOT" | "-") unary | primary
//	primary = word | phrase | "(" or ")"
//
// A word or phrase of punctuation only yields a nil node, which the
// enclosing rules drop.
type parser struct {
	ls []lexeme
	i  int
}

// peek returns the current lexeme; ok is false at the end of q.
func (p *parser) peek() (lexeme, bool) {
	if p.i < len(p.ls) {
		return p.ls[p.i], true
	}
	return lexeme{}, false
}

// atOperand reports whether the current lexeme can start an operand.
func (p *parser) atOperand() bool {
	l, ok := p.peek()
	if !ok {
		return false
	}
	switch l.kind {
	case kWord, kPhrase, kLParen, kNot:
		return true
	}
	return false
}

// dangling is the error for an operator op with no operand after it.
func (p *parser) dangling(op lexeme) error {
	next, ok := p.peek()
	if !ok {
		return errs.New(errs.InvalidQuery,
			"q has a dangling operator: %s at character %d must be followed by a word, phrase or group, but the query ends there",
			op.describe(), op.pos)
	}
	return errs.New(errs.InvalidQuery,
		"q has a dangling operator: %s at character %d must be followed by a word, phrase or group, not by %s at character %d",
		op.describe(), op.pos, next.describe(), next.pos)
}

func (p *parser) or() (Node, error) {
	var children []Node
	for {
		n, err := p.and()
		if err != nil {
			return nil, err
		}
		children = append(children, n)
		l, ok := p.peek()
		if !ok || l.kind != kOr {
			return simplify(Or{Children: children}), nil
		}
		p.i++
		if !p.atOperand() {
			return nil, p.dangling(l)
		}
	}
}

func (p *parser) and() (Node, error) {
	if !p.atOperand() {
		l, ok := p.peek()
		if ok && (l.kind == kOr || l.kind == kAnd) {
			return nil, errs.New(errs.InvalidQuery,
				"q has a dangling operator: %s at character %d has no word, phrase or group before it",
				l.describe(), l.pos)
		}
		// Unreachable: every caller checks atOperand first.
		return nil, errs.New(errs.InvalidQuery, "q is missing a word, phrase or group at character %d", p.posHere())
	}
	var children []Node
	for {
		n, err := p.unary()
		if err != nil {
			return nil, err
		}
		children = append(children, n)
		if l, ok := p.peek(); ok && l.kind == kAnd {
			p.i++
			if !p.atOperand() {
				return nil, p.dangling(l)
			}
			continue
		}
		if !p.atOperand() {
			return simplify(And{Children: children}), nil
		}
	}
}

// posHere is the character position of the current lexeme, or just past
// the last one at the end of q.
func (p *parser) posHere() int {
	if l, ok := p.peek(); ok {
		return l.pos
	}
	if len(p.ls) == 0 {
		return 1
	}
	last := p.ls[len(p.ls)-1]
	return last.pos + utf8.RuneCountInString(last.text)
}

func (p *parser) unary() (Node, error) {
	l, _ := p.peek()
	if l.kind != kNot {
		return p.primary()
	}
	p.i++
	if !p.atOperand() {
		return nil, p.dangling(l)
	}
	child, err := p.unary()
	if err != nil || child == nil {
		return nil, err
	}
	if inner, ok := child.(Not); ok {
		return inner.Child, nil
	}
	return Not{Child: child}, nil
}

func (p *parser) primary() (Node, error) {
	l, _ := p.peek()
	p.i++
	switch l.kind {
	case kWord:
		return leaf(l.text, l.pos)
	case kPhrase:
		if strings.TrimSpace(l.text) == "" {
			return nil, errs.New(errs.InvalidQuery,
				`q has an empty phrase at character %d; put words between the quotes or remove them`, l.pos)
		}
		return leaf(l.text, l.pos+1)
	default: // kLParen: atOperand admits nothing else here
		if next, ok := p.peek(); ok && next.kind == kRParen {
			return nil, errs.New(errs.InvalidQuery,
				`q has an empty group "()" at character %d; put a search term inside or remove the parentheses`, l.pos)
		}
		n, err := p.or()
		if err != nil {
			return nil, err
		}
		if next, ok := p.peek(); !ok || next.kind != kRParen {
			// Unreachable while lex balances parentheses; kept as a guard.
			return nil, errs.New(errs.InvalidQuery,
				`q has unbalanced parentheses: the "(" at character %d is never closed; add a ")"`, l.pos)
		}
		p.i++
		return n, nil
	}
}

// leaf turns the text of a word or phrase, whose first character is at
// position pos, into a Term, a Phrase or nil (punctuation only). A trailing
// '*' makes the last token a prefix.
func leaf(text string, pos int) (Node, error) {
	rs := []rune(text)
	prefix := false
	for j, r := range rs {
		if r != '*' {
			continue
		}
		if j != len(rs)-1 {
			return nil, errs.New(errs.InvalidQuery,
				`q has a misplaced "*" at character %d in %s; a * may only end a word, as in liquid*`,
				pos+j, quoteForMessage(text))
		}
		prefix = true
	}
	body := rs
	if prefix {
		body = rs[:len(rs)-1]
		star := pos + len(rs) - 1
		spans := tokenSpans(string(body))
		if len(spans) == 0 {
			return nil, errs.New(errs.InvalidQuery,
				`q has a bare "*" at character %d; put at least 2 letters or digits directly before it, as in liquid*, or for a phrase inside the quotes, as in "acme hold*"`, star)
		}
		last := spans[len(spans)-1]
		if last.end != len(body) {
			return nil, errs.New(errs.InvalidQuery,
				`q has a misplaced "*" at character %d in %s; a * must directly follow a letter or digit, as in liquid*`,
				star, quoteForMessage(text))
		}
		if utf8.RuneCountInString(last.text) < 2 {
			return nil, errs.New(errs.InvalidQuery,
				`q has a prefix that is too short at character %d: %s needs at least 2 letters or digits before the *, as in liquid*`,
				pos+last.start, quoteForMessage(string(body[last.start:])+"*"))
		}
	}
	words := tokens(string(body))
	switch len(words) {
	case 0:
		return nil, nil
	case 1:
		return Term{Text: words[0], Prefix: prefix}, nil
	default:
		return Phrase{Words: words, Prefix: prefix}, nil
	}
}

// simplify flattens nested And/Or of the same kind, drops nil children and
// collapses a group of one child to the child. It returns nil for no child.
func simplify(n Node) Node {
	var in []Node
	switch g := n.(type) {
	case And:
		in = g.Children
	case Or:
		in = g.Children
	default:
		return n
	}
	var out []Node
	for _, c := range in {
		switch c := c.(type) {
		case nil:
		case And:
			if _, ok := n.(And); ok {
				out = append(out, c.Children...)
				continue
			}
			out = append(out, c)
		case Or:
			if _, ok := n.(Or); ok {
				out = append(out, c.Children...)
				continue
			}
			out = append(out, c)
		default:
			out = append(out, c)
		}
	}
	switch {
	case len(out) == 0:
		return nil
	case len(out) == 1:
		return out[0]
	}
	if _, ok := n.(And); ok {
		return And{Children: out}
	}
	return Or{Children: out}
}

// quoteForMessage quotes a piece of q for an error message.
func quoteForMessage(s string) string {
	return strconv.Quote(s)
}
