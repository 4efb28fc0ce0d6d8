package notice

import (
	"sort"
	"strconv"
)

// MaxFilledMonths bounds the zero-filling of FinishStats: a month range
// longer than this (a century) is filled only between the first and last
// month that has notices.
const MaxFilledMonths = 1200

// FillsRange reports whether FinishStats fills every month of from..to
// (both YYYY-MM-DD): a closed, ordered range of at most MaxFilledMonths
// months. Backends that ask their engine for the empty months themselves
// do so exactly then, so every backend gives the same series.
func FillsRange(from, to string) bool {
	first, last := month(from), month(to)
	return first >= 0 && last >= first && last-first < MaxFilledMonths
}

// FinishStats puts a backend's buckets in API order. Month buckets are
// sorted ascending, with every month between from and to (YYYY-MM-DD,
// inclusive; "" is open, and an open end falls back to the first or last
// month with notices) present, 0 when empty. Other groupings are sorted by
// count descending, then key ascending. Buckets with the same key are merged.
func FinishStats(s *Stats, from, to string) {
	merged := make(map[string]int64, len(s.Data))
	for _, b := range s.Data {
		merged[b.Key] += b.Count
	}
	s.Data = s.Data[:0]
	if s.Data == nil {
		s.Data = []Bucket{}
	}
	for k, n := range merged {
		s.Data = append(s.Data, Bucket{Key: k, Count: n})
	}
	if s.GroupBy != "month" {
		sort.Slice(s.Data, func(i, j int) bool {
			if s.Data[i].Count != s.Data[j].Count {
				return s.Data[i].Count > s.Data[j].Count
			}
			return s.Data[i].Key < s.Data[j].Key
		})
		return
	}
	sort.Slice(s.Data, func(i, j int) bool { return s.Data[i].Key < s.Data[j].Key })
	first, last := month(from), month(to)
	if len(s.Data) > 0 {
		if first < 0 || (last >= 0 && last-first >= MaxFilledMonths) {
			first = max(first, month(s.Data[0].Key+"-01"))
		}
		if last < 0 || last-first >= MaxFilledMonths {
			last = min2(last, month(s.Data[len(s.Data)-1].Key+"-01"))
		}
	}
	if first < 0 || last < 0 || last < first || last-first >= MaxFilledMonths {
		return
	}
	filled := make([]Bucket, 0, last-first+1)
	for m := first; m <= last; m++ {
		key := monthKey(m)
		filled = append(filled, Bucket{Key: key, Count: merged[key]})
		delete(merged, key)
	}
	// Months outside [from, to] (none when the backend applied the same
	// bounds) keep their place in order.
	for k, n := range merged {
		filled = append(filled, Bucket{Key: k, Count: n})
	}
	sort.Slice(filled, func(i, j int) bool { return filled[i].Key < filled[j].Key })
	s.Data = filled
}

// month returns the month number (year*12 + month-1) of a YYYY-MM-DD date,
// or -1 when it is not one.
func month(date string) int {
	if _, ok := ParseDate(date); !ok {
		return -1
	}
	y, _ := strconv.Atoi(date[:4])
	m, _ := strconv.Atoi(date[5:7])
	return y*12 + m - 1
}

func monthKey(m int) string {
	y, mm := m/12, m%12+1
	return pad(y, 4) + "-" + pad(mm, 2)
}

func pad(n, width int) string {
	s := strconv.Itoa(n)
	for len(s) < width {
		s = "0" + s
	}
	return s
}

// min2 is min where -1 means "no bound".
func min2(a, b int) int {
	if a < 0 {
		return b
	}
	return min(a, b)
}
