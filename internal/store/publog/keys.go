package publog

import "github.com/noticesd/noticesd/internal/keyspace"

// Keys are the Redis keys of one namespace's write path, built here and
// nowhere else. The writer's own keys share the hash tag {<ns>}, so the
// scripts that touch them run in one slot on a Redis Cluster. Old* are
// the keys the fenced writer of earlier versions kept its counters in,
// read once when the namespace's counters are first made.
type Keys struct {
	// Writer is the writer lease: "<token>|<who>", with a time to live.
	Writer string
	// Queue holds the writers waiting for the lease: member
	// "<arrival µs>|<token>|<who>", score the last time it asked (ms).
	Queue string
	// Epoch grows by one at every acquisition of the lease.
	Epoch string
	// Seq is the last notice_seq handed out.
	Seq string
	// Published is the highest notice_seq published: every notice at or
	// below it that was ever published is searchable.
	Published string
	// Log is the publish log: a stream, one entry per published notice.
	Log string
	// Trimmed is the lowest entry id the log may still hold: entries
	// below it may have been trimmed away.
	Trimmed string
	// Dirty is a hash (epoch, since) saying that a writer under that epoch
	// may have written notices it has not published yet.
	Dirty string
	// Version is the notices' data version (answer cache).
	Version string
	// MatchAt is the id of the last log entry arrival matching committed
	// (the matcher's cursor): the log is never trimmed past it, so no
	// entry is dropped before it is matched.
	MatchAt string
	// MatchThrough is the notice_seq arrival matching has committed
	// through: every notice at or below it was matched.
	MatchThrough string

	// OldSeq, OldWatermark and OldVersion are the counters of the fenced
	// writer this one replaced, once the namespace's keys are upgraded to
	// the tagged prefix (redisstore.UpgradeKeys renames "<ns>:arrival:*").
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
