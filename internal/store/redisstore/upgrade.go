package redisstore

import (
	"cmp"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/noticesd/noticesd/internal/keyspace"
	"github.com/noticesd/noticesd/internal/lease"
)

// The marks of {ns}:layout, and how long the upgrade's lock lasts unless
// renewed.
const (
	layoutTagged  = "tagged"  // every key under "{ns}:"
	layoutSharded = "sharded" // what an account owns under its own tag (layoutRules)
	upgradeLock   = 30 * time.Second
)

// Upgraded counts what an upgrade did, by family: keys moved, copied or
// deleted, directory entries written, members moved, and (families named
// "... (dropped)") keys and members dropped.
type Upgraded map[string]int

// Total is the count of every family.
func (u Upgraded) Total() int {
	n := 0
	for _, v := range u {
		n += v
	}
	return n
}

// UpgradeOptions are UpgradeKeys's options.
type UpgradeOptions struct {
	// Progress, when set, is called after each batch of keys (or of a
	// shared key's members) that did something, with the counts so far.
	Progress func(Upgraded)
	// crashAfter, when positive, stops the upgrade as a crash would
	// after that many writes under a new name (a directory entry, a key
	// before its old name is deleted, members before they are removed
	// from the shared key), one step at a time (tests).
	crashAfter int
}

// familyUntagged names the keys moved from "ns:" to "{ns}:".
const familyUntagged = "untagged keys"

// errCrashed is what an upgrade stopped by UpgradeOptions.crashAfter
// returns.
var errCrashed = errors.New("redisstore: the upgrade stopped as a crash would (test)")

