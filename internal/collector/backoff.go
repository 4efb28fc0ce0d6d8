package collector

import "time"

// Backoff constants: after the n-th consecutive failure the next run waits
// BackoffBase * 2^(n-1), varied by ±BackoffJitter, and never longer than
// the interval.
const (
	BackoffBase   = 30 * time.Second
	BackoffJitter = 0.2
)

// Delay is the wait before the next run, given the collect interval, the
// consecutive failures so far and r, a random number in [0, 1).
//
// With no failure it is the interval: runs start every interval. After
// failure n (1, 2, ...) it is min(interval, 30s * 2^(n-1)) scaled by a
// factor between 0.8 and 1.2 (r = 0.5 gives exactly 1), then capped at the
// interval: 30s, 1m, 2m, 4m, ... until it reaches the interval, so a source
// that comes back is picked up quickly and a source that stays down is
// tried about once an interval, never less often than when healthy.
func Delay(interval time.Duration, failures int, r float64) time.Duration {
	if failures <= 0 {
		return interval
	}
	d := BackoffBase
	for i := 1; i < failures && d < interval; i++ {
		d *= 2
	}
	d = min(d, interval)
	r = min(max(r, 0), 1)
	d = time.Duration(float64(d) * (1 + BackoffJitter*(2*r-1)))
	return min(d, interval)
}
