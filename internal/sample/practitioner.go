package sample

import (
	"math/rand/v2"
	"strings"
)

// practitioner is a registered liquidator in the sample's invented pool.
type practitioner struct {
	name, first string
	firm        int
	state       int
	phone       string
	email       string
}

// pool is the practitioners, by state. Every state has at least one.
type pool struct {
	all     []practitioner
	byState [][]int32
}

// newPool builds the practitioner pool: each firm has offices in one to
// four states (weighted to the big three), with two to five practitioners
// in each.
func newPool(r *rand.Rand) *pool {
	p := &pool{byState: make([][]int32, len(states))}
	add := func(firm, st int) {
		first := pick(r, firstNames)
		last := titleCase(pick(r, surnames))
		pr := practitioner{
			name: first + " " + last, first: first, firm: firm, state: st,
			phone: "(" + states[st].area + ") " + digits(r, 4) + " " + digits(r, 4),
		}
		pr.email = asciiLower(first) + "." + asciiLower(strings.ReplaceAll(strings.ReplaceAll(last, " ", ""), "'", "")) + "@" + firmDomain(firm)
		p.byState[st] = append(p.byState[st], int32(len(p.all)))
		p.all = append(p.all, pr)
	}
	for f := range firms {
		offices := 1 + r.IntN(4)
		var used [8]bool
		for range offices {
			st := pickWeighted(r, stateWeights)
			if used[st] {
				continue
			}
			used[st] = true
			for n := 2 + r.IntN(4); n > 0; n-- {
				add(f, st)
			}
		}
	}
	for st := range states {
		if len(p.byState[st]) == 0 {
			add(r.IntN(len(firms)), st)
		}
	}
	return p
}

// choose picks n (1 or 2) practitioners of one firm office, in the given
// state 95% of the time.
func (p *pool) choose(r *rand.Rand, state, n int) (out [2]int32, got int) {
	st := state
	if r.IntN(100) >= 95 {
		st = pickWeighted(r, stateWeights)
	}
	list := p.byState[st]
	a := list[r.IntN(len(list))]
	out[0], got = a, 1
	if n < 2 {
		return out, got
	}
	// A colleague from the same firm and office, when there is one.
	for range 4 {
		b := list[r.IntN(len(list))]
		if b != a && p.all[b].firm == p.all[a].firm {
			out[1], got = b, 2
			break
		}
	}
	return out, got
}

func firmDomain(firm int) string {
	var b []byte
	b = appendSlug(b, firms[firm])
	s := strings.ReplaceAll(string(b), "-", "")
	return s + ".com.au"
}

func digits(r *rand.Rand, n int) string {
	b := make([]byte, n)
	for k := range b {
		b[k] = byte('0' + r.IntN(10))
	}
	return string(b)
}

// asciiLower lower-cases a first name and folds the few accented letters
// the word lists use, for e-mail addresses.
func asciiLower(s string) string {
	s = strings.NewReplacer("é", "e", "ë", "e", "É", "e").Replace(s)
	return strings.ToLower(s)
}
