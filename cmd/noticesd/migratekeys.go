package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"

	"github.com/noticesd/noticesd/internal/store/redisstore"
)

const migrateKeysAbout = `Move the namespace's Redis keys (scale mode) to the layout of this version,
on the Redis of NOTICES_REDIS_URL (and Sentinel) or NOTICES_REDIS_CLUSTER_URL,
the settings serve uses. From the tagged layout (every key under {ns}:),
everything an account owns goes under its own hash tag {ns:a:<id>}: its
hash, its API keys (copied; {ns}:apikey:<sha256> stays as the directory), its
watch list and companies, and each of its watches' keys, match log,
deliveries, mail jobs and unfinished deletes (the watch directory {ns}:wacct
is written first, from each watch's account); the shared queues (outbox,
attempts, creates, deletes, mail, ...) are split member by member into the
accounts' own, noting each account in the wake sets. The register's
identifier sets are spread over {ns:g0}: ... {ns:g63}:; the short-lived rate
buckets, heavy-slot sets and staged companies, and the shared gauge keys
(recomputed per account at the first /metrics scrape) are deleted. A namespace
of the older untagged layout (ns:) is moved under {ns}: first. Then the mark
{ns}:layout says "sharded".

Stop every process of the older version (serve, worker, ingest, collect)
first: a key one of them writes meanwhile under both names stops the
migration with an error naming both, nothing overwritten. The migration
runs under a lock, and one stopped half way (a crash, Ctrl-C) is finished
by the next run. serve and worker do the same at start, so this command
is optional: it shows progress and lets you migrate before starting them.
A second run does nothing (docs/redis.md, "Upgrading to the sharded layout").`

func runMigrateKeys(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("migrate-keys", "migrate-keys", migrateKeysAbout, stderr)
	quiet := fs.Bool("quiet", false, "no progress lines, only the summary")
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	cfg, err := loadConfig()
	if err != nil {
		return err
	}
	if cfg.Backend != "scale" {
		return usageError("noticesd migrate-keys moves scale mode's Redis keys: set NOTICES_BACKEND=scale")
	}
	rdb, err := redisstore.Connect(ctx, cfg)
	if err != nil {
		return err
	}
	defer rdb.Close()
	var o redisstore.UpgradeOptions
	if !*quiet {
		o.Progress = func(u redisstore.Upgraded) { fmt.Fprintf(stderr, "migrate-keys: %s\n", upgradedLine(u)) }
	}
	done, err := redisstore.UpgradeKeys(ctx, rdb, cfg.Namespace, o)
	if err != nil {
		return err
	}
	if done.Total() == 0 {
		fmt.Fprintf(stdout, "namespace %s: already in the sharded layout, nothing to move\n", cfg.Namespace)
		return nil
	}
	fmt.Fprintf(stdout, "namespace %s: now in the sharded layout; %d keys, entries and members: %s\n", cfg.Namespace, done.Total(), upgradedLine(done))
	return nil
}

// upgradedLine is "<family> <n>, ..." in the order of the families' names.
func upgradedLine(u redisstore.Upgraded) string {
	line := ""
	for i, f := range slices.Sorted(maps.Keys(u)) {
		if i > 0 {
			line += ", "
		}
		line += fmt.Sprintf("%s %d", f, u[f])
	}
	return line
}
