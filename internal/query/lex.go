package query

import (
	"unicode"

	"github.com/noticesd/noticesd/internal/errs"
)

// kind is the kind of a lexical token of q.
type kind int

const (
	kWord   kind = iota // a bare word, possibly ending in '*'
	kPhrase             // a quoted phrase; text is what lies between the quotes
	kLParen             // (
	kRParen             // )
	kNot                // NOT, or a '-' glued to the operand that follows it
	kAnd                // AND
	kOr                 // OR
)

// lexeme is one lexical token of q. pos is the 1-based character (rune)
// position of its first character, used in error messages.
type lexeme struct {
	kind kind
	text string
	pos  int
}

// describe names the lexeme for an error message.
func (l lexeme) describe() string {
	switch l.kind {
	case kNot:
		if l.text == "-" {
			return `"-"`
		}
		return "NOT"
	case kAnd:
		return "AND"
	case kOr:
		return "OR"
	case kLParen:
		return `"("`
	case kRParen:
		return `")"`
	case kPhrase:
		return "the phrase"
	default:
		return "the word " + quoteForMessage(l.text)
	}
}

// isDelimiter reports whether r ends a bare word.
func isDelimiter(r rune) bool {
	return unicode.IsSpace(r) || r == '(' || r == ')' || r == '"'
}

// lex splits q into lexemes. It reports unclosed quotes, a '-' not glued to
// an operand, and unbalanced parentheses.
func lex(q string) ([]lexeme, error) {
	rs := []rune(q)
	var out []lexeme
	glued := false // the previous lexeme was a '-' glued to this one
	for i := 0; i < len(rs); {
		r := rs[i]
		pos := i + 1
		switch {
		case unicode.IsSpace(r):
			i++
			continue
		case r == '(':
			out = append(out, lexeme{kind: kLParen, text: "(", pos: pos})
			i++
		case r == ')':
			out = append(out, lexeme{kind: kRParen, text: ")", pos: pos})
			i++
		case r == '"':
			end := i + 1
			for end < len(rs) && rs[end] != '"' {
				end++
			}
			if end == len(rs) {
				return nil, errs.New(errs.InvalidQuery,
					`q has an unbalanced quote: the " at character %d is never closed; add a closing " or remove it`, pos)
			}
			out = append(out, lexeme{kind: kPhrase, text: string(rs[i+1 : end]), pos: pos})
			i = end + 1
		case r == '-':
			if i+1 == len(rs) || unicode.IsSpace(rs[i+1]) || rs[i+1] == ')' {
				return nil, errs.New(errs.InvalidQuery,
					`q has a dangling operator: the "-" at character %d must be directly followed (no space) by the word, phrase or group to exclude`, pos)
			}
			out = append(out, lexeme{kind: kNot, text: "-", pos: pos})
			i++
			// The operand is glued to the '-', so it is never a keyword:
			// "-OR" excludes the word "or". "--a" is NOT NOT a.
			glued = true
			continue
		default:
			end := i
			for end < len(rs) && !isDelimiter(rs[end]) {
				end++
			}
			w := string(rs[i:end])
			k := kWord
			if !glued {
				switch w {
				case "OR":
					k = kOr
				case "AND":
					k = kAnd
				case "NOT":
					k = kNot
				}
			}
			out = append(out, lexeme{kind: k, text: w, pos: pos})
			i = end
		}
		glued = false
	}
	return out, checkParens(out)
}

// checkParens reports the first parenthesis that has no partner.
func checkParens(ls []lexeme) error {
	var open []int
	for _, l := range ls {
		switch l.kind {
		case kLParen:
			open = append(open, l.pos)
		case kRParen:
			if len(open) == 0 {
				return errs.New(errs.InvalidQuery,
					`q has unbalanced parentheses: the ")" at character %d has no matching "("; remove it or add a "(" before it`, l.pos)
			}
			open = open[:len(open)-1]
		}
	}
	if len(open) > 0 {
		return errs.New(errs.InvalidQuery,
			`q has unbalanced parentheses: the "(" at character %d is never closed; add a ")" after the group or remove the "("`, open[len(open)-1])
	}
	return nil
}
