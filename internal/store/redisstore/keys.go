package redisstore

import (
	"strconv"
	"strings"

	"github.com/noticesd/noticesd/internal/keyspace"
)

// Every key of the store is built here: s.key(family, parts...) is
// "{<namespace>}:<family>:<part>:...", under the namespace's hash tag
// (keyspace.Prefix), for what is shared; s.akey(account, family,
// parts...) is "{<namespace>:a:<account>}:<family>:...", under the
// account's tag (keyspace.Account), for what one account owns (its
// watches, match logs, deliveries, mail and their queues). Every Lua
// script takes all the keys it touches in KEYS, all under one tag, so it
// runs on a cluster. docs/redis.md's key table says what each family holds, and
// TestKeyFamiliesDocumented checks it against what a workload writes.
const (
	acctKey       = "acct" // akey(id, acct); under {ns}: acct:seq, acct:lapsed
	companiesKey  = "companies"
	acctsKey      = "accts"
	apikeyKey     = "apikey" // akey(id, apikey, h): the key record; key(apikey, h): the directory
	lapsedKey     = "acct:lapsed"
	lapsedVerKey  = "acct:lapsed:v"
	watchKey      = "w" // w:<id>, w:<id>:co, w:<id>:keys
	watchesKey    = "watches"
	winactiveKey  = "winactive"
	filterOnlyKey = "fo"
	matchLogKey   = "wm"
	watchSetKey   = "wsv"
	createsKey    = "wpend"
	stageKey      = "stage"
	rixKey        = "rix"
	rixsKey       = "rixs"
	trashKey      = "trash"
	regKey        = "reg"
	recordsKey    = "dr"
	outboxKey     = "dq"
	deliveriesKey = "dl"
	finalKey      = "df"
	mailKey       = "mail"
	mailQueueKey  = "mq"
	mailDeadKey   = "mdead"
	mailErrKey    = "mlasterr"
	digestKey     = "mpd"
	digestsKey    = "mdw"
	wrelKey       = "wrel"
	wdeactKey     = "wdeact"
	dstatKey      = "dstat"
	ddueKey       = "ddue"
	dleaseKey     = "dlease"
	waitMarkKey   = "wait"
	wacctKey      = "wacct"  // watch id -> account (shared directory)
	wakeKey       = "wake"   // wake:<queue>: account ids by when to look (shared)
	gaugesKey     = "gauges" // set once the per-account gauges were computed
)

// key returns the namespaced key of the parts joined by ':'.
func (s *Store) key(parts ...string) string {
	return s.ns + strings.Join(parts, ":")
}

// akey returns the key of the parts joined by ':' under account id's own
// hash tag, "{<namespace>:a:<id>}:" (keyspace.Account): what one account
// owns (its record acct, its key records apikey:<sha256>; the request
// limiter's buckets and heavy set are limit.RateKey's and limit.HeavyKeys's)
// is in the account's slot, so a request's key check is one script call
// there, and accounts spread over a cluster's masters.
func (s *Store) akey(id string, parts ...string) string { return akeyOf(s.name, id, parts...) }

// akeyOf is akey of namespace ns (the migration's rules build the same
// names).
func akeyOf(ns, id string, parts ...string) string {
	return keyspace.Account(ns, id) + strings.Join(parts, ":")
}

// keyOf is key of namespace ns.
func keyOf(ns string, parts ...string) string {
	return keyspace.Prefix(ns) + strings.Join(parts, ":")
}

// regGroups is how many slot groups (keyspace.Group) the register's ids
// strings are spread over, so that no one master of a Redis Cluster holds
// them all (the migration of a namespace moves them by the same rule).
const regGroups = 64

// idsKey returns ids string b of register generation v:
// "{<namespace>:g<b % regGroups>}:reg:<v>:ids:<b>".
func (s *Store) idsKey(v string, b uint32) string { return idsKeyOf(s.name, v, b) }

// idsKeyOf is idsKey of namespace ns (the migration's rule builds the
// same name).
func idsKeyOf(ns, v string, b uint32) string {
	return keyspace.Group(ns, int(b%regGroups)) + regKey + ":" + v + ":ids:" + strconv.FormatUint(uint64(b), 10)
}
