package metrics

import "testing"

// TestCountRedis: the Redis connection counts show on each scrape as
// counters, read at scrape time; a nil *Metrics ignores them.
func TestCountRedis(t *testing.T) {
	m := New(nil, nil)
	c := RedisCounts{Dials: 4, DialErrors: 2, Reconnects: 3, Failovers: 1}
	m.CountRedis(func() RedisCounts { return c })
	for _, tc := range []struct {
		name string
		want map[string]float64
	}{
		{"first scrape", map[string]float64{
			"noticesd_redis_dials_total{outcome=ok}": 4, "noticesd_redis_dials_total{outcome=failed}": 2,
			"noticesd_redis_reconnects_total{}": 3, "noticesd_redis_failovers_total{}": 1,
		}},
		{"after a second failover", map[string]float64{
			"noticesd_redis_dials_total{outcome=ok}": 5, "noticesd_redis_dials_total{outcome=failed}": 2,
			"noticesd_redis_reconnects_total{}": 5, "noticesd_redis_failovers_total{}": 2,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := scrape(t, m)
			for k, v := range tc.want {
				if g, ok := got[k]; !ok || g != v {
					t.Errorf("%s = %v (present %v), want %v", k, g, ok, v)
				}
			}
		})
		c = RedisCounts{Dials: 5, DialErrors: 2, Reconnects: 5, Failovers: 2}
	}
	var none *Metrics
	none.CountRedis(func() RedisCounts { return c })
}

// TestCountScreenCopy: the screen copy's counts show on each scrape as
// counters; a nil *Metrics ignores them.
func TestCountScreenCopy(t *testing.T) {
	m := New(nil, nil)
	c := ScreenCopyCounts{FromCopy: 7, FromRedis: 2, Loads: 3, Behind: 1}
	m.CountScreenCopy(func() ScreenCopyCounts { return c })
	got := scrape(t, m)
	for k, v := range map[string]float64{
		"noticesd_screen_copy_screens_total{source=copy}": 7, "noticesd_screen_copy_screens_total{source=redis}": 2,
		"noticesd_screen_copy_loads_total{}": 3, "noticesd_screen_copy_behind_total{}": 1,
	} {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("%s = %v (present %v), want %v", k, g, ok, v)
		}
	}
	var none *Metrics
	none.CountScreenCopy(func() ScreenCopyCounts { return c })
}
