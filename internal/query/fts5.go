package query

import (
	"strings"
)

// FTS5 renders n as an SQLite FTS5 MATCH expression. Every token is
// double-quoted, so no word of q is ever read as FTS5 syntax; a prefix is
// "abc"*, a phrase "a b", and And/Or use explicit parentheses.
//
// FTS5's NOT is binary (a NOT b), so an And with negated children renders as
// (positives) NOT (neg1 OR neg2 ...). ok is false when the tree cannot be
// expressed that way: a negation with no positive sibling (`-foo` alone,
// `a OR -b`), an empty And/Or, or an empty Term/Phrase. A nil n is not
// expressible either (it matches everything). Use SQL for those.
func FTS5(n Node) (expr string, ok bool) {
	return render(n, true)
}

// render renders n; top leaves a compound expression unparenthesised.
func render(n Node, top bool) (string, bool) {
	wrap := func(s string) string {
		if top {
			return s
		}
		return "(" + s + ")"
	}
	switch n := deref(n).(type) {
	case Term:
		if n.Text == "" {
			return "", false
		}
		return quoteFTS5(n.Text, n.Prefix), true
	case Phrase:
		if len(n.Words) == 0 {
			return "", false
		}
		return quoteFTS5(strings.Join(n.Words, " "), n.Prefix), true
	case And:
		pos, neg := splitNegations(n.Children)
		if len(pos) == 0 {
			return "", false
		}
		ps, ok := renderAll(pos, " AND ")
		if !ok {
			return "", false
		}
		if len(neg) == 0 {
			if len(pos) == 1 {
				return ps, true
			}
			return wrap(ps), true
		}
		ns, ok := renderAll(neg, " OR ")
		if !ok {
			return "", false
		}
		if len(pos) > 1 {
			ps = "(" + ps + ")"
		}
		if len(neg) > 1 {
			ns = "(" + ns + ")"
		}
		return wrap(ps + " NOT " + ns), true
	case Or:
		if len(n.Children) == 0 {
			return "", false
		}
		s, ok := renderAll(n.Children, " OR ")
		if !ok {
			return "", false
		}
		if len(n.Children) == 1 {
			return s, true
		}
		return wrap(s), true
	case Not:
		// Not(Not(x)) is x; a lone negation has no FTS5 form.
		if inner, ok := deref(n.Child).(Not); ok {
			return render(inner.Child, top)
		}
		return "", false
	default:
		return "", false
	}
}

// renderAll renders each node as an operand and joins them with sep.
func renderAll(ns []Node, sep string) (string, bool) {
	parts := make([]string, len(ns))
	for i, c := range ns {
		s, ok := render(c, false)
		if !ok {
			return "", false
		}
		parts[i] = s
	}
	return strings.Join(parts, sep), true
}

// splitNegations splits the children of an And into positive children and
// the operands of negated ones. Double negations count as positive.
func splitNegations(children []Node) (pos, neg []Node) {
	for _, c := range children {
		c = deref(c)
		negated := false
		for {
			not, ok := c.(Not)
			if !ok {
				break
			}
			negated = !negated
			c = deref(not.Child)
		}
		if negated {
			neg = append(neg, c)
		} else {
			pos = append(pos, c)
		}
	}
	return pos, neg
}

// quoteFTS5 quotes s as an FTS5 string, doubling embedded quotes, with a
// trailing * for a prefix.
func quoteFTS5(s string, prefix bool) string {
	q := `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
	if prefix {
		q += "*"
	}
	return q
}

// deref turns pointer nodes (*Term, *And, ...) into values, so hand-built
// trees of either form render the same. A nil pointer becomes nil.
func deref(n Node) Node {
	switch p := n.(type) {
	case *Term:
		if p != nil {
			return *p
		}
	case *Phrase:
		if p != nil {
			return *p
		}
	case *And:
		if p != nil {
			return *p
		}
	case *Or:
		if p != nil {
			return *p
		}
	case *Not:
		if p != nil {
			return *p
		}
	default:
		return n
	}
	return nil
}

// SQL renders n as a boolean SQL expression over the column seq (the
// notices rowid), valid for every tree. Each largest FTS5-expressible part
// becomes `seq IN (SELECT rowid FROM <table> WHERE <table> MATCH ?)` with its
// FTS5 expression in args; the rest is SQL AND, OR and NOT. table is the
// FTS5 table's name and is written into the SQL as given: pass a constant.
//
// A nil n renders as "1" (matches everything); an empty Or, Term or Phrase
// as "0" (matches nothing), an empty And as "1".
func SQL(n Node, table string) (where string, args []any) {
	b := sqlBuilder{table: table}
	where = b.node(n)
	return where, b.args
}

// sqlBuilder accumulates the arguments of an SQL rendering.
type sqlBuilder struct {
	table string
	args  []any
}

// match renders a leaf that FTS5 evaluates.
func (b *sqlBuilder) match(expr string) string {
	b.args = append(b.args, expr)
	return "seq IN (SELECT rowid FROM " + b.table + " WHERE " + b.table + " MATCH ?)"
}

func (b *sqlBuilder) node(n Node) string {
	n = deref(n)
	if n == nil {
		return "1"
	}
	if expr, ok := FTS5(n); ok {
		return b.match(expr)
	}
	switch n := n.(type) {
	case And:
		if len(n.Children) == 0 {
			return "1"
		}
		// The children FTS5 can take together (positives and negated
		// positives) form one MATCH when at least one is positive.
		var fts, rest []Node
		for _, c := range n.Children {
			if expressibleInAnd(c) {
				fts = append(fts, c)
			} else {
				rest = append(rest, c)
			}
		}
		var parts []string
		if expr, ok := FTS5(And{Children: fts}); ok && len(fts) > 0 {
			parts = append(parts, b.match(expr))
		} else {
			rest = n.Children
		}
		for _, c := range rest {
			parts = append(parts, b.node(c))
		}
		return join(parts, " AND ")
	case Or:
		if len(n.Children) == 0 {
			return "0"
		}
		var fts, rest []Node
		for _, c := range n.Children {
			if _, ok := FTS5(c); ok {
				fts = append(fts, c)
			} else {
				rest = append(rest, c)
			}
		}
		var parts []string
		if len(fts) > 0 {
			expr, _ := FTS5(Or{Children: fts})
			parts = append(parts, b.match(expr))
		}
		for _, c := range rest {
			parts = append(parts, b.node(c))
		}
		return join(parts, " OR ")
	case Not:
		return "NOT (" + b.node(n.Child) + ")"
	default: // an empty Term or Phrase, or an unknown node: matches nothing
		return "0"
	}
}

// expressibleInAnd reports whether c can be one child of an FTS5 And:
// itself expressible, or the negation of something expressible.
func expressibleInAnd(c Node) bool {
	pos, neg := splitNegations([]Node{c})
	for _, x := range append(pos, neg...) {
		if _, ok := FTS5(x); !ok {
			return false
		}
	}
	return true
}

// join joins SQL parts with op, parenthesised when there are several.
func join(parts []string, op string) string {
	if len(parts) == 1 {
		return parts[0]
	}
	return "(" + strings.Join(parts, op) + ")"
}
