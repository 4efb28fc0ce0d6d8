package main

import "strings"

// nearestCommand returns the command name closest to name, for "did you
// mean": the only one name is a prefix of, else the nearest in edits
// (Levenshtein) if within a third of its length (at least 2; the first of
// names wins a tie). "" when none is near.
func nearestCommand(name string, names []string) string {
	name = strings.ToLower(name)
	var prefixed []string
	best, bestDist := "", -1
	for _, n := range names {
		if name != "" && strings.HasPrefix(n, name) {
			prefixed = append(prefixed, n)
		}
		if d := editDistance(name, n); bestDist < 0 || d < bestDist {
			best, bestDist = n, d
		}
	}
	if len(prefixed) == 1 {
		return prefixed[0]
	}
	if bestDist < 0 || bestDist > max(2, len(best)/3) {
		return ""
	}
	return best
}

// editDistance is the Levenshtein distance between a and b (in bytes:
// command names are ASCII).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
