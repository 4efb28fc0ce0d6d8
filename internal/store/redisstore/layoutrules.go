package redisstore

import (
	"slices"
	"strconv"
	"strings"
)

// The phases of an upgrade from the tagged layout, in order: each runs all
// its rules (a full pass over the namespace's keys, again until a pass
// does nothing) before the next, so a later phase relies on what an
// earlier one finished, also in a run that finishes a stopped one.
const (
	phaseCheck     = iota // stops before anything moves
	phaseDirectory        // the watch directory {ns}:wacct, before any watch key moves
	phaseKeys             // whole keys to their new names
	phaseMembers          // the shared queues split into the accounts'
	phaseLeftovers        // the shared keys nothing reads any more, deleted last
)

// ruleKind is what a rule does with a key it matches.
type ruleKind int

const (
	kindMove      ruleKind = iota // the key to its new name to(...); "" deletes it, keep copies it
	kindDirectory                 // {ns}:wacct <watch> = the value read; the key stays
	kindMembers                   // each member (hash field) to to(ns, rest, A), A its watch's account
	kindCheck                     // nothing: the upgrade stops when the read finds nothing
)

// layoutRule is the step of one key family from the tagged layout (every
// key under "{ns}:") to the sharded one (docs/redis.md, "Upgrading to the
// sharded layout"), for a key of the namespace whose name after "{ns}:"
// match accepts. read, when set, names the value the new name depends on,
// for the key's rest (kindMembers: for each member): the hash field (""
// the string value) of the key "{ns}:<key>"; reading the key itself, a
// key gone meanwhile is skipped; reading another (the directory), finding
// nothing drops the key or member when orphan is "", else stops the
// upgrade with the advice orphan. to(ns, rest, value) is the new name
// ("" deletes the key); keep leaves the old key where it is (a copy).
type layoutRule struct {
	family string
	phase  int
	kind   ruleKind
	match  func(rest string) bool
	read   func(rest string) (key, field string)
	orphan string
	job    bool // members are mail job ids: one whose job hash (moved before) is gone is dropped
	keep   bool
	to     func(ns, rest, value string) string
}

// layoutRules are the families that move, one row each. A key no rule
// matches stays where it is (what the whole namespace shares: the publish
// log, the reverse index rix, rixs, fo, wsv, mdw, mlasterr, match:*, ...).
// The new names are keys.go's (akeyOf, idsKeyOf); every watch key goes to
// the account the directory {ns}:wacct names for its watch (written first
// from each watch's account field and each unfinished delete's
// trash:<id>:acct), so a run stopped once a watch's keys began to move
// still places the rest.
var layoutRules = []layoutRule{
	{family: "deletes under way", phase: phaseCheck, kind: kindCheck, match: idKeys(trashKey, "keys", "ixabn", "co", "dr"),
		read: func(rest string) (string, string) { return trashKey + ":" + idOf(rest) + ":acct", "" },
		orphan: "is a watch delete an older version began, without its account (trash:<id>:acct); start the previous " +
			"version's worker once to finish it (its sweep does within a minute), stop it, then start again"},

	{family: "watch directory", phase: phaseDirectory, kind: kindDirectory, match: idKeys(watchKey, ""), read: own("account")},
	{family: "watch directory", phase: phaseDirectory, kind: kindDirectory, match: idKeys(trashKey, "acct"), read: own("")},

	{family: "accounts", phase: phaseKeys, match: isAccountHash,
		to: func(ns, rest, _ string) string { return akeyOf(ns, strings.TrimPrefix(rest, acctKey+":"), acctKey) }},
	{family: "api keys", phase: phaseKeys, match: idKeys(apikeyKey, ""), read: own("account"), keep: true, to: underAccount},
	{family: "register identifier sets", phase: phaseKeys, match: isRegisterIDs,
		to: func(ns, rest, _ string) string {
			parts := strings.Split(rest, ":") // reg:<v>:ids:<b>
			b, _ := strconv.ParseUint(parts[3], 10, 32)
			return idsKeyOf(ns, parts[1], uint32(b))
		}},
	{family: "rate buckets (deleted)", phase: phaseKeys, match: func(rest string) bool { return strings.HasPrefix(rest, "limit:rate:") }, to: none},
	{family: "heavy slots (deleted)", phase: phaseKeys, match: func(rest string) bool { return strings.HasPrefix(rest, "limit:heavy:") }, to: none},
	{family: "account watch lists", phase: phaseKeys, match: idKeys(acctKey, watchesKey, companiesKey),
		to: func(ns, rest, _ string) string { // acct:<id>:watches
			parts := strings.Split(rest, ":")
			return akeyOf(ns, parts[1], parts[2])
		}},
	{family: "watches", phase: phaseKeys, match: idKeys(watchKey, "", "co", "keys"), read: inDirectory(idOf), orphan: ownerless, to: underAccount},
	{family: "match logs", phase: phaseKeys, match: idKeys(matchLogKey, ""), read: inDirectory(idOf), orphan: ownerless, to: underAccount},
	{family: "deliveries", phase: phaseKeys, match: anyOf(idKeys(recordsKey, ""), idKeys(deliveriesKey, ""), idKeys(finalKey, "")),
		read: inDirectory(idOf), orphan: ownerless, to: underAccount},
	{family: "mail", phase: phaseKeys, match: idKeys(digestKey, ""), read: inDirectory(idOf), orphan: ownerless, to: underAccount},
	{family: "mail", phase: phaseKeys, match: func(rest string) bool { return strings.HasPrefix(rest, mailKey+":") },
		read: inDirectory(func(rest string) string { return jobWatch(strings.TrimPrefix(rest, mailKey+":")) }), to: underAccount},
	{family: "deletes under way", phase: phaseKeys, match: idKeys(trashKey, "keys", "ixabn", "co", "dr"), read: inDirectory(idOf), orphan: ownerless, to: underAccount},

	{family: "delivery queues", phase: phaseMembers, kind: kindMembers, match: is(outboxKey, ddueKey, dleaseKey), to: underAccount,
		read: inDirectory(func(m string) string { w, _, _ := strings.Cut(m, "|"); return w })}, // <watch>|<delivery>|<seq>
	{family: "create leases", phase: phaseMembers, kind: kindMembers, match: is(createsKey), read: inDirectory(same), to: underAccount},
	{family: "delete leases", phase: phaseMembers, kind: kindMembers, match: is(trashKey), read: inDirectory(same), to: underAccount},
	{family: "reactivations", phase: phaseMembers, kind: kindMembers, match: is(wrelKey), read: inDirectory(same), to: underAccount},
	{family: "owed deactivations", phase: phaseMembers, kind: kindMembers, match: is(wdeactKey), read: inDirectory(same), to: underAccount},
	{family: "mail queues", phase: phaseMembers, kind: kindMembers, match: is(mailQueueKey, mailDeadKey), read: inDirectory(jobWatch), job: true, to: underAccount},

	{family: "shared watch sets (deleted)", phase: phaseLeftovers, match: is(watchesKey, winactiveKey, dstatKey), to: none},
	{family: "deletes under way", phase: phaseLeftovers, match: idKeys(trashKey, "acct"), to: none},
	{family: "staged companies (deleted)", phase: phaseLeftovers, match: idKeys(stageKey, "co"), to: none},
}

