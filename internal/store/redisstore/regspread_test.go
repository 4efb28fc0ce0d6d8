package redisstore

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/noticesd/noticesd/internal/notice"
)

// testRegisterSpread (TestRedisCluster): a loaded register's ids strings,
// spread over slot groups, are on every master of the cluster: each
// master's own SCAN finds some, and MEMORY USAGE on it gives the bytes of
// them it holds (logged). The register is as wide as the ACNs issued to
// date: 1,080 full strings (17.5 MB).
func testRegisterSpread(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, Options{})
	if _, ok := f.rdb.(*redis.ClusterClient); !ok {
		t.Fatalf("the fixture's client is a %T, not a cluster client", f.rdb)
	}
	const strings = 1080
	rows := make([]notice.RegisterRow, strings)
	for b := range rows {
		a := fmt.Sprintf("%09d", slotNumber(uint32(b*slotsPerPart+slotsPerPart-1))) // its string's last slot: a full string
		rows[b] = notice.RegisterRow{CompanyName: "SPREAD", ACN: a, ABN: formedABN(a), CurrentNameIndicator: "Y"}
	}
	l := f.loadRows(t, rows)
	if err := l.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	keys, bytes := map[string]int{}, map[string]int64{}
	err := ForEachMaster(ctx, f.rdb, func(ctx context.Context, m *redis.Client) error {
		addr := m.Options().Addr
		iter := m.Scan(ctx, 0, "{"+f.ns+":g*}:reg:"+l.v+":ids:*", 1000).Iterator()
		for iter.Next(ctx) {
			n, err := m.MemoryUsage(ctx, iter.Val(), 0).Result()
			if err != nil {
				return err
			}
			mu.Lock()
			keys[addr]++
			bytes[addr] += n
			mu.Unlock()
		}
		return iter.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	masters, err := Masters(ctx, f.rdb)
	if err != nil || len(masters) != 3 {
		t.Fatalf("Masters = %v, %v; want 3", masters, err)
	}
	total := 0
	for _, m := range masters {
		total += keys[m.Addr]
		if keys[m.Addr] == 0 {
			t.Errorf("master %s holds none of the register's ids strings", m.Addr)
		}
		t.Logf("master %s: %d of the %d ids strings, %d bytes (%.1f MiB)", m.Addr, keys[m.Addr], strings, bytes[m.Addr], float64(bytes[m.Addr])/(1<<20))
	}
	if total != strings {
		t.Errorf("the masters hold %d ids strings in all, want %d", total, strings)
	}
}
