package redisstore

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/noticesd/noticesd/internal/notice"
)

// genKeys returns every key of register generation v: its parts, then its
// ids strings.
func (f fixture) genKeys(t testing.TB, v string) []string {
	t.Helper()
	parts, ids, err := f.rs.regKeys(context.Background(), v)
	if err != nil {
		t.Fatal(err)
	}
	return append(parts, ids...)
}

// existing counts the keys of keys that exist, one EXISTS each (on a
// cluster they are in several slots).
func (f fixture) existing(t testing.TB, keys []string) int {
	t.Helper()
	n := 0
	for _, k := range keys {
		e, err := f.rdb.Exists(context.Background(), k).Result()
		if err != nil {
			t.Fatal(err)
		}
		n += int(e)
	}
	return n
}

// genTTLs returns the TTL of every key of generation v that exists (a load
// writes no odd hash without odd ACNs); it fails unless there are at least
// its ids string, idparts, acnabn and abn.
func (f fixture) genTTLs(t testing.TB, v string) []time.Duration {
	t.Helper()
	var out []time.Duration
	for _, k := range f.genKeys(t, v) {
		if f.rdb.Exists(context.Background(), k).Val() == 1 {
			out = append(out, f.rdb.TTL(context.Background(), k).Val())
		}
	}
	if len(out) < 4 {
		t.Fatalf("generation %s has %d keys; want its ids strings, idparts, acnabn and abn", v, len(out))
	}
	return out
}

// expectTTLs fails unless every key of generation v has no TTL (live), or
// a TTL of at most oldRegisterTTL (replaced).
func (f fixture) expectTTLs(t testing.TB, v string, live bool, what string) {
	t.Helper()
	for i, d := range f.genTTLs(t, v) {
		if live && d != -1 {
			t.Errorf("%s: key %d of generation %s has TTL %v; want none (persistent)", what, i, v, d)
		}
		if !live && (d <= 0 || d > oldRegisterTTL*time.Second) {
			t.Errorf("%s: key %d of generation %s has TTL %v; want at most %ds", what, i, v, d, oldRegisterTTL)
		}
	}
}

// spreadRows returns register rows of n companies in n ids strings (one
// company every 65,000 slots from slot 10,000,000), named name.
func spreadRows(n int, name string) []notice.RegisterRow {
	rows := make([]notice.RegisterRow, n)
	for i := range rows {
		a := fmt.Sprintf("%09d", slotNumber(uint32(10_000_000+i*slotsPerPart)))
		rows[i] = notice.RegisterRow{CompanyName: name, ACN: a, ABN: formedABN(a), CurrentNameIndicator: "Y"}
	}
	return rows
}

// loadRows begins a register load of rows on f.
func (f fixture) loadRows(t testing.TB, rows []notice.RegisterRow) *RegisterLoad {
	t.Helper()
	ctx := context.Background()
	l, err := f.rs.BeginRegister(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Add(ctx, rows); err != nil {
		t.Fatal(err)
	}
	return l
}

// TestRegisterSettlesAfterSwitch: the switch (one script on the
// namespace's slot) cannot reach the ids strings, which are spread over
// slot groups, so their expiry is settled after it (settleRegister): a
// loader that dies after the switch and before or during the settle
// leaves the generation readers use with the 24 h TTL of a load and the
// one it replaced persistent, recorded in reg:settle; CompleteRegister (a
// scale process opening its stores, the workers' sweep) settles them: the
// live generation without TTL, the replaced one expiring, the record gone.
func TestRegisterSettlesAfterSwitch(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name string
		at   func(redis.Cmder) bool
	}{
		{"died after the switch", after(switchRegisterScript)},
		{"died before the settle's last step", runs(settledScript)},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t, Options{})
			first := f.loadRows(t, spreadRows(5, "FIRST"))
			if err := first.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			second := f.loadRows(t, spreadRows(7, "SECOND"))
			restore := killAt(f.rdb, c.at)
			err := second.Commit(ctx)
			restore()
			if err == nil {
				t.Fatal("the killed load committed whole")
			}
			if v := f.rdb.Get(ctx, f.rs.key(regKey, "v")).Val(); v != second.v {
				t.Fatalf("premise: reg:v = %q after the switch, want %s", v, second.v)
			}
			loading := 0
			for _, d := range f.genTTLs(t, second.v) {
				if d > 0 {
					loading++
				}
			}
			if loading == 0 {
				t.Fatal("premise: no key of the live generation still carries its load's TTL")
			}
			if res, err := f.rs.Screen(ctx, idsOf(t, spreadRows(7, "")[6].ACN), noFilter()); err != nil || len(res.Unmatched) != 1 {
				t.Fatalf("screen after the switch: %+v, %v; want the new register's company unmatched", res, err)
			}
			if how, err := f.rs.CompleteRegister(ctx); err != nil || how != "" {
				t.Fatalf("CompleteRegister = %q, %v", how, err)
			}
			f.expectTTLs(t, second.v, true, "live after CompleteRegister")
			f.expectTTLs(t, first.v, false, "replaced after CompleteRegister")
			if n := f.rdb.Exists(ctx, f.rs.key(regKey, "settle")).Val(); n != 0 {
				t.Error("reg:settle is left after the settle")
			}
		})
	}
}

// TestStaleSettlerPutsBack: a settler that read reg:v and then stalled
// while another load switched and settled makes the generation it read
// persistent after that settle has let it expire; it must see reg:v
// changed, put that generation back in reg:settle and settle again, so
// it still expires.
func TestStaleSettlerPutsBack(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, Options{})
	a := f.loadRows(t, spreadRows(3, "A"))
	if err := a.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	b := f.loadRows(t, spreadRows(4, "B"))
	restore := killAt(f.rdb, after(switchRegisterScript))
	if err := b.Commit(ctx); err == nil {
		t.Fatal("premise: the load was not stopped after its switch")
	}
	restore()
	c := f.loadRows(t, spreadRows(5, "C"))
	// The settler stalls just before making B's ids strings persistent:
	// meanwhile C's load switches and settles whole.
	var fired atomic.Bool
	var cErr error
	restore = onCommand(f.rdb, func(cmd redis.Cmder) error {
		if cmd.Name() == "persist" && !fired.Swap(true) {
			cErr = c.Commit(ctx)
		}
		return nil
	})
	_, err := f.rs.CompleteRegister(ctx)
	restore()
	if err != nil || cErr != nil || !fired.Load() {
		t.Fatalf("CompleteRegister: %v; C's commit during its settle: %v (ran: %v)", err, cErr, fired.Load())
	}
	if v := f.rdb.Get(ctx, f.rs.key(regKey, "v")).Val(); v != c.v {
		t.Fatalf("reg:v = %q, want C's %s", v, c.v)
	}
	f.expectTTLs(t, c.v, true, "C, live")
	f.expectTTLs(t, b.v, false, "B, replaced while its settler stalled")
	f.expectTTLs(t, a.v, false, "A, replaced")
	if n := f.rdb.Exists(ctx, f.rs.key(regKey, "settle")).Val(); n != 0 {
		t.Error("reg:settle is left after the settle")
	}
}