// ownerless is the advice for a watch's key whose watch has no account: no
// such watch, no delete under way.
const ownerless = "belongs to no watch (no w:<id>, no delete under way: what an older version left by mistake); remove it, then start again"

// isAccountHash: acct:<id>, an account's hash (not acct:seq, acct:lapsed
// or acct:<id>:watches and the like).
func isAccountHash(rest string) bool {
	return idKeys(acctKey, "")(rest) && rest != "acct:seq" && rest != "acct:lapsed"
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

// idKeys matches <family>:<id> (part "") and <family>:<id>:<part> of
// each part given, id one non-empty part (an account's, a key hash, a
// watch's).
func idKeys(family string, parts ...string) func(string) bool {
	return func(rest string) bool {
		p := strings.Split(rest, ":")
		return p[0] == family && len(p) >= 2 && len(p) <= 3 && p[1] != "" &&
			slices.Contains(parts, strings.Join(p[2:], ""))
	}
}

// idOf is the <id> of <family>:<id>[:<part>].
func idOf(rest string) string { return strings.Split(rest, ":")[1] }

// jobWatch is the watch of mail job id job, "<kind>:<watch>:<when>"
// (mail.Job.ID; the same as its hash's watch field), "" if none.
func jobWatch(job string) string {
	p := strings.Split(job, ":")
	if len(p) != 3 || p[1] == "" {
		return ""
	}
	return p[1]
}

// is matches the rests given.
func is(rests ...string) func(string) bool {
	return func(rest string) bool { return slices.Contains(rests, rest) }
}

// anyOf matches what one of ms matches.
func anyOf(ms ...func(string) bool) func(string) bool {
	return func(rest string) bool {
		return slices.ContainsFunc(ms, func(m func(string) bool) bool { return m(rest) })
	}
}

// own reads field of the key itself ("" its string value).
func own(field string) func(string) (string, string) {
	return func(rest string) (string, string) { return rest, field }
}

// inDirectory reads the account of watch(rest) in the directory wacct.
func inDirectory(watch func(string) string) func(string) (string, string) {
	return func(rest string) (string, string) { return wacctKey, watch(rest) }
}

// underAccount is rest under account acct's tag.
func underAccount(ns, rest, acct string) string { return akeyOf(ns, acct, rest) }

func same(s string) string { return s }

func none(string, string, string) string { return "" }
