package redisstore

import (
	"strconv"
	"strings"

	"github.com/noticesd/noticesd/internal/keyspace"
)

// layoutRule is the step of one key family from the tagged layout (every
// key under "{ns}:") to the sharded one (docs/redis.md, "Upgrading to the
// sharded layout"): a key of the namespace whose name after "{ns}:" match
// accepts goes to its new name to(ns, rest, field), where field is the
// value of the hash field read (when set) of the old key. An empty name
// deletes the key; keep leaves the old key where it is (a copy).
type layoutRule struct {
	family string
	match  func(rest string) bool
	read   string
	keep   bool
	to     func(ns, rest, field string) string
}

// layoutRules are the families that move, one row each. A key no rule
// matches stays where it is (what the whole namespace shares).
// The new names are keys.go's (keyspace.Account, idsKeyOf).
var layoutRules = []layoutRule{
	{family: "accounts", match: isAccountHash,
		to: func(ns, rest, _ string) string {
			return keyspace.Account(ns, strings.TrimPrefix(rest, acctKey+":")) + acctKey
		}},
	{family: "api keys", match: func(rest string) bool { return oneMore(rest, "apikey:") }, read: "account", keep: true,
		to: func(ns, rest, account string) string { return keyspace.Account(ns, account) + rest }},
	{family: "register identifier sets", match: isRegisterIDs,
		to: func(ns, rest, _ string) string {
			parts := strings.Split(rest, ":") // reg:<v>:ids:<b>
			b, _ := strconv.ParseUint(parts[3], 10, 32)
			return idsKeyOf(ns, parts[1], uint32(b))
		}},
	{family: "rate buckets (deleted)", match: func(rest string) bool { return strings.HasPrefix(rest, "limit:rate:") },
		to: func(string, string, string) string { return "" }},
	{family: "heavy slots (deleted)", match: func(rest string) bool { return strings.HasPrefix(rest, "limit:heavy:") },
		to: func(string, string, string) string { return "" }},
}

// isAccountHash: acct:<id>, an account's hash (not acct:seq, acct:lapsed
// or acct:<id>:watches and the like).
func isAccountHash(rest string) bool {
	return oneMore(rest, "acct:") && rest != "acct:seq" && rest != "acct:lapsed"
}

// isRegisterIDs: reg:<v>:ids:<b>.
func isRegisterIDs(rest string) bool {
	parts := strings.Split(rest, ":")
	if len(parts) != 4 || parts[0] != "reg" || parts[2] != "ids" {
		return false
	}
	_, err := strconv.ParseUint(parts[3], 10, 32)
	return err == nil
}

// oneMore reports whether rest is prefix and one more non-empty part.
func oneMore(rest, prefix string) bool {
	id, ok := strings.CutPrefix(rest, prefix)
	return ok && id != "" && !strings.Contains(id, ":")
}
