package notice

import (
	"sort"
	"unicode"
	"unicode/utf8"

	"github.com/noticesd/noticesd/internal/ident"
	"github.com/noticesd/noticesd/internal/query"
)

// Filter is the set of filters shared by search, filters, stats, watches and
// the bulk screen. Empty slices do not filter. Values match case-insensitively.
type Filter struct {
	AppointmentType []string
	NoticePurpose   []string
	NoticeCode      []string
	State           []string
	Status          []string
	// Q is the parsed `q`, nil when absent.
	Q query.Node
	// IncludeDeregistration includes notices whose notice_purpose is
	// Deregistration.
	IncludeDeregistration bool
	// From and To are inclusive YYYY-MM-DD bounds on published_date; "" is open.
	From, To string
	// Company, when set, limits results to one company: notices whose acn or
	// abn is the identifier, or which belong to the company it resolves to
	// through the register (ABN -> ACN and ACN -> ABN).
	Company *ident.ID
}

// Sort orders of search results. Ties break on notice_seq descending.
const (
	SortPublishedDesc = "published_desc"
	SortPublishedAsc  = "published_asc"
	SortRelevance     = "relevance"
)

// SearchQuery is one page of a notice search.
type SearchQuery struct {
	Filter
	Sort  string // one of the Sort constants; never empty
	Limit int    // 1..100
	Page  int    // from 1
}

// SearchPage is one page of search results with the exact total.
type SearchPage struct {
	Notices []Notice
	Total   int64
}

// ValueCount is one allowed filter value and how many notices carry it.
type ValueCount struct {
	Value string `json:"value"`
	Count int64  `json:"count"`
}

// FilterCounts is the /v1/filters response: each list sorted by count desc
// (then value asc).
type FilterCounts struct {
	Total           int64        `json:"total"`
	AppointmentType []ValueCount `json:"appointment_type"`
	NoticePurpose   []ValueCount `json:"notice_purpose"`
	NoticeCode      []ValueCount `json:"notice_code"`
	State           []ValueCount `json:"state"`
	Status          []ValueCount `json:"status"`
}

// Group-by keys accepted by /v1/stats.
var GroupByKeys = []string{"appointment_type", "notice_purpose", "state", "notice_code", "month"}

// StatsQuery asks for grouped counts.
type StatsQuery struct {
	Filter
	GroupBy string // one of GroupByKeys
}

// Bucket is one group of a stats answer.
type Bucket struct {
	Key   string `json:"key"`
	Count int64  `json:"count"`
}

// Stats is the /v1/stats answer. Backends return buckets as they find them;
// FinishStats orders them and fills empty months.
type Stats struct {
	GroupBy string   `json:"group_by"`
	Total   int64    `json:"total"`
	Data    []Bucket `json:"data"`
}

// IndexStatus is the index block of /health.
type IndexStatus struct {
	Notices             int64   `json:"notices"`
	LatestNoticeSeq     int64   `json:"latest_notice_seq"`
	LatestPublishedDate *string `json:"latest_published_date"`
}

// SortedCounts turns counts by exact spelling into a FilterCounts list:
// spellings that differ only in case are one value (FoldSpellings), then
// count descending, then value ascending.
func SortedCounts(m map[string]int64) []ValueCount {
	m = FoldSpellings(m)
	out := make([]ValueCount, 0, len(m))
	for v, n := range m {
		out = append(out, ValueCount{Value: v, Count: n})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Count != out[j].Count {
			return out[i].Count > out[j].Count
		}
		return out[i].Value < out[j].Value
	})
	return out
}

// FoldedBuckets is FoldSpellings of counts by exact spelling as stats
// buckets, count descending, then key ascending (a stable order, as
// FinishStats gives them).
func FoldedBuckets(m map[string]int64) []Bucket {
	out := []Bucket{}
	for _, vc := range SortedCounts(m) {
		out = append(out, Bucket{Key: vc.Value, Count: vc.Count})
	}
	return out
}

// FoldSpellings merges the counts of spellings that differ only in case
// (as strings.EqualFold; the filters compare values so) into one entry, under
// the spelling counted most often, the first in byte order among equals:
// "Appointment" ×1,940 and "appointment" ×1 are "Appointment" ×1,941. Both
// backends count by exact spelling and fold here, so they show the same
// spelling whatever order the notices arrived in. m is not changed.
func FoldSpellings(m map[string]int64) map[string]int64 {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if m[keys[i]] != m[keys[j]] {
			return m[keys[i]] > m[keys[j]]
		}
		return keys[i] < keys[j]
	})
	out := make(map[string]int64, len(m))
	chosen := make(map[string]string, len(m)) // fold key -> the spelling shown
	for _, k := range keys {
		f := foldKey(k)
		into, ok := chosen[f]
		if !ok {
			into = k
			chosen[f] = k
		}
		out[into] += m[k]
	}
	return out
}

// foldKey maps s to a key shared by exactly the strings strings.EqualFold
// holds equal to it: each rune becomes the smallest rune of its case
// folding orbit (unicode.SimpleFold).
func foldKey(s string) string {
	if k, ok := asciiFoldKey(s); ok {
		return k
	}
	return slowFoldKey(s)
}

// asciiFoldKey is foldKey of an all-ASCII s, without a case-folding
// table lookup per rune: an ASCII letter's smallest orbit rune is its
// upper case (the orbit's other runes, such as U+212A KELVIN SIGN, are
// above ASCII), and other ASCII runes fold only to themselves
// (TestASCIIFoldKey). ok is false when s is not all ASCII.
// BenchmarkFoldKey: the 46 values of a /v1/filters answer 24.4 us rune by
// rune, 8.4 us with it.
func asciiFoldKey(s string) (string, bool) {
	upper := true
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= utf8.RuneSelf {
			return "", false
		}
		if 'a' <= c && c <= 'z' {
			upper = false
		}
	}
	if upper {
		return s, true
	}
	b := []byte(s)
	for i, c := range b {
		if 'a' <= c && c <= 'z' {
			b[i] = c - ('a' - 'A')
		}
	}
	return string(b), true
}

// slowFoldKey is foldKey rune by rune.
func slowFoldKey(s string) string {
	b := make([]rune, 0, len(s))
	for _, r := range s {
		low := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			low = min(low, f)
		}
		b = append(b, low)
	}
	return string(b)
}
