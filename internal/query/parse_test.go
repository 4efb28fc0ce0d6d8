package query

import (
	"reflect"
	"strings"
	"testing"

	"github.com/noticesd/noticesd/internal/errs"
)

// Tree-building shorthands for the tests.
func tm(s string) Term              { return Term{Text: s} }
func pre(s string) Term             { return Term{Text: s, Prefix: true} }
func ph(ws ...string) Phrase        { return Phrase{Words: ws} }
func phPre(ws ...string) Phrase     { return Phrase{Words: ws, Prefix: true} }
func and(cs ...Node) And            { return And{Children: cs} }
func or(cs ...Node) Or              { return Or{Children: cs} }
func not(c Node) Not                { return Not{Child: c} }
func repeat(s string, n int) string { return strings.Repeat(s, n) }

func TestParseValid(t *testing.T) {
	tests := []struct {
		name string
		q    string
		want Node
	}{
		{"empty", "", nil},
		{"whitespace only", " \t\n ", nil},
		{"one word", "liquidator", tm("liquidator")},
		{"case folded", "LiQuiDaTor", tm("liquidator")},
		{"diacritics folded", "Café", tm("cafe")},
		{"decomposed diacritic folded", "Cafe\u0301", tm("cafe")},
		{"non-latin keeps marks", "Ἀθῆναι", tm("ἀθῆναι")},
		{"implicit and", "acme holdings", and(tm("acme"), tm("holdings"))},
		{"explicit AND", "acme AND holdings", and(tm("acme"), tm("holdings"))},
		{"lowercase and is a word", "acme and holdings", and(tm("acme"), tm("and"), tm("holdings"))},
		{"extra whitespace", "  acme \t  holdings  ", and(tm("acme"), tm("holdings"))},
		{"phrase", `"acme holdings"`, ph("acme", "holdings")},
		{"phrase of one word is a term", `"Acme"`, tm("acme")},
		{"phrase tokenised", `"Smith-Jones & Co."`, ph("smith", "jones", "co")},
		{"phrase keeps keywords as words", `"a OR b"`, ph("a", "or", "b")},
		{"phrase of punctuation dropped", `acme "&"`, tm("acme")},
		{"phrase prefix", `"acme hold*"`, phPre("acme", "hold")},
		{"phrase prefix single word", `"hold*"`, pre("hold")},
		{"phrase glued to word", `acme"pty ltd"`, and(tm("acme"), ph("pty", "ltd"))},
		{"OR", "a OR b", or(tm("a"), tm("b"))},
		{"lowercase or is a word", "a or b", and(tm("a"), tm("or"), tm("b"))},
		{"OR binds looser than and", "a b OR c", or(and(tm("a"), tm("b")), tm("c"))},
		{"OR chain flattened", "a OR b OR c", or(tm("a"), tm("b"), tm("c"))},
		{"NOT", "a NOT b", and(tm("a"), not(tm("b")))},
		{"minus", "a -b", and(tm("a"), not(tm("b")))},
		{"NOT binds tighter than and", "NOT a b", and(not(tm("a")), tm("b"))},
		{"NOT binds tighter than OR", "-a OR b", or(not(tm("a")), tm("b"))},
		{"only a negation", "-foo", not(tm("foo"))},
		{"only NOT", "NOT foo", not(tm("foo"))},
		{"lowercase not is a word", "not foo", and(tm("not"), tm("foo"))},
		{"minus phrase", `a -"b c"`, and(tm("a"), not(ph("b", "c")))},
		{"minus group", "a -(b OR c)", and(tm("a"), not(or(tm("b"), tm("c"))))},
		{"NOT group", "NOT (b c)", not(and(tm("b"), tm("c")))},
		{"double negation removed", "--a", tm("a")},
		{"NOT minus removed", "NOT -a", tm("a")},
		{"triple negation", "NOT NOT NOT a", not(tm("a"))},
		{"glued keyword is a word", "-OR", not(tm("or"))},
		{"minus inside word is punctuation", "smith-jones", ph("smith", "jones")},
		{"apostrophe splits", "o'brien", ph("o", "brien")},
		{"trailing minus is punctuation", "a-", tm("a")},
		{"parentheses", "(a OR b) c", and(or(tm("a"), tm("b")), tm("c"))},
		{"nested and flattened", "(a b) (c d)", and(tm("a"), tm("b"), tm("c"), tm("d"))},
		{"nested or flattened", "a OR (b OR c)", or(tm("a"), tm("b"), tm("c"))},
		{"redundant parentheses", "((a))", tm("a")},
		{"parenthesis glued to words", "a(b)c", and(tm("a"), tm("b"), tm("c"))},
		{"OR glued to parenthesis", "a OR(b)", or(tm("a"), tm("b"))},
		{"prefix", "liquid*", pre("liquid")},
		{"prefix two characters", "li*", pre("li")},
		{"prefix folded", "CAFÉ*", pre("cafe")},
		{"prefix on compound word", "smith-jo*", phPre("smith", "jo")},
		{"negated prefix", "-liquid*", not(pre("liquid"))},
		{"punctuation word dropped", "smith & jones", and(tm("smith"), tm("jones"))},
		{"punctuation in OR dropped", "a OR &", tm("a")},
		{"negated punctuation dropped", "a -&", tm("a")},
		{"group of punctuation dropped", "a (&)", tm("a")},
		{"digits", "2024 acn", and(tm("2024"), tm("acn"))},
		{"acn with spaces is three words", "123 456 789", and(tm("123"), tm("456"), tm("789"))},
		{"dotted number splits", "v1.2", ph("v1", "2")},
		{"long sharp s kept", "Straße", tm("straße")},
		{"final sigma folded", "ΟΔΟΣ οδος", and(tm("οδοσ"), tm("οδοσ"))},
		{"exactly max length", repeat("a", MaxLength), tm(repeat("a", MaxLength))},
		{"max length in runes not bytes", repeat("é", MaxLength), tm(repeat("e", MaxLength))},
		{"unicode whitespace separates", "a\u00a0b", and(tm("a"), tm("b"))},
		{"complex", `("court liquidation" OR windup*) -deregistration smith`,
			and(or(ph("court", "liquidation"), pre("windup")), not(tm("deregistration")), tm("smith"))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(tt.q)
			if err != nil {
				t.Fatalf("Parse(%q) error: %v", tt.q, err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("Parse(%q)\n got  %#v\n want %#v", tt.q, got, tt.want)
			}
		})
	}
}