// UpgradeKeys brings namespace's keys to the sharded layout (docs/redis.md,
// "Upgrading to the sharded layout") and says what it moved; once the mark
// {ns}:layout says "sharded", a call costs one GET. Keys of the untagged
// layout ("ns:") first go under "{ns}:" (mark "tagged"), then the families
// of layoutRules to their new names, phase by phase (a check, the watch
// directory, whole keys, the shared queues' members, the leftovers); a
// namespace never written is marked at once. One process upgrades at a
// time, under a lock; the others wait for the mark. Each step moves a key
// or member still under its old name, so the next start finishes an
// interrupted upgrade; a key under both names with different values (an
// older version still writing) stops it with an error naming both: nothing
// is overwritten.
func UpgradeKeys(ctx context.Context, rdb redis.UniversalClient, namespace string, o UpgradeOptions) (Upgraded, error) {
	p := keyspace.Prefix(namespace)
	mark, lock := p+"layout", p+"layout:lock"
	token := rand.Text()
	for {
		v, err := rdb.Get(ctx, mark).Result()
		if err != nil && err != redis.Nil {
			return nil, fmt.Errorf("redisstore: read the key layout of namespace %s: %w", namespace, err)
		}
		if v == layoutSharded {
			return Upgraded{}, nil
		}
		if v != "" && v != layoutTagged {
			return nil, fmt.Errorf("redisstore: namespace %s is in the key layout %q, which this version does not know: run a newer noticesd", namespace, v)
		}
		took, err := lease.TakeOrRenew(ctx, rdb, lock, token, upgradeLock)
		if err != nil {
			return nil, fmt.Errorf("redisstore: lock the key upgrade of namespace %s: %w", namespace, err)
		}
		if took {
			m := &mover{rdb: rdb, ns: namespace, lock: lock, token: token, o: o, done: Upgraded{}}
			_, m.cluster = rdb.(*redis.ClusterClient)
			err := m.upgrade(ctx, v == layoutTagged, mark)
			rdb.Del(context.WithoutCancel(ctx), lock)
			return m.done, err
		}
		select { // another process upgrades: wait for its mark
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// mover moves keys to their new names, under the upgrade's lock: on one
// Redis by RENAMENX (O(1), value and time to live kept, any two names); on
// a cluster, where the two names are in different slots, by DUMP, RESTORE
// with the time to live left, then DEL. A crash between RESTORE and DEL
// leaves both names with one value: the next run deletes the old one. It
// also writes directory entries (direct) and splits shared keys (split).
type mover struct {
	rdb         redis.UniversalClient
	cluster     bool
	ns          string
	lock, token string
	o           UpgradeOptions
	done        Upgraded
	written     int // writes under a new name (crashAfter)
	reported    int // the total last reported (progress)
}

// step is what one key's rule does (kind): a move to to ("" deletes it,
// keep copies it); the directory entry field = value in to; or the split
// of its members by rule.
type step struct {
	family, from, to string
	keep             bool
	kind             ruleKind
	field, value     string
	rule             *layoutRule
}

// upgrade runs the untagged step (unless tagged), setting the mark
// "tagged", then the rules' phases in order, then sets the mark "sharded".
func (m *mover) upgrade(ctx context.Context, tagged bool, mark string) error {
	if !tagged {
		old := keyspace.OldPrefix(m.ns)
		if err := m.scan(ctx, old, func(ctx context.Context, keys []string) ([]step, error) {
			steps := make([]step, len(keys))
			for i, k := range keys {
				steps[i] = step{family: familyUntagged, from: k, to: keyspace.Prefix(m.ns) + strings.TrimPrefix(k, old)}
			}
			return steps, nil
		}); err != nil {
			return err
		}
		if err := m.rdb.Set(ctx, mark, layoutTagged, 0).Err(); err != nil {
			return err
		}
	}
	for phase := phaseCheck; phase <= phaseLeftovers; phase++ {
		if err := m.scan(ctx, keyspace.Prefix(m.ns), func(ctx context.Context, keys []string) ([]step, error) {
			return m.ruleSteps(ctx, keys, phase)
		}); err != nil {
			return err
		}
	}
	return m.rdb.Set(ctx, mark, layoutSharded, 0).Err()
}

// scan runs the steps plan gives for the keys under prefix, a SCAN page
// at a time with the lock renewed before each, until a full SCAN does
// nothing (keys an older version wrote meanwhile are moved too).
func (m *mover) scan(ctx context.Context, prefix string, plan func(context.Context, []string) ([]step, error)) error {
	for {
		before := m.done.Total()
		err := scanKeys(ctx, m.rdb, globEscape(prefix)+"*", 1000, func(batch []string) error {
			steps, err := plan(ctx, batch)
			if err != nil || len(steps) == 0 {
				return err
			}
			if err := m.renew(ctx); err != nil {
				return err
			}
			if err := m.run(ctx, steps); err != nil {
				return err
			}
			m.progress()
			return nil
		})
		if err != nil || m.done.Total() == before {
			return err
		}
	}
}

// renew renews the upgrade's lock, or says it was lost.
func (m *mover) renew(ctx context.Context) error {
	if held, err := lease.TakeOrRenew(ctx, m.rdb, m.lock, m.token, upgradeLock); err != nil || !held {
		return fmt.Errorf("redisstore: the key upgrade of namespace %s lost its lock (%v): start again", m.ns, err)
	}
	return nil
}

// progress reports the counts so far, when they changed.
func (m *mover) progress() {
	if m.o.Progress != nil && m.done.Total() != m.reported {
		m.reported = m.done.Total()
		m.o.Progress(maps.Clone(m.done))
	}
}

// ruleSteps are the steps of phase's layoutRules for keys, each
// "{ns}:<rest>": the first rule of the phase matching rest, with the
// value it reads.
func (m *mover) ruleSteps(ctx context.Context, keys []string, phase int) ([]step, error) {
	p := keyspace.Prefix(m.ns)
	type planned struct {
		step
		own  bool // read reads the key itself
		read *redis.StringCmd
	}
	var plan []planned
	_, err := m.rdb.Pipelined(ctx, func(pl redis.Pipeliner) error {
		for _, k := range keys {
			rest := strings.TrimPrefix(k, p)
			i := slices.IndexFunc(layoutRules, func(r layoutRule) bool { return r.phase == phase && r.match(rest) })
			if i < 0 {
				continue
			}
			r := &layoutRules[i]
			x := planned{step: step{family: r.family, from: k, keep: r.keep, kind: r.kind, rule: r}}
			if r.read != nil && r.kind != kindMembers {
				key, field := r.read(rest)
				x.own, x.read = key == rest, readValue(ctx, pl, p+key, field)
			}
			plan = append(plan, x)
		}
		return nil
	})
	if err != nil && err != redis.Nil {
		return nil, fmt.Errorf("redisstore: upgrade namespace %s: %w", m.ns, err)
	}
	var steps []step
	for _, x := range plan {
		rest, value := strings.TrimPrefix(x.from, p), ""
		if x.read != nil {
			if err := x.read.Err(); err != nil && err != redis.Nil {
				return nil, fmt.Errorf("redisstore: upgrade namespace %s: read for %s: %w", m.ns, x.from, err)
			}
			switch value = x.read.Val(); {
			case value != "":
			case x.own:
				continue // gone meanwhile (it expired)
			case x.rule.orphan != "":
				return nil, fmt.Errorf("redisstore: upgrading namespace %s: %s %s", m.ns, x.from, x.rule.orphan)
			default:
				x.family += " (dropped)" // and deleted: to is ""
			}
		}
		switch x.kind {
		case kindCheck:
			continue
		case kindDirectory:
			x.to, x.field, x.value = p+wacctKey, idOf(rest), value
		case kindMove:
			if value != "" || x.read == nil {
				x.to = x.rule.to(m.ns, rest, value)
			}
		}
		steps = append(steps, x.step)
	}
	return steps, nil
}

// readValue queues the read of field of key ("" its string value).
func readValue(ctx context.Context, pl redis.Pipeliner, key, field string) *redis.StringCmd {
	if field == "" {
		return pl.Get(ctx, key)
	}
	return pl.HGet(ctx, key, field)
}

// run runs one page of steps: deletes, then directory entries, then
// moves (renames on one Redis), then copies and a cluster's moves (DUMP,
// RESTORE, DEL), then member splits.
func (m *mover) run(ctx context.Context, steps []step) error {
	if m.o.crashAfter > 0 && len(steps) > 1 { // a step at a time, so that each write may be the last
		for _, s := range steps {
			if err := m.run(ctx, []step{s}); err != nil {
				return err
			}
		}
		return nil
	}
	var dels, dirs, renames, copies, splits []step
	for _, s := range steps {
		switch {
		case s.kind == kindDirectory:
			dirs = append(dirs, s)
		case s.kind == kindMembers:
			splits = append(splits, s)
		case s.to == "":
			dels = append(dels, s)
		case !m.cluster && !s.keep:
			renames = append(renames, s)
		default:
			copies = append(copies, s)
		}
	}
	if len(dels) > 0 {
		cmds := make([]*redis.IntCmd, len(dels))
		_, _ = m.rdb.Pipelined(ctx, func(pl redis.Pipeliner) error { // each answer read below
			for i, s := range dels {
				cmds[i] = pl.Unlink(ctx, s.from)
			}
			return nil
		})
		for i, c := range cmds {
			if c.Err() != nil {
				return fmt.Errorf("redisstore: upgrade: delete %s: %w", dels[i].from, c.Err())
			}
			m.done[dels[i].family] += int(c.Val())
		}
	}
	if err := m.direct(ctx, dirs); err != nil {
		return err
	}
	if err := m.rename(ctx, renames); err != nil {
		return err
	}
	if err := m.copy(ctx, copies); err != nil {
		return err
	}
	for _, s := range splits {
		if err := m.split(ctx, s); err != nil {
			return err
		}
	}
	return nil
}

// crashed is errCrashed once crashAfter writes are done (tests).
func (m *mover) crashed() error {
	if m.o.crashAfter > 0 && m.written >= m.o.crashAfter {
		return errCrashed
	}
	return nil
}

// direct writes each step's directory entry unless there (HSETNX): one
// there with another value (a watch's account never changes) stops the
// upgrade, naming both.
func (m *mover) direct(ctx context.Context, steps []step) error {
	set, had := make([]*redis.BoolCmd, len(steps)), make([]*redis.StringCmd, len(steps))
	_, _ = m.rdb.Pipelined(ctx, func(pl redis.Pipeliner) error { // each answer read below
		for i, s := range steps {
			set[i], had[i] = pl.HSetNX(ctx, s.to, s.field, s.value), pl.HGet(ctx, s.to, s.field)
		}
		return nil
	})
	for i, s := range steps {
		if err := cmp.Or(set[i].Err(), had[i].Err()); err != nil {
			return fmt.Errorf("redisstore: upgrade: write %s %s: %w", s.to, s.field, err)
		}
		if had[i].Val() != s.value {
			return fmt.Errorf("redisstore: upgrading namespace %s: %s says watch %s is of account %s, %s says %s; "+
				"stop every process of the older version, correct the wrong one, then start again", m.ns, s.from, s.field, s.value, s.to, had[i].Val())
		}
		if set[i].Val() {
			m.written++
			m.done[s.family]++
		}
	}
	return m.crashed()
}

// splitPage is how many members a split moves at a time.
const splitPage = 1000

// member is a zset's member with its score, a set's, or a hash's field
// with its value.
type member struct {
	name, value string
	score       float64
}

// split moves the members of s.from (a zset, set or hash shared by the
// namespace), a page at a time, each to the same key of the account of
// its watch (s.rule.read: the directory), with its score or value: first
// written there (a zset of a queue with a wake set also notes the account
// in {ns}:wake:<queue>, as rewakeAll does), then removed from the shared
// key. A crash between leaves a member in both: the next run writes it
// again (the same) and removes it. A member whose watch has no account
// (gone), or whose mail job (s.rule.job) is gone, is only removed.
func (m *mover) split(ctx context.Context, s step) error {
	p, r := keyspace.Prefix(m.ns), s.rule
	rest := strings.TrimPrefix(s.from, p)
	for {
		if err := m.renew(ctx); err != nil {
			return err
		}
		typ, page, err := m.members(ctx, s.from)
		if err != nil || len(page) == 0 {
			return err
		}
		owners := make([]*redis.StringCmd, len(page))
		_, _ = m.rdb.Pipelined(ctx, func(pl redis.Pipeliner) error { // each answer read below
			for i, x := range page {
				key, field := r.read(x.name)
				owners[i] = pl.HGet(ctx, p+key, field)
			}
			return nil
		})
		jobs := make([]*redis.IntCmd, len(page))
		if r.job {
			_, _ = m.rdb.Pipelined(ctx, func(pl redis.Pipeliner) error { // each answer read below
				for i, x := range page {
					if a := owners[i].Val(); a != "" {
						jobs[i] = pl.Exists(ctx, akeyOf(m.ns, a, mailKey, x.name))
					}
				}
				return nil
			})
		}
		var moves, drops []int
		for i := range page {
			if err := owners[i].Err(); err != nil && err != redis.Nil {
				return fmt.Errorf("redisstore: upgrade: read the account of %s in %s: %w", page[i].name, s.from, err)
			}
			if jobs[i] != nil && jobs[i].Err() != nil {
				return fmt.Errorf("redisstore: upgrade: read mail job %s: %w", page[i].name, jobs[i].Err())
			}
			if owners[i].Val() == "" || (jobs[i] != nil && jobs[i].Val() == 0) {
				drops = append(drops, i)
			} else {
				moves = append(moves, i)
			}
		}
		if m.o.crashAfter > 0 {
			moves = moves[:min(len(moves), max(0, m.o.crashAfter-m.written))]
		}
		wake := typ == "zset" && slices.Contains(wakeQueues, rest)
		added := make([]*redis.IntCmd, len(moves))
		_, err = m.rdb.Pipelined(ctx, func(pl redis.Pipeliner) error {
			for j, i := range moves {
				x, a := page[i], owners[i].Val()
				to := r.to(m.ns, rest, a)
				switch typ {
				case "zset":
					added[j] = pl.ZAdd(ctx, to, redis.Z{Score: x.score, Member: x.name})
					if wake {
						pl.ZAddLT(ctx, keyOf(m.ns, wakeKey, rest), redis.Z{Score: x.score, Member: a})
					}
				case "set":
					added[j] = pl.SAdd(ctx, to, x.name)
				default:
					added[j] = pl.HSet(ctx, to, x.name, x.value)
				}
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("redisstore: upgrade: write the members of %s under their accounts: %w", s.from, err)
		}
		for _, c := range added {
			m.written += int(c.Val()) // a member already there (a run stopped before its removal) is no new write
		}
		if err := m.crashed(); err != nil {
			return err // as a crash here: the members written, not removed
		}
		names := make([]string, 0, len(page))
		for _, i := range slices.Concat(moves, drops) {
			names = append(names, page[i].name)
		}
		var del *redis.IntCmd
		switch typ {
		case "zset":
			del = m.rdb.ZRem(ctx, s.from, anys(names)...)
		case "set":
			del = m.rdb.SRem(ctx, s.from, anys(names)...)
		default:
			del = m.rdb.HDel(ctx, s.from, names...)
		}
		if err := del.Err(); err != nil {
			return fmt.Errorf("redisstore: upgrade: remove the moved members of %s: %w", s.from, err)
		}
		m.done[s.family] += len(moves)
		if len(drops) > 0 {
			m.done[s.family+" (dropped)"] += len(drops)
		}
		m.progress()
	}
}

// members reads up to splitPage members of key: its type ("none" when it
// is gone) and the members.
func (m *mover) members(ctx context.Context, key string) (string, []member, error) {
	typ, err := m.rdb.Type(ctx, key).Result()
	if err != nil {
		return "", nil, fmt.Errorf("redisstore: upgrade: read %s: %w", key, err)
	}
	var out []member
	switch typ {
	case "none":
	case "zset":
		zs, e := m.rdb.ZRangeWithScores(ctx, key, 0, splitPage-1).Result()
		for _, z := range zs {
			out = append(out, member{name: z.Member.(string), score: z.Score})
		}
		err = e
	case "set":
		ms, e := m.rdb.SRandMemberN(ctx, key, splitPage).Result()
		for _, x := range ms {
			out = append(out, member{name: x})
		}
		err = e
	case "hash":
		kv, e := m.rdb.HRandFieldWithValues(ctx, key, splitPage).Result()
		for _, x := range kv {
			out = append(out, member{name: x.Key, value: x.Value})
		}
		err = e
	default:
		return "", nil, fmt.Errorf("redisstore: upgrading namespace %s: %s is a %s, not the zset, set or hash of this family: remove it, then start again", m.ns, key, typ)
	}
	if err != nil {
		return "", nil, fmt.Errorf("redisstore: upgrade: read %s: %w", key, err)
	}
	return typ, out, nil
}

// rename moves each step's key by RENAMENX (one Redis).
func (m *mover) rename(ctx context.Context, steps []step) error {
	cmds := make([]*redis.BoolCmd, len(steps))
	_, _ = m.rdb.Pipelined(ctx, func(pl redis.Pipeliner) error { // each answer read below
		for i, s := range steps {
			cmds[i] = pl.RenameNX(ctx, s.from, s.to)
		}
		return nil
	})
	for i, c := range cmds {
		s := steps[i]
		switch {
		case c.Err() != nil && strings.Contains(c.Err().Error(), "no such key"):
			// gone meanwhile (it expired)
		case c.Err() != nil:
			return fmt.Errorf("redisstore: upgrade key %s: %w", s.from, c.Err())
		case !c.Val():
			if err := m.both(ctx, s); err != nil {
				return err
			}
		default:
			m.written++
			m.done[s.family]++
		}
	}
	return m.crashed()
}

// copy writes each step's key under its new name (DUMP, then RESTORE with
// the time to live left), then deletes the old name unless the step keeps
// it. A crash after the RESTORE leaves both names with one value: the next
// run finds both (both) and deletes the old one.
func (m *mover) copy(ctx context.Context, steps []step) error {
	if len(steps) == 0 {
		return nil
	}
	dumps, ttls := make([]*redis.StringCmd, len(steps)), make([]*redis.DurationCmd, len(steps))
	_, _ = m.rdb.Pipelined(ctx, func(pl redis.Pipeliner) error { // each answer read below
		for i, s := range steps {
			dumps[i], ttls[i] = pl.Dump(ctx, s.from), pl.PTTL(ctx, s.from)
		}
		return nil
	})
	var todo []step
	var payload []string
	var ttl []time.Duration
	for i, s := range steps {
		if err := cmp.Or(dumps[i].Err(), ttls[i].Err()); err == redis.Nil || ttls[i].Val() == -2 {
			continue // gone meanwhile (it expired)
		} else if err != nil {
			return fmt.Errorf("redisstore: upgrade: read %s: %w", s.from, err)
		}
		todo, payload, ttl = append(todo, s), append(payload, dumps[i].Val()), append(ttl, max(ttls[i].Val(), 0))
	}
	restores := make([]*redis.StatusCmd, len(todo))
	_, _ = m.rdb.Pipelined(ctx, func(pl redis.Pipeliner) error { // each answer read below
		for i, s := range todo {
			restores[i] = pl.Restore(ctx, s.to, ttl[i], payload[i])
		}
		return nil
	})
	var written []step
	for i, c := range restores {
		s := todo[i]
		switch {
		case c.Err() != nil && strings.HasPrefix(c.Err().Error(), "BUSYKEY"):
			if err := m.both(ctx, s); err != nil {
				return err
			}
		case c.Err() != nil:
			return fmt.Errorf("redisstore: upgrade: write %s: %w", s.to, c.Err())
		default:
			m.written++
			written = append(written, s)
		}
	}
	if err := m.crashed(); err != nil {
		return err // as a crash here: the RESTOREs done, not the DELs
	}
	cmds := make([]*redis.IntCmd, len(written))
	_, _ = m.rdb.Pipelined(ctx, func(pl redis.Pipeliner) error { // each answer read below
		for i, s := range written {
			if !s.keep {
				cmds[i] = pl.Del(ctx, s.from)
			}
		}
		return nil
	})
	for i, s := range written {
		if cmds[i] != nil && cmds[i].Err() != nil {
			return fmt.Errorf("redisstore: upgrade: delete %s: %w", s.from, cmds[i].Err())
		}
		m.done[s.family]++
	}
	return nil
}

// both handles a step whose new name exists already: the same value (an
// earlier run stopped after writing it) finishes the step, deleting the
// old name unless the step keeps it; another value stops the upgrade with
// an error naming both, and neither is changed.
func (m *mover) both(ctx context.Context, s step) error {
	same, err := sameValue(ctx, m.rdb, s.from, s.to)
	if err != nil {
		return fmt.Errorf("redisstore: upgrade: compare %s and %s: %w", s.from, s.to, err)
	}
	if !same {
		return fmt.Errorf("redisstore: upgrading namespace %s: both %s and %s exist with different values; stop every process of the older version, "+
			"keep the one that holds the data (usually the first) and remove the other, then start again", m.ns, s.from, s.to)
	}
	if s.keep {
		return nil
	}
	if err := m.rdb.Del(ctx, s.from).Err(); err != nil {
		return fmt.Errorf("redisstore: upgrade: delete %s: %w", s.from, err)
	}
	m.done[s.family]++
	return nil
}

// sameValue reports whether keys a and b hold the same value: the same
// DUMP, or (a big hash or set dumps its members in an order of its own
// node) the same type and members.
func sameValue(ctx context.Context, rdb redis.UniversalClient, a, b string) (bool, error) {
	da, err := rdb.Dump(ctx, a).Result()
	if err != nil {
		return false, err
	}
	db, err := rdb.Dump(ctx, b).Result()
	if err != nil || da == db {
		return err == nil, err
	}
	va, err := typedValue(ctx, rdb, a)
	if err != nil {
		return false, err
	}
	vb, err := typedValue(ctx, rdb, b)
	return err == nil && va != nil && reflect.DeepEqual(va, vb), err
}

// typedValue reads key's value by its type (nil for a type it does not
// read: such values are the same only when their DUMPs are).
func typedValue(ctx context.Context, rdb redis.UniversalClient, key string) (any, error) {
	typ, err := rdb.Type(ctx, key).Result()
	if err != nil {
		return nil, err
	}
	switch typ {
	case "string":
		return rdb.Get(ctx, key).Result()
	case "hash":
		return rdb.HGetAll(ctx, key).Result()
	case "set":
		s, err := rdb.SMembers(ctx, key).Result()
		slices.Sort(s)
		return s, err
	case "zset":
		return rdb.ZRangeWithScores(ctx, key, 0, -1).Result()
	case "list":
		return rdb.LRange(ctx, key, 0, -1).Result()
	}
	return nil, nil
}

// globEscape escapes the characters SCAN's MATCH treats as a pattern.
var globEscape = strings.NewReplacer(`*`, `\*`, `?`, `\?`, `[`, `\[`, `]`, `\]`, `\`, `\\`).Replace
