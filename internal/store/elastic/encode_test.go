package elastic

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/store/storetest"
)

// TestAppendRegisterDoc: the hand-written encoder writes what
// encoding/json writes for a registerDoc, for plain rows and for strings
// that need escaping; what it writes decodes back to the row (but for
// the invalid UTF-8, which becomes U+FFFD either way).
func TestAppendRegisterDoc(t *testing.T) {
	rows := storetest.RegisterRows()
	odd := rows[0]
	odd.CompanyName = "Smith & Jones <\"Café\"> \\ \t\x01 日本 \xff"
	odd.Status = ""
	rows = append(rows, odd, notice.RegisterRow{})
	for i, r := range rows {
		want, err := json.Marshal(registerDoc{Row: int64(i), ACN: r.ACN, ABN: r.ABN, Data: r})
		if err != nil {
			t.Fatal(err)
		}
		got := appendRegisterDoc(nil, int64(i), &r)
		if !bytes.Equal(got, want) {
			t.Errorf("row %d:\n got %s\nwant %s", i, got, want)
		}
		var back registerDoc
		if err := json.Unmarshal(got, &back); err != nil || back.Row != int64(i) || (i != len(rows)-2 && !reflect.DeepEqual(back.Data, r)) {
			t.Errorf("row %d does not decode back: %+v, %v", i, back, err)
		}
	}
}