func TestParseInvalid(t *testing.T) {
	tests := []struct {
		name string
		q    string
		want []string // substrings of the message
	}{
		{"unclosed quote", `acme "pty ltd`, []string{"unbalanced quote", "character 6"}},
		{"lone quote", `"`, []string{"unbalanced quote", "character 1"}},
		{"third quote", `"a" "b`, []string{"unbalanced quote", "character 5"}},
		{"unclosed parenthesis", "(a OR b", []string{"unbalanced parentheses", `"("`, "character 1"}},
		{"inner unclosed parenthesis", "(a (b)", []string{"unbalanced parentheses", "character 1"}},
		{"unmatched closing parenthesis", "a OR b)", []string{"unbalanced parentheses", `")"`, "character 7"}},
		{"closing before opening", ")a(", []string{"unbalanced parentheses", `")"`, "character 1"}},
		{"OR at end", "a OR", []string{"dangling operator", "OR at character 3", "ends there"}},
		{"OR at start", "OR a", []string{"dangling operator", "OR at character 1", "before it"}},
		{"OR alone", "OR", []string{"dangling operator", "OR at character 1"}},
		{"double OR", "a OR OR b", []string{"dangling operator", "OR at character 3", "OR at character 6"}},
		{"OR before closing parenthesis", "(a OR) b", []string{"dangling operator", "OR at character 4", `")"`}},
		{"OR after opening parenthesis", "(OR a)", []string{"dangling operator", "OR at character 2", "before it"}},
		{"NOT at end", "a NOT", []string{"dangling operator", "NOT at character 3"}},
		{"NOT alone", "NOT", []string{"dangling operator", "NOT at character 1"}},
		{"NOT before OR", "NOT OR a", []string{"dangling operator", "NOT at character 1"}},
		{"AND at end", "a AND", []string{"dangling operator", "AND at character 3"}},
		{"AND at start", "AND a", []string{"dangling operator", "AND at character 1"}},
		{"AND OR", "a AND OR b", []string{"dangling operator", "AND at character 3"}},
		{"minus at end", "a -", []string{"dangling operator", `"-" at character 3`}},
		{"minus alone", "-", []string{"dangling operator", "character 1"}},
		{"minus before space", "a - b", []string{"dangling operator", `"-" at character 3`}},
		{"minus before closing parenthesis", "(a -)", []string{"dangling operator", "character 4"}},
		{"double minus before space", "-- a", []string{"dangling operator", "character 2"}},
		{"empty group", "a ()", []string{"empty group", "character 3"}},
		{"empty group with space", "( )", []string{"empty group", "character 1"}},
		{"negated empty group", "-()", []string{"empty group", "character 2"}},
		{"empty phrase", `a ""`, []string{"empty phrase", "character 3"}},
		{"blank phrase", `"  "`, []string{"empty phrase", "character 1"}},
		{"bare star", "*", []string{`bare "*"`, "character 1"}},
		{"bare star after word", "a *", []string{`bare "*"`, "character 3"}},
		{"star after phrase", `"ab cd"*`, []string{`bare "*"`, "character 8"}},
		{"negated bare star", "-*", []string{`bare "*"`, "character 2"}},
		{"one-character prefix", "a*", []string{"too short", "character 1", `"a*"`}},
		{"one-character prefix after diacritic fold", "é*", []string{"too short"}},
		{"one-character last token", "smith-j*", []string{"too short", "character 7", `"j*"`}},
		{"one-character prefix in phrase", `"acme h*"`, []string{"too short", "character 7"}},
		{"star inside word", "ab*cd", []string{"misplaced", "character 3"}},
		{"leading star", "*ab", []string{"misplaced", "character 1"}},
		{"double star", "ab**", []string{"misplaced", "character 3"}},
		{"star inside phrase", `"ab* cd"`, []string{"misplaced", "character 4"}},
		{"star after punctuation", "ab&*", []string{"misplaced", "character 4", "directly follow"}},
		{"too long", repeat("a", MaxLength+1), []string{"501 characters", "maximum is 500"}},
		{"too long in runes", repeat("é ", 251), []string{"502 characters"}},
		{"punctuation only", "&", []string{"no searchable word"}},
		{"punctuation words only", "& + !", []string{"no searchable word"}},
		{"negated punctuation only", "-&", []string{"no searchable word"}},
		{"group of punctuation only", "(&) OR \"!\"", []string{"no searchable word"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, err := Parse(tt.q)
			if err == nil {
				t.Fatalf("Parse(%q) = %#v, want an invalid_query error", tt.q, n)
			}
			e, ok := err.(*errs.Error)
			if !ok || e.Code != errs.InvalidQuery {
				t.Fatalf("Parse(%q) error %#v, want *errs.Error with code invalid_query", tt.q, err)
			}
			if n != nil {
				t.Errorf("Parse(%q) returned a tree with its error: %#v", tt.q, n)
			}
			for _, s := range tt.want {
				if !strings.Contains(e.Message, s) {
					t.Errorf("Parse(%q) message %q does not contain %q", tt.q, e.Message, s)
				}
			}
		})
	}
}

