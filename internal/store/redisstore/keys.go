package redisstore

import (
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
	acctKey       = "acct" // acct:<id>, acct:seq
	companiesKey  = "companies"
	acctsKey      = "accts"
	apikeyKey     = "apikey"
	lapsedKey     = "acct:lapsed"
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

// akey returns the key of the parts joined by ':' under account's hash tag.
func (s *Store) akey(account string, parts ...string) string {
	return keyspace.Account(s.name, account) + strings.Join(parts, ":")
}
