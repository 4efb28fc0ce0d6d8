package config

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/noticesd/noticesd/internal/account"
)

// planLimit is one limit of every plan: the row NOTICES_PLAN_<PLAN>_SUFFIX
// of the table stands for one setting per plan (NOTICES_PLAN_FREE_RPS, ...).
type planLimit struct {
	suffix string
	at     func(*account.Plan) *int
}

// planPattern is the table's name of a plan limit.
const planPattern = "NOTICES_PLAN_<PLAN>_"

// planSetting names a plan's setting: NOTICES_PLAN_FREE_RPS.
func planSetting(plan, suffix string) string {
	return "NOTICES_PLAN_" + strings.ToUpper(plan) + "_" + suffix
}

// planNames are the plans of c, smallest first.
func planNames(c Config) []string {
	names := make([]string, 0, len(c.Plans))
	for name := range c.Plans {
		names = append(names, name)
	}
	slices.SortFunc(names, func(a, b string) int { return c.Plans[a].Companies - c.Plans[b].Companies })
	return names
}

// bind is one setting per plan of the defaults.
func (l planLimit) bind(string) []binding {
	var out []binding
	for _, plan := range planNames(Default()) {
		out = append(out, binding{planSetting(plan, l.suffix), l.one(plan)})
	}
	return out
}

// one is the limit of one plan as a value.
func (l planLimit) one(plan string) value {
	at := func(c *Config) *int {
		p := c.Plans[plan]
		return l.at(&p)
	}
	set := func(c *Config, n int) {
		p := c.Plans[plan]
		*l.at(&p) = n
		c.Plans[plan] = p
	}
	return planValue{at: at, put: set}
}

// planValue is one plan's limit: a plan is a struct in a map, so it is
// read and written back whole.
type planValue struct {
	at  func(*Config) *int
	put func(*Config, int)
}

func (v planValue) set(c *Config, s string) error {
	n, err := intAtLeast(1)(s)
	if err != nil {
		return err
	}
	v.put(c, n)
	return nil
}

func (v planValue) get(c Config) string               { return strconv.Itoa(*v.at(&c)) }
func (v planValue) check(name string, c Config) error { return nil }

// defaults is the default of every plan, for the reference: "free 100,
// standard 10000, enterprise 1000000".
func (l planLimit) defaults() string {
	d := Default()
	var parts []string
	for _, name := range planNames(d) {
		parts = append(parts, name+" "+l.one(name).get(d))
	}
	return strings.Join(parts, ", ")
}

// planSettingSuffixes are the settings of each plan (NOTICES_PLAN_<PLAN>_X).
func planSettingSuffixes() []string {
	var out []string
	for _, s := range table {
		if l, ok := s.bind.(planLimit); ok {
			out = append(out, l.suffix)
		}
	}
	return out
}

// unknownPlanSettings refuses NOTICES_PLAN_ names in environ that are not
// settings: a misspelt plan limit would otherwise be ignored without a word.
func unknownPlanSettings(environ []string) error {
	known := map[string]bool{}
	suffixes := planSettingSuffixes()
	for plan := range Default().Plans {
		for _, suffix := range suffixes {
			known[planSetting(plan, suffix)] = true
		}
	}
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "NOTICES_PLAN_") && !known[name] {
			return fmt.Errorf("config: %s is not a setting: the plans are %s, each with _%s (e.g. NOTICES_PLAN_FREE_WATCHES)",
				name, sayList(planNames(Default()), "and"), strings.Join(suffixes, ", _"))
		}
	}
	return nil
}

// checkPlans checks the plans together: every limit that throttles
// requests is at least 1.
func checkPlans(c Config) error {
	for name, p := range c.Plans {
		if p.RequestsPerSecond < 1 || p.Burst < 1 || p.Heavy < 1 {
			return fmt.Errorf("config: plan %s needs a request rate, burst and heavy limit of at least 1 (NOTICES_PLAN_%s_RPS, _BURST, _HEAVY)", name, strings.ToUpper(name))
		}
	}
	return nil
}

// sayList writes words as a list: "a, b and c" (join "and" or "or").
func sayList(words []string, join string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " " + join + " " + words[len(words)-1]
}