func TestTokens(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"Hello, World!", []string{"hello", "world"}},
		{"Ünïcödé ÀÇÑ", []string{"unicode", "acn"}},
		{"e\u0301te\u0301", []string{"ete"}},
		{"\u0301a", []string{"a"}},           // a leading mark is a separator
		{"ab\u0300cd", []string{"abcd"}},     // U+0300 is one of unicode61's diacritics
		{"ab\u0340cd", []string{"ab", "cd"}}, // U+0340 is not
		{"ab\u0489cd", []string{"ab", "cd"}}, // other marks separate
		{"ǖ", []string{"u"}},                 // two marks, folded (remove_diacritics 2)
		{"ǡ", []string{"ǡ"}},                 // unicode61 keeps it
		{"ıi İ", []string{"ıi", "i"}},        // dotless i is not folded
		{"ſ µ", []string{"s", "μ"}},          // simple case folding
		{"a_b a.b a'b", []string{"a", "b", "a", "b", "a", "b"}},
		{"ＡＢＣ", []string{"ａｂｃ"}},           // full-width letters are letters
		{"x\uE000y", []string{"x\uE000y"}}, // private use is a token character
		{"½ ²", []string{"½", "²"}},        // numbers of category No
		{"\xff", nil},                      // invalid UTF-8 separates
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got := tokens(tt.in)
			if len(got) == 0 && len(tt.want) == 0 {
				return
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("tokens(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}
