package sqlite

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/noticesd/noticesd/internal/notice"
	"github.com/noticesd/noticesd/internal/store"
	"github.com/noticesd/noticesd/internal/store/storetest"
)

func openTest(t *testing.T, opts ...Option) *Store {
	t.Helper()
	opts = append([]Option{WithSecretBox(testBox(t, testKey, nil))}, opts...)
	s, err := Open(context.Background(), filepath.Join(t.TempDir(), "data", "notices.db"), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return s
}

func TestNoticesContract(t *testing.T) {
	storetest.RunNotices(t, func(t *testing.T) storetest.Backend {
		clock := storetest.NewClock(storetest.Start)
		s := openTest(t, WithClock(clock.Now))
		return storetest.Backend{Notices: s, Writer: s, Register: s, Clock: clock}
	})
}

func TestAccountsContract(t *testing.T) {
	storetest.RunAccounts(t, func(t *testing.T) store.Accounts { return openTest(t) })
}

func TestKeysStoredHashed(t *testing.T) {
	s := openTest(t)
	created, err := s.CreateAccount(context.Background(), "A", "free")
	if err != nil {
		t.Fatal(err)
	}
	rows, err := s.read.Query("SELECT hash FROM api_keys")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var h string
		if err := rows.Scan(&h); err != nil {
			t.Fatal(err)
		}
		n++
		if strings.Contains(h, created.ReadKey) || strings.Contains(h, created.AccountKey) || len(h) != 64 {
			t.Errorf("stored key %q is not a SHA-256 hex hash", h)
		}
	}
	if n != 2 {
		t.Errorf("%d keys stored, want 2", n)
	}
}

func TestReopenKeepsDataAndSchema(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "notices.db")
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.UpsertNotices(ctx, storetest.Notices(t)[:2]); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = Open(ctx, path)
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer s.Close()
	ms, err := Migrations()
	if err != nil {
		t.Fatal(err)
	}
	v, err := s.SchemaVersion(ctx)
	if err != nil || v != ms[len(ms)-1].Version {
		t.Errorf("schema version %d (%v), want %d", v, err, ms[len(ms)-1].Version)
	}
	st, err := s.IndexStatus(ctx)
	if err != nil || st.Notices != 2 {
		t.Errorf("after reopen: %+v, %v; want 2 notices", st, err)
	}
}

func TestOpenRejectsNonDatabase(t *testing.T) {
	path := filepath.Join(t.TempDir(), "notices.db")
	if err := writeFile(path, "this is not a database, it is a text file of some length........"); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(context.Background(), path); err == nil {
		t.Fatal("Open of a text file succeeded")
	}
}

func TestRegisterLoadAbandonedByNewerLoad(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	old, err := s.BeginRegister(ctx)
	if err != nil {
		t.Fatal(err)
	}
	newer, err := s.BeginRegister(ctx)
	if err != nil {
		t.Fatal(err)
	}
	err = old.Add(ctx, storetest.RegisterRows())
	if err == nil || !strings.Contains(err.Error(), "one register load at a time") {
		t.Errorf("Add to the abandoned load: %v, want an explanation", err)
	}
	if err := newer.Add(ctx, storetest.RegisterRows()); err != nil {
		t.Fatal(err)
	}
	if err := newer.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := newer.Commit(ctx); err == nil {
		t.Error("second Commit succeeded")
	}
}

func writeFile(path, content string) error { return os.WriteFile(path, []byte(content), 0o644) }

// TestMigrationCountsBySpelling: a file written before migration 0010,
// whose notice_counts merged the spellings of a value under the first one
// stored, answers filters and stats by the most common spelling once
// reopened, with the same counts.
func TestMigrationCountsBySpelling(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "notices.db")
	migrateThrough = 9
	s, err := Open(ctx, path)
	migrateThrough = 0
	if err != nil {
		t.Fatal(err)
	}
	var batch []notice.Notice
	for i, p := range []string{"appointment", "Appointment", "Appointment", "Dividend"} {
		n := storetest.AlphaNotice(fmt.Sprintf("MIG-%d", i), storetest.Start.Add(time.Duration(i)*time.Hour))
		n.NoticePurpose = p
		batch = append(batch, n)
	}
	for i := range batch {
		if _, err := s.UpsertNotices(ctx, batch[i:i+1]); err != nil {
			t.Fatal(err)
		}
	}
	var rows int
	if err := s.read.QueryRow("SELECT count(*) FROM notice_counts").Scan(&rows); err != nil || rows != 2 {
		t.Fatalf("before 0010: %d notice_counts rows (%v); want 2, the spellings merged (the test would prove nothing)", rows, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.read.QueryRow("SELECT count(*) FROM notice_counts").Scan(&rows); err != nil || rows != 3 {
		t.Errorf("after 0010: %d notice_counts rows (%v); want 3, one per spelling", rows, err)
	}
	f, err := s.Filters(ctx, notice.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if want := []notice.ValueCount{{Value: "Appointment", Count: 3}, {Value: "Dividend", Count: 1}}; !reflect.DeepEqual(f.NoticePurpose, want) {
		t.Errorf("notice_purpose %v, want %v", f.NoticePurpose, want)
	}
	if f.Total != 4 {
		t.Errorf("total %d, want 4", f.Total)
	}
	// A filter in any case still counts every spelling.
	f, err = s.Filters(ctx, notice.Filter{NoticePurpose: []string{"APPOINTMENT"}})
	if err != nil || f.Total != 3 {
		t.Errorf("notice_purpose=APPOINTMENT: total %d (%v), want 3", f.Total, err)
	}
}
