package publog

import "github.com/noticesd/noticesd/internal/keyspace"

// Keys are the Redis keys of one namespace's write path, built here and
// nowhere else, all under the hash tag {<ns>} (the scripts run in one slot
// of a Redis Cluster); docs/redis.md describes each. Old* are the counters
// of the fenced writer of earlier versions, read once when the namespace's
// counters are first made.
type Keys struct {
	Writer       string // the lease: "<token>|<who>", with a time to live
	Queue        string // waiting writers: "<arrival µs>|<token>|<who>", scored by last ask (ms)
	Epoch        string // raised by every acquisition
	Seq          string // the last notice_seq handed out
	Published    string // every notice at or below it ever published is searchable
	Log          string // the publish log: a stream, an entry per published notice
	Trimmed      string // entries below it may have been trimmed away
	Dirty        string // hash (epoch, since): a writer may have left notices unpublished
	Version      string // the notices' data version (answer cache)
	MatchAt      string // arrival matching's cursor in the log: never trimmed past
	MatchThrough string // the notice_seq arrival matching committed through

	OldSeq, OldWatermark, OldVersion string
}

// KeysFor returns the keys of namespace ns.
func KeysFor(ns string) Keys {
	tag := keyspace.Prefix(ns)
	return Keys{
		Writer:       tag + "writer",
		Queue:        tag + "writer:queue",
		Epoch:        tag + "epoch",
		Seq:          tag + "seq",
		Published:    tag + "published",
		Log:          tag + "log",
		Trimmed:      tag + "log:trimmed",
		Dirty:        tag + "dirty",
		Version:      tag + "dv",
		MatchAt:      tag + "match:at",
		MatchThrough: tag + "match:through",
		OldSeq:       tag + "arrival:seq",
		OldWatermark: tag + "arrival:watermark",
		OldVersion:   tag + "arrival:dv",
	}
}
