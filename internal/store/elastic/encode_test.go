package elastic

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/query"
	"github.com/noticesd/noticesd/internal/store/storetest"
)

// registerBlock is the reference type of a register document
// (appendRegisterBlock).
type registerBlock struct {
	Row   int64                `json:"row"`
	Rows  int                  `json:"rows"`
	ACN   []string             `json:"acn"`
	ABN   []string             `json:"abn"`
	Names []string             `json:"names"`
	Data  []notice.RegisterRow `json:"data"`
}

// TestAppendRegisterBlock: the hand-written encoder writes what
// encoding/json writes for a registerBlock, for blocks of one row and of
// several, of plain rows and of strings that need escaping, with empty
// identifiers left out of acn and abn; what it writes decodes back to the
// rows (but for the invalid UTF-8, which becomes U+FFFD either way).
func TestAppendRegisterBlock(t *testing.T) {
	rows := storetest.RegisterRows()
	odd := rows[0]
	odd.CompanyName = "Smith & Jones <\"Café\"> \\ \t\x01 日本 \xff"
	odd.Status = ""
	odd.ABN = "<&>"
	rows = append(rows, notice.RegisterRow{}, odd)
	for _, c := range []struct {
		name  string
		first int64
		block []notice.RegisterRow
	}{
		{"one row", 7, rows[:1]},
		{"every row", 0, rows[:len(rows)-1]},
		{"empty identifiers", 3, rows[len(rows)-2 : len(rows)-1]},
		{"escapes", 99, rows[len(rows)-1:]},
	} {
		t.Run(c.name, func(t *testing.T) {
			want := registerBlock{Row: c.first, Rows: len(c.block), ACN: []string{}, ABN: []string{}, Data: c.block}
			for _, r := range c.block {
				if r.ACN != "" {
					want.ACN = append(want.ACN, r.ACN)
				}
				if r.ABN != "" {
					want.ABN = append(want.ABN, r.ABN)
				}
				want.Names = append(want.Names, query.Fold(r.CompanyName))
			}
			wantJSON, err := json.Marshal(want)
			if err != nil {
				t.Fatal(err)
			}
			got := appendRegisterBlock(nil, c.first, c.block)
			if !bytes.Equal(got, wantJSON) {
				t.Fatalf("\n got %s\nwant %s", got, wantJSON)
			}
			first, back, err := registerRowsOf(got, "", "")
			if err != nil || first != c.first || len(back) != len(c.block) {
				t.Fatalf("decodes back to row %d, %d rows, %v", first, len(back), err)
			}
			if c.name != "escapes" && !reflect.DeepEqual(back, c.block) {
				t.Errorf("decodes back to %+v, want %+v", back, c.block)
			}
		})
	}
}

// TestRegisterRowsOfVersion2: a register document of mapping versions 1
// and 2 (one row) still decodes, so a register loaded before version 3
// stays readable.
func TestRegisterRowsOfVersion2(t *testing.T) {
	r := storetest.RegisterRows()[1]
	src, err := json.Marshal(registerDoc{Row: 41, ACN: r.ACN, ABN: r.ABN, Data: r})
	if err != nil {
		t.Fatal(err)
	}
	row, rows, err := registerRowsOf(src, "", "")
	if err != nil || row != 41 || !reflect.DeepEqual(rows, []notice.RegisterRow{r}) {
		t.Errorf("got row %d, %+v, %v; want row 41, [%+v]", row, rows, err, r)
	}
}

// TestRegisterRowsWith: a lookup (registerRowsOf with a field) takes from a block exactly the rows whose
// ACN or ABN is the value (not a row that holds it in another field, nor
// one of another identifier), from a block or a version 2 document, for a
// value of digits (rows pre-selected by their JSON) and any other value.
func TestRegisterRowsWith(t *testing.T) {
	rows := []notice.RegisterRow{
		{CompanyName: "A", ACN: "000000001", ABN: "51000000001"},
		{CompanyName: "B 000000001", ACN: "000000002", ABN: "51000000001", StateRegistrationNumber: "000000001"},
		{CompanyName: "C", ACN: "000000001", ABN: ""},
		{CompanyName: "D", ACN: "AB-1", ABN: "x\"y"},
	}
	block := appendRegisterBlock(nil, 0, rows)
	v2, err := json.Marshal(registerDoc{ACN: rows[1].ACN, ABN: rows[1].ABN, Data: rows[1]})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, field, value string
		src                []byte
		want               []string
	}{
		{"acn", "acn", "000000001", block, []string{"A", "C"}},
		{"abn of two", "abn", "51000000001", block, []string{"A", "B 000000001"}},
		{"acn not there", "acn", "000000009", block, nil},
		{"value in another field", "acn", "51000000001", block, nil},
		{"not digits", "acn", "AB-1", block, []string{"D"}},
		{"escaped", "abn", "x\"y", block, []string{"D"}},
		{"version 2", "abn", "51000000001", v2, []string{"B 000000001"}},
		{"version 2, another", "acn", "000000001", v2, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, got, err := registerRowsOf(c.src, c.field, c.value)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, r := range got {
				names = append(names, r.CompanyName)
			}
			if !reflect.DeepEqual(names, c.want) {
				t.Errorf("rows %q, want %q", names, c.want)
			}
		})
	}
}

// registerDoc is a register document of mapping versions 1 and 2 (one row),
// as the tests write one to check that it stays readable.
type registerDoc struct {
	Row  int64              `json:"row"`
	ACN  string             `json:"acn"`
	ABN  string             `json:"abn"`
	Data notice.RegisterRow `json:"data"`
}
