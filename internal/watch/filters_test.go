package watch

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/noticesd/noticesd/internal/errs"
)

func boolPtr(b bool) *bool { return &b }

func TestFiltersEmpty(t *testing.T) {
	tests := []struct {
		name string
		f    Filters
		want bool
	}{
		{"zero", Filters{}, true},
		{"blank q", Filters{Q: "  "}, true},
		{"include_deregistration true only (the default)", Filters{IncludeDeregistration: boolPtr(true)}, true},
		{"include_deregistration false only", Filters{IncludeDeregistration: boolPtr(false)}, false},
		{"state", Filters{State: []string{"NSW"}}, false},
		{"status", Filters{Status: []string{"Registered"}}, false},
		{"notice_code", Filters{NoticeCode: []string{"X1"}}, false},
		{"notice_purpose", Filters{NoticePurpose: []string{"Meeting"}}, false},
		{"appointment_type", Filters{AppointmentType: []string{"Court Liquidation"}}, false},
		{"q", Filters{Q: "smith"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.f.Empty(); got != tt.want {
				t.Errorf("Empty() = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestNoticeFilter(t *testing.T) {
	tests := []struct {
		name      string
		f         Filters
		wantDereg bool
		wantQ     bool
	}{
		{"deregistration included by default", Filters{State: []string{"NSW"}}, true, false},
		{"explicit true", Filters{IncludeDeregistration: boolPtr(true)}, true, false},
		{"explicit false", Filters{IncludeDeregistration: boolPtr(false)}, false, false},
		{"q parsed", Filters{Q: "liquidator OR receiver"}, true, true},
		{"blank q is no q", Filters{Q: " "}, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nf, err := tt.f.NoticeFilter()
			if err != nil {
				t.Fatal(err)
			}
			if nf.IncludeDeregistration != tt.wantDereg || (nf.Q != nil) != tt.wantQ {
				t.Errorf("got IncludeDeregistration %v, Q %v", nf.IncludeDeregistration, nf.Q)
			}
			if !slices.Equal(nf.State, tt.f.State) {
				t.Errorf("state %v, want %v", nf.State, tt.f.State)
			}
		})
	}
	t.Run("bad q names filters.q", func(t *testing.T) {
		_, err := Filters{Q: "(smith"}.NoticeFilter()
		checkErr(t, err, errs.InvalidFilter, "filters.q")
	})
}

func TestFiltersJSON(t *testing.T) {
	t.Run("output form", func(t *testing.T) {
		f := Filters{State: []string{"NSW"}, Q: "smith", IncludeDeregistration: boolPtr(false)}
		got, err := json.Marshal(f)
		if err != nil {
			t.Fatal(err)
		}
		want := `{"appointment_type":[],"notice_purpose":[],"notice_code":[],"state":["NSW"],"status":[],"q":"smith","include_deregistration":false}`
		if string(got) != want {
			t.Errorf("got  %s\nwant %s", got, want)
		}
	})
	t.Run("round trip", func(t *testing.T) {
		in := Filters{AppointmentType: []string{"Court Liquidation"}, Status: []string{"In Liquidation", "Registered"}, Q: `"acme pty"`}
		b, err := json.Marshal(in)
		if err != nil {
			t.Fatal(err)
		}
		var out Filters
		if err := json.Unmarshal(b, &out); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(out.AppointmentType, in.AppointmentType) || !slices.Equal(out.Status, in.Status) ||
			out.Q != in.Q || out.IncludeDeregistration == nil || !*out.IncludeDeregistration || len(out.State) != 0 {
			t.Errorf("round trip gave %+v from %s", out, b)
		}
	})
	t.Run("unmarshal rejects unknown fields", func(t *testing.T) {
		var f Filters
		err := json.Unmarshal([]byte(`{"sate": "NSW"}`), &f)
		checkErr(t, err, errs.InvalidFilter, "filters.sate")
	})
}
