//go:build sqlite_fts5

package query

import (
	"database/sql"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"

	_ "github.com/mattn/go-sqlite3"
)

// crossDocs are small notices: company name, notice type, text.
var crossDocs = [][3]string{
	{"Acme Holdings Pty Ltd", "Appointment of Liquidator", "Court liquidation ordered"},
	{"Acme Mining Ltd", "Notice of Meeting", "Creditors meeting of Acme"},
	{"Smith-Jones Café Pty Ltd", "Appointment of Liquidator", "Creditors' voluntary liquidation"},
	{"Smith Jones Bakery", "Deregistration", "The company will be deregistered"},
	{"O'Brien Constructions", "Appointment of Administrator", "Voluntary administration"},
	{"Obrien Consulting", "Notice of Dividend", "First and final dividend"},
	{"Café Crème Pty Ltd", "Deregistration", "Voluntary deregistration"},
	{"CAFE CREME TRADING", "Appointment of Liquidator", "court winding up"},
	{"Zürich Holdings", "Notice of Meeting", "Meeting of members"},
	{"Zurich Pty Ltd", "Deregistration", "ASIC deregistration"},
	{"Holdings Ltd", "Acme", "Liquidator appointed by the court"},
	{"Liquid Assets Pty Ltd", "Appointment of Receiver", "Receiver and manager appointed"},
	{"Liquidity Partners", "Notice of Dividend", "Dividend to creditors"},
	{"Pty Ltd", "Appointment of Liquidator", "Smith appointed liquidator"},
	{"Jones & Co", "Notice of Meeting", "meeting adjourned"},
	{"Ernst Partners", "Appointment of Administrator", "Ernst & Partners appointed"},
	{"Northern Mining Ltd", "Appointment of Liquidator", "Members' voluntary liquidation"},
	{"Southern Mining Ltd", "Notice of Meeting", "Court meeting of creditors"},
	{"Mining Services", "Deregistration", "Former mining company"},
	{"Résumé Services", "Notice of Dividend", "No dividend payable"},
	{"Resume Hire", "Appointment of Receiver", "Receivers appointed"},
	{"Alpha Beta Gamma", "Notice of Meeting", "alpha meeting beta"},
	{"Beta Alpha", "Deregistration", "gamma"},
	{"Or Not And Pty Ltd", "Notice of Meeting", "near or not"},
	{"2024 Holdings", "Appointment of Liquidator", "ACN 123 456 789"},
	{"Holdings 2025", "Notice of Dividend", "Dividend v1.2"},
	{"Naïve Trading", "Appointment of Administrator", "naive administrators"},
	{"Straße GmbH", "Notice of Meeting", "strasse meeting"},
	{"Quote \"Co\"", "Deregistration", "said \"hello\""},
	{"Empty", "", ""},
}

var crossQueries = []string{
	"acme",
	"ACME holdings",
	"acme OR zurich",
	`"acme holdings"`,
	`"holdings acme"`,
	`"ltd appointment"`, // across fields: no match
	"liquidator",
	"liquid*",
	"liquida*",
	`"voluntary liquid*"`,
	"smith-jones",
	"smith jones",
	`"smith jones"`,
	"o'brien",
	"obrien",
	"café",
	"cafe creme",
	"zurich",
	"Zürich",
	"resume",
	"naive",
	"straße",
	"meeting -creditors",
	"meeting NOT (creditors OR members)",
	"-deregistration",
	"-deregistration -meeting",
	"NOT (acme OR mining)",
	"acme OR -mining",
	"(acme OR -mining) ltd",
	"ltd -(pty OR -mining)",
	"-(-acme)",
	"mining -(northern OR southern) -services",
	"(liquidator OR receiver) (court OR appointed)",
	"alpha beta",
	`"alpha beta"`,
	`"beta alpha"`,
	"or not",
	`"or not"`,
	"2024",
	"123 456",
	`"123 456 789"`,
	"v1",
	`"co"`,
	"hello OR empty",
	"dividend -(first final) OR receiver*",
	"ad* -admin*",
}

func TestSQLiteAgreesWithMatch(t *testing.T) {
	db := openFTS(t)
	docs := make([]*Doc, len(crossDocs))
	for i, d := range crossDocs {
		if _, err := db.Exec(`INSERT INTO notices(seq, name, type, body) VALUES (?, ?, ?, ?)`, i+1, d[0], d[1], d[2]); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec(`INSERT INTO notices_fts(rowid, name, type, body) VALUES (?, ?, ?, ?)`, i+1, d[0], d[1], d[2]); err != nil {
			t.Fatal(err)
		}
		docs[i] = NewDoc(d[0], d[1], d[2])
	}

	partial, viaFTS5, viaSQLOnly := 0, 0, 0
	for _, q := range crossQueries {
		t.Run(q, func(t *testing.T) {
			n, err := Parse(q)
			if err != nil {
				t.Fatalf("Parse(%q): %v", q, err)
			}
			var want []int64
			for i, d := range docs {
				if Match(n, d) {
					want = append(want, int64(i+1))
				}
			}
			if len(want) > 0 && len(want) < len(docs) {
				partial++
			}

			where, args := SQL(n, "notices_fts")
			got := seqs(t, db, "SELECT seq FROM notices WHERE "+where, args...)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("SQL %s %q matched %v; Match matched %v", where, args, got, want)
			}

			expr, ok := FTS5(n)
			if !ok {
				viaSQLOnly++
				return
			}
			viaFTS5++
			got = seqs(t, db, "SELECT rowid FROM notices_fts WHERE notices_fts MATCH ?", expr)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("FTS5 %s matched %v; Match matched %v", expr, got, want)
			}
		})
	}
	// Guard against a vacuous table: most queries must split the documents,
	// and both renderings must be exercised.
	if partial < len(crossQueries)-3 || viaFTS5 < 20 || viaSQLOnly < 5 {
		t.Fatalf("weak query table: %d of %d queries split the documents, %d via FTS5, %d via SQL only",
			partial, len(crossQueries), viaFTS5, viaSQLOnly)
	}
}

