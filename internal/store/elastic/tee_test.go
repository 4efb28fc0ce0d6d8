//go:build sqlite_fts5

package elastic

import (
	"context"
	"reflect"
	"testing"

	"github.com/noticesd/noticesd/internal/ident"
	"github.com/noticesd/noticesd/internal/store"
	"github.com/noticesd/noticesd/internal/store/storetest"
)

// TestTeeRegister: one register load through store.TeeRegister lands in
// both backends; a rolled-back one in neither.
func TestTeeRegister(t *testing.T) {
	ctx := context.Background()
	lite := openLite(t)
	es := openTest(t, nil)
	both := store.TeeRegister(lite, es)
	l, err := both.BeginRegister(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Add(ctx, storetest.RegisterRows()); err != nil {
		t.Fatal(err)
	}
	if err := l.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	id := ident.ID{Value: storetest.ACNAlpha, Kind: ident.ACN}
	a, aerr := lite.Company(ctx, id)
	b, berr := es.Company(ctx, id)
	if aerr != nil || berr != nil || !reflect.DeepEqual(a, b) || a.Register == nil {
		t.Errorf("after a tee load: sqlite %+v (%v), elastic %+v (%v)", a, aerr, b, berr)
	}
	l, err = both.BeginRegister(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Add(ctx, storetest.RegisterRows()[1:2]); err != nil {
		t.Fatal(err)
	}
	if err := l.Rollback(); err != nil {
		t.Fatal(err)
	}
	if c, err := es.Company(ctx, id); err != nil || c.Register == nil {
		t.Errorf("rolled-back load replaced the register: %+v, %v", c, err)
	}
}
