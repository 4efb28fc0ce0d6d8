package redisstore

import "strings"

// Every key of the store is built here: s.key(family, parts...) is
// "{<namespace>}:<family>:<part>:...", the one hash tag of the namespace
// (keyspace.Prefix), so every key of a namespace is in one Redis Cluster
// slot and every Lua script, which takes all the keys it touches in KEYS,
// runs on a cluster. docs/redis.md's key table lists the families, and
// TestKeyFamiliesDocumented checks it against what a workload writes.
const (
	acctKey    = "acct"   // acct:<id> hash, acct:<id>:watches, acct:<id>:companies, acct:seq
	acctsKey   = "accts"  // account ids by creation number
	apikeyKey  = "apikey" // apikey:<sha256>: a key's record
	lapsedKey  = "acct:lapsed"
	watchKey   = "w"       // w:<id> hash, w:<id>:co, w:<id>:keys
	watchesKey = "watches" // every watch id
	// winactive: the inactive watches (gauge).
	winactiveKey  = "winactive"
	filterOnlyKey = "fo"    // the filter-only watches
	matchLogKey   = "wm"    // wm:<id>: a watch's match log
	watchSetKey   = "wsv"   // the watch-set version
	createsKey    = "wpend" // watches whose create has not finished
	stageKey      = "stage" // stage:<id>:co: a create's staged companies
	rixKey        = "rix"   // rix:<bucket>: the reverse index
	rixsKey       = "rixs"  // rixs:<key>: further watches holding a key
	trashKey      = "trash" // trash and trash:<id>:*: deletes not finished
	regKey        = "reg"   // reg:v, reg:next, reg:<v>:*, reg:pending*
	recordsKey    = "dr"    // dr:<id>: a watch's delivery records
	outboxKey     = "dq"    // deliveries that need an asynq task
	deliveriesKey = "dl"    // dl:<id>: a watch's deliveries, newest first
	finalKey      = "df"    // df:<id>: a watch's final deliveries
	mailKey       = "mail"  // mail:<job id>
	mailQueueKey  = "mq"    // pending mail jobs by due time
	mailDeadKey   = "mdead" // dead mail jobs
	mailErrKey    = "mlasterr"
	digestKey     = "mpd" // mpd:<watch>: its digest pending
	digestsKey    = "mdw" // the last digest window queued
	// wrel is the set of reactivated watches whose held deliveries are not
	// yet released, and wdeact the hash of watches owed a deactivation
	// (id -> {"n", "e", "at"}): the second steps of two-step changes,
	// finished by Reconcile if the process making them stopped first.
	wrelKey   = "wrel"
	wdeactKey = "wdeact"
	dstatKey  = "dstat"
	ddueKey   = "ddue"
	// dlease holds the attempts in flight by the end of their lease (ms):
	// one whose lease ran out was cut short (its worker died) and is run
	// again by a recovery task (ledger.go, LapsedAttempts).
	dleaseKey = "dlease"
	// wait is the mark an acknowledged write increments on the connection
	// it then sends WAIT on (durable.go).
	waitMarkKey = "wait"
)

// key returns the namespaced key of the parts joined by ':'.
func (s *Store) key(parts ...string) string {
	return s.ns + strings.Join(parts, ":")
}
