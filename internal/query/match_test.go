package query

import "testing"

func TestMatch(t *testing.T) {
	// Fields: company name, notice type, text, practitioners.
	doc := NewDoc(
		"Smith-Jones Café Pty Ltd",
		"Appointment of Liquidator",
		"Notice is given that the company was wound up by the Court.",
		"Jane O'Brien, Ernst & Partners",
	)
	tests := []struct {
		q    string
		want bool
	}{
		{"", true},
		{"liquidator", true},
		{"LIQUIDATOR", true},
		{"liquidation", false},
		{"liquid*", true},
		{"liqz*", false},
		{"cafe", true},
		{"Café", true},
		{"caf", false},
		{"caf*", true},
		{"smith-jones", true},
		{`"smith jones cafe"`, true},
		{`"jones smith"`, false},
		{`"cafe pty*"`, true},
		{`"cafe ltd*"`, false},
		{"o'brien", true},
		{"obrien", false},
		{"smith liquidator", true},
		{"smith receiver", false},
		{"receiver OR liquidator", true},
		{"receiver OR administrator", false},
		{"-receiver", true},
		{"-liquidator", false},
		{"NOT receiver", true},
		{"smith -receiver", true},
		{"smith -liquidator", false},
		{"receiver OR -administrator", true},
		{"-(receiver OR liquidator)", false},
		{"(receiver OR court) -(deregistration)", true},
		{"wound up court", true},
		{`"wound up by the court"`, true},
		// A phrase never spans two fields.
		{`"ltd appointment"`, false},
		{`"liquidator notice"`, false},
		{"ltd appointment", true},
		{"ernst partners", true},
		{"ernst & partners", true},
	}
	for _, tt := range tests {
		t.Run(tt.q, func(t *testing.T) {
			n, err := Parse(tt.q)
			if err != nil {
				t.Fatalf("Parse(%q): %v", tt.q, err)
			}
			if got := Match(n, doc); got != tt.want {
				t.Fatalf("Match(Parse(%q)) = %v, want %v", tt.q, got, tt.want)
			}
		})
	}
}

func TestMatchHandBuilt(t *testing.T) {
	doc := NewDoc("alpha beta", "gamma")
	tests := []struct {
		name string
		n    Node
		d    *Doc
		want bool
	}{
		{"nil node matches", nil, doc, true},
		{"nil doc has no words", tm("alpha"), nil, false},
		{"negation on nil doc", not(tm("alpha")), nil, true},
		{"empty term", tm(""), doc, false},
		{"empty prefix term", pre(""), doc, false},
		{"empty phrase", Phrase{}, doc, false},
		{"empty and", And{}, doc, true},
		{"empty or", Or{}, doc, false},
		{"pointer nodes", &And{Children: []Node{&Term{Text: "alpha"}, &Not{Child: &Term{Text: "delta"}}}}, doc, true},
		{"nil pointer", (*Phrase)(nil), doc, true},
		{"phrase longer than field", ph("alpha", "beta", "gamma"), doc, false},
		{"phrase at end of field", ph("alpha", "beta"), doc, true},
		{"prefix phrase", phPre("alpha", "be"), doc, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Match(tt.n, tt.d); got != tt.want {
				t.Fatalf("Match(%#v) = %v, want %v", tt.n, got, tt.want)
			}
		})
	}
}
