#!/usr/bin/env bash
# make bench: the performance benchmarks on the full dataset (1,000,000 notices,
# 4,000,000 register rows), written to docs/benchmarks.md with the machine and
# dataset they ran on. The dataset is built once in $NOTICES_BENCH_DIR and reused.
# BENCH_QUICK=1 runs the same benchmarks on a small dataset (for checking the script).
set -euo pipefail
cd "$(dirname "$0")/.."

export NOTICES_BENCH_DIR=${NOTICES_BENCH_DIR:-/tmp/noticesd-bench}
if [ "${BENCH_QUICK:-}" = 1 ]; then
  export NOTICES_BENCH_NOTICES=${NOTICES_BENCH_NOTICES:-20000}
  export NOTICES_BENCH_REGISTER=${NOTICES_BENCH_REGISTER:-80000}
  export NOTICES_BENCH_DIR=${NOTICES_BENCH_DIR}-quick
  out=${BENCH_OUT:-/tmp/benchmarks-quick.md}
else
  export NOTICES_BENCH_NOTICES=${NOTICES_BENCH_NOTICES:-1000000}
  export NOTICES_BENCH_REGISTER=${NOTICES_BENCH_REGISTER:-4000000}
  out=${BENCH_OUT:-docs/benchmarks.md}
fi
mkdir -p "$NOTICES_BENCH_DIR"
raw=$(mktemp)
echo "== benchmarks on $NOTICES_BENCH_NOTICES notices / $NOTICES_BENCH_REGISTER register rows (data in $NOTICES_BENCH_DIR)"
# One package at a time: they share two cores and the dataset.
# Read benchmarks cycle their query mixes at least 5 rounds whatever -benchtime
# says; ingest benchmarks must run once. Benchmarks that time one operation per
# b.N iteration get enough iterations for their percentiles to mean something.
bench() { go test -tags sqlite_fts5 -run '^$' -timeout 3h "$@" | tee -a "$raw"; }
bench -bench . -skip 'CreateWatch50k' -benchtime 1x ./internal/store/sqlite
bench -bench 'CreateWatch50k' -benchtime 20x ./internal/store/sqlite
# Through HTTP (a real listener) against the read database just built,
# each figure beside its floor measured in the same run.
NOTICES_BENCH_DB="$NOTICES_BENCH_DIR/bench-s1-n$NOTICES_BENCH_NOTICES-r$NOTICES_BENCH_REGISTER.db" \
  bench -bench 'HTTP' -benchtime 1x ./api
bench -bench . -benchtime 5000x ./matcher
bench -bench . -benchtime 1x ./worker
# The built binary under load over loopback: company-lookup p50 alone and
# while 32 connections of one key screen 50,000 identifiers, and server RSS.
bench -bench . -benchtime 1x ./test/load
# Scale mode (Elasticsearch + Redis), when the live servers are given.
if [ -n "${NOTICES_TEST_ELASTICSEARCH_URL:-}" ] && [ -n "${NOTICES_TEST_REDIS_URL:-}" ]; then
  bench -bench 'ESIngest' -benchtime 1x ./internal/store/elastic
  bench -bench 'ESSearch|ESCompany|ESFilters|ESStats' -benchtime 200x ./internal/store/elastic
  # The Redis store: the bulk screen (from the replica's copy and from Redis), watch
  # creation, arrival matching; and the screen copy's memory at 4M companies / 1M notices.
  bench -bench 'Screen50k|CreateWatch50k|MatchOneNotice' -benchtime 20x ./internal/store/redisstore
  bench -bench 'ScreenCopySize' -benchtime 1x ./internal/store/redisstore
else
  echo "== NOT RUN: Elasticsearch benchmarks (set NOTICES_TEST_ELASTICSEARCH_URL and NOTICES_TEST_REDIS_URL)"
fi
go run ./scripts/benchreport -targets scripts/bench-targets.tsv -notes scripts/bench-notes.md \
  -dataset "$NOTICES_BENCH_NOTICES notices and $NOTICES_BENCH_REGISTER register rows from \`noticesd sample\` (seed 1), ingested through the real ingest path into one SQLite file (WAL, FTS5)." \
  < "$raw" > "$out"
cp "$raw" "${out%.md}.txt"
rm -f "$raw"
echo "wrote $out and ${out%.md}.txt"
