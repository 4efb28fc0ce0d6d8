package query

import (
	"reflect"
	"testing"
)

func TestFTS5(t *testing.T) {
	tests := []struct {
		name string
		q    string
		want string // "" when not expressible
	}{
		{"term", "Acme", `"acme"`},
		{"prefix", "liquid*", `"liquid"*`},
		{"phrase", `"acme holdings"`, `"acme holdings"`},
		{"phrase prefix", `"acme hold*"`, `"acme hold"*`},
		{"compound word", "smith-jones", `"smith jones"`},
		{"and", "a b c", `"a" AND "b" AND "c"`},
		{"or", "a OR b", `"a" OR "b"`},
		{"or of ands", "a b OR c d", `("a" AND "b") OR ("c" AND "d")`},
		{"and of ors", "(a OR b) (c OR d)", `("a" OR "b") AND ("c" OR "d")`},
		{"one negation", "a -b", `"a" NOT "b"`},
		{"negation first", "-b a", `"a" NOT "b"`},
		{"several positives and negations", "a -b c NOT d", `("a" AND "c") NOT ("b" OR "d")`},
		{"negated phrase", `a -"b c"`, `"a" NOT "b c"`},
		{"negated group", "a -(b c)", `"a" NOT ("b" AND "c")`},
		{"negated or group", "a -(b OR cd*)", `"a" NOT ("b" OR "cd"*)`},
		{"negation inside or branch", "(a -b) OR c", `("a" NOT "b") OR "c"`},
		{"nested negation", "a -(b -c)", `"a" NOT ("b" NOT "c")`},
		{"keywords quoted", `"or" "not" near`, `"or" AND "not" AND "near"`},
		{"column syntax is a word", "name:acme", `"name acme"`},
		{"fts5 syntax chars are punctuation", "^acme +x", `"acme" AND "x"`},
		{"lone negation", "-foo", ""},
		{"lone NOT group", "NOT (a)", ""},
		{"negation in or", "a OR -b", ""},
		{"only negations", "-a -b", ""},
		{"and containing inexpressible or", "c (a OR -b)", ""},
		{"negation of inexpressible", "c -(a OR -b)", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, err := Parse(tt.q)
			if err != nil {
				t.Fatalf("Parse(%q): %v", tt.q, err)
			}
			got, ok := FTS5(n)
			if ok != (tt.want != "") || got != tt.want {
				t.Fatalf("FTS5(Parse(%q)) = %q, %v; want %q, %v", tt.q, got, ok, tt.want, tt.want != "")
			}
		})
	}
}

func TestFTS5HandBuilt(t *testing.T) {
	tests := []struct {
		name string
		n    Node
		want string
	}{
		{"nil", nil, ""},
		{"quote doubled", tm(`a"b`), `"a""b"`},
		{"empty term", tm(""), ""},
		{"empty phrase", Phrase{}, ""},
		{"empty and", And{}, ""},
		{"empty or", Or{}, ""},
		{"single-child and", and(tm("a")), `"a"`},
		{"single-child or", or(tm("a")), `"a"`},
		{"double negation", not(not(tm("a"))), `"a"`},
		{"double negation in and", and(tm("a"), not(not(tm("b")))), `"a" AND "b"`},
		{"pointer nodes", &And{Children: []Node{&Term{Text: "a"}, &Not{Child: &Phrase{Words: []string{"b", "c"}}}}}, `"a" NOT "b c"`},
		{"nil pointer", (*Term)(nil), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := FTS5(tt.n)
			if ok != (tt.want != "") || got != tt.want {
				t.Fatalf("FTS5(%#v) = %q, %v; want %q, %v", tt.n, got, ok, tt.want, tt.want != "")
			}
		})
	}
}

func TestSQL(t *testing.T) {
	const m = "seq IN (SELECT rowid FROM fts WHERE fts MATCH ?)"
	tests := []struct {
		name  string
		q     string
		where string
		args  []any
	}{
		{"expressible", "a -b", m, []any{`"a" NOT "b"`}},
		{"lone negation", "-foo", "NOT (" + m + ")", []any{`"foo"`}},
		{"lone negated group", "NOT (a OR bc*)", "NOT (" + m + ")", []any{`"a" OR "bc"*`}},
		{"only negations", "-a -b", "(NOT (" + m + ") AND NOT (" + m + "))", []any{`"a"`, `"b"`}},
		{"negation in or", "a OR -b", "(" + m + " OR NOT (" + m + "))", []any{`"a"`, `"b"`}},
		{"expressible children grouped in or", "a OR b OR -c", "(" + m + " OR NOT (" + m + "))", []any{`"a" OR "b"`, `"c"`}},
		{"expressible children grouped in and", "x y -z (a OR -b)",
			"(" + m + " AND (" + m + " OR NOT (" + m + ")))", []any{`("x" AND "y") NOT "z"`, `"a"`, `"b"`}},
		{"negated inexpressible", "x -(a OR -b)",
			"(" + m + " AND NOT ((" + m + " OR NOT (" + m + "))))", []any{`"x"`, `"a"`, `"b"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, err := Parse(tt.q)
			if err != nil {
				t.Fatalf("Parse(%q): %v", tt.q, err)
			}
			where, args := SQL(n, "fts")
			if where != tt.where || !reflect.DeepEqual(args, tt.args) {
				t.Fatalf("SQL(Parse(%q))\n got  %s %q\n want %s %q", tt.q, where, args, tt.where, tt.args)
			}
		})
	}
}

func TestSQLHandBuilt(t *testing.T) {
	tests := []struct {
		name  string
		n     Node
		where string
	}{
		{"nil matches everything", nil, "1"},
		{"empty and matches everything", And{}, "1"},
		{"empty or matches nothing", Or{}, "0"},
		{"empty term matches nothing", tm(""), "0"},
		{"not of empty phrase", not(Phrase{}), "NOT (0)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			where, args := SQL(tt.n, "fts")
			if where != tt.where || len(args) != 0 {
				t.Fatalf("SQL(%#v) = %q %q, want %q and no args", tt.n, where, args, tt.where)
			}
		})
	}
}