// TestTokensAgreeWithSQLite checks the tokeniser against unicode61
// remove_diacritics 2 for every code point (assigned or not; but U+0000
// and the surrogates, which a Go string cannot hold as such): whether it
// starts a token, continues one, and what it folds to (probes). Then a few
// texts of several marks and letters whose handling depends on their
// neighbours.
func TestTokensAgreeWithSQLite(t *testing.T) {
	rs, want, _ := sqliteProbes(t)
	got, err := goProbes(rs)
	if err != nil {
		t.Fatal(err)
	}
	bad := 0
	for k, r := range rs {
		if got[k] != want[k] {
			bad++
			if bad <= 20 {
				t.Errorf("U+%04X %q: unicode61 %+v, tokens %+v", r, r, want[k], got[k])
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d code points tokenised differently", bad, len(rs))
	}
	for _, s := range probeTexts(rs) {
		if f, j := Fold(s), strings.Join(tokens(s), " "); f != j {
			t.Fatalf("Fold(%q) = %q, want %q", s, f, j)
		}
	}

	db := openFTS(t)
	if _, err := db.Exec(`CREATE VIRTUAL TABLE vocab USING fts5vocab(notices_fts, 'instance')`); err != nil {
		t.Fatal(err)
	}
	texts := []string{
		"Ǡ ǡ ı İ ſ µ ς", "e\u0301te\u0301 \u0301x ǖ", "x\uE000y",
		"\u0301\u0300a \u0301 a\u0301\u0300\u0301b",         // marks at a token's start, alone, in a row
		"a\u0332b a\u0345b \u0345a a\u0489b",                // marks unicode61 does not keep
		"ß ẞ Ǆ ǅ ǆ ﬃ İstanbul ΐ ϐ ϑ ᾈ",                      // special cases of case folding
		"ΆΈΉ Ελλάδα Ё й ї ӂ",                                // marks of other scripts stay
		"日本語 東京商事 ひらがな カタカナ 한국어",                            // runs of CJK stay whole
		"w½ x² ①② 〇 a😀b a·b a‿b a\u00ADb a\u200Db a\u200Cb", // numbers, symbols, joiners
		"\U0001F1E6\U0001F1FA 1\uFE0F\u20E3 \U000E0001x",    // flags, keycaps, tags
		"Ϳ Ꭰ Ა \U000104B0 \U0001E900",                       // upper case SQLite does not fold
		"a\uFFFEb a\uFFFFb \U0010FFFFz \U000E0080z",         // noncharacters, unassigned
	}
	stmt, err := db.Prepare(`INSERT INTO notices_fts(rowid, name, type, body) VALUES (?, ?, '', '')`)
	if err != nil {
		t.Fatal(err)
	}
	defer stmt.Close()
	for i, s := range texts {
		if _, err := stmt.Exec(i+1, s); err != nil {
			t.Fatal(err)
		}
	}
	rows, err := db.Query(`SELECT doc, term FROM vocab ORDER BY doc, offset`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	terms := make([][]string, len(texts))
	for rows.Next() {
		var doc int
		var term string
		if err := rows.Scan(&doc, &term); err != nil {
			t.Fatal(err)
		}
		terms[doc-1] = append(terms[doc-1], term)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	for i, s := range texts {
		if want := tokens(s); fmt.Sprint(terms[i]) != fmt.Sprint(want) {
			t.Errorf("%q: unicode61 gives %q, tokens gives %q", s, terms[i], want)
		}
		if f, j := Fold(s), strings.Join(tokens(s), " "); f != j {
			t.Errorf("Fold(%q) = %q, want %q", s, f, j)
		}
	}
}

// openFTS opens an in-memory database with a notices table and its FTS5
// index, tokenised as the embedded store does.
func openFTS(t *testing.T) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite3", ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1) // one connection: one in-memory database
	t.Cleanup(func() { db.Close() })
	for _, s := range []string{
		`CREATE TABLE notices(seq INTEGER PRIMARY KEY, name TEXT, type TEXT, body TEXT)`,
		`CREATE VIRTUAL TABLE notices_fts USING fts5(name, type, body, tokenize = 'unicode61 remove_diacritics 2')`,
	} {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	return db
}

// seqs runs a query returning one integer column, sorted ascending.
func seqs(t *testing.T, db *sql.DB, query string, args ...any) []int64 {
	t.Helper()
	rows, err := db.Query(query, args...)
	if err != nil {
		t.Fatalf("%s %q: %v", query, args, err)
	}
	defer rows.Close()
	var out []int64
	for rows.Next() {
		var s int64
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}
