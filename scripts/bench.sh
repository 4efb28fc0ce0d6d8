#!/usr/bin/env bash
# make bench: the performance benchmarks on the full dataset (1,000,000 notices,
# 4,000,000 register rows), written as docs/benchmarks.md (the whole document: this run's
# tables, the machine and dataset they ran on, how to reproduce them; earlier runs are in
# git) and docs/benchmarks.txt (the raw output). The dataset files are built once in
# $NOTICES_BENCH_DIR and reused.
#
# Two parts, both by default (BENCH_PARTS="embedded scale", or one of them):
#   embedded  SQLite store, HTTP, matcher, worker, test/load
#   scale     the same dataset and requests in scale mode: Elasticsearch (1 GB heap) and
#             Redis, through the API beside the raw engine in the same run; ingest beside a
#             bare esutil.BulkIndexer loop; webhook deliveries on asynq
# The scale part uses NOTICES_TEST_ELASTICSEARCH_URL / NOTICES_TEST_REDIS_URL when set,
# else starts its own servers with scripts/services.sh and stops them afterwards.
#
# BENCH_QUICK=1 runs everything on a small dataset (20,000 notices / 80,000 rows) and
# writes a copy of docs/benchmarks.md in /tmp (for checking the script in a few minutes).
# BENCH_OUT names the document to write (replaced).
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
parts=" ${BENCH_PARTS:-embedded scale} "
mkdir -p "$NOTICES_BENCH_DIR"
raw=$(mktemp)
runinfo=$(mktemp)
trap 'rm -f "$raw" "$raw.prev" "$runinfo"' EXIT
echo "== benchmarks on $NOTICES_BENCH_NOTICES notices / $NOTICES_BENCH_REGISTER register rows (data in $NOTICES_BENCH_DIR; parts:$parts)"
echo "- Load average at the start of the run: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$runinfo"
# One package at a time: they share two cores and the dataset.
# Read benchmarks cycle their query mixes at least 5 rounds (scale: 30) whatever -benchtime
# says; ingest benchmarks must run once. Benchmarks that time one operation per
# b.N iteration get enough iterations for their percentiles to mean something.
# A package that fails is reported at the end (its rows say "not run"); the others still run.
failed=()
bench() { go test -tags sqlite_fts5 -run '^$' -timeout 3h "$@" | tee -a "$raw" || failed+=("${*: -1}"); }
minutes() { awk -v s="$1" 'BEGIN { printf "%.1f", s / 60 }'; }

if [[ $parts == *" embedded "* ]]; then
  t0=$SECONDS
  bench -bench . -skip 'CreateWatch50k' -benchtime 1x ./internal/store/sqlite
  bench -bench 'CreateWatch50k' -benchtime 20x ./internal/store/sqlite
  # Through HTTP (a real listener) against the read database just built,
  # each figure beside its floor measured in the same run.
  NOTICES_BENCH_DB="$NOTICES_BENCH_DIR/bench-s1-n$NOTICES_BENCH_NOTICES-r$NOTICES_BENCH_REGISTER.db" \
    bench -bench 'HTTP' -skip 'Scale' -benchtime 1x ./api
  bench -bench . -benchtime 5000x ./matcher
  bench -bench . -benchtime 1x ./worker
  # The built binary under load over loopback: company-lookup p50 alone and
  # while 32 connections of one key screen 50,000 identifiers, and server RSS.
  bench -bench . -benchtime 1x ./test/load
  echo "- Embedded part: $(minutes $((SECONDS - t0))) min" >>"$runinfo"
fi

if [[ $parts == *" scale "* ]]; then
  t0=$SECONDS
  # Servers: the given ones, or our own (stopped on exit, also on failure).
  if [ -z "${NOTICES_TEST_ELASTICSEARCH_URL:-}" ] || [ -z "${NOTICES_TEST_REDIS_URL:-}" ]; then
    NOTICES_SERVICES_RUN=$(mktemp -d "${TMPDIR:-/tmp}/noticesd-bench-services.XXXXXX")
    export NOTICES_SERVICES_RUN
    export NOTICES_SERVICES_OWNER=$$   # services.sh's watchdog stops them if this script dies hard
    export NOTICES_ES_JAVA_OPTS=${NOTICES_ES_JAVA_OPTS:--Xms1g -Xmx1g}
    trap './scripts/services.sh stop || true; rm -rf "$NOTICES_SERVICES_RUN" "$raw" "$raw.prev" "$runinfo"' EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
    wanted=()
    [ -n "${NOTICES_TEST_ELASTICSEARCH_URL:-}" ] || wanted+=(elasticsearch)
    [ -n "${NOTICES_TEST_REDIS_URL:-}" ] || wanted+=(redis)
    echo "== starting ${wanted[*]} (scripts/services.sh, Elasticsearch heap: $NOTICES_ES_JAVA_OPTS)"
    ./scripts/services.sh start "${wanted[@]}"
    # shellcheck disable=SC1090
    source <(./scripts/services.sh env)
    ./scripts/services.sh status | sed 's/^/== /' || true
    echo "- Scale servers: started by scripts/services.sh for this run (Elasticsearch $NOTICES_ES_JAVA_OPTS): $(./scripts/services.sh status | tr '\n' ';' | sed 's/;$//')" >>"$runinfo"
  else
    echo "- Scale servers: given, Elasticsearch $NOTICES_TEST_ELASTICSEARCH_URL, Redis $NOTICES_TEST_REDIS_URL" >>"$runinfo"
  fi
  export NOTICES_TEST_ELASTICSEARCH_URL NOTICES_TEST_REDIS_URL
  echo "- Load average at the start of the scale part: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$runinfo"
  # Ingest: the same files sent by a bare esutil.BulkIndexer loop (the raw figure).
  bench -bench 'ESIngest.*Raw' -skip 'VsRaw' -benchtime 1x ./internal/store/elastic
  # The store's notice load and the bare loop alternated in one run, 5 rounds of 200,000
  # notices each (the ingest target is a ratio, and a shared machine's load moves rounds
  # run apart; x-raw-median is the middle round's).
  NOTICES_BENCH_NOTICES=200000 NOTICES_BENCH_REGISTER=40000 NOTICES_BENCH_ROUNDS=5 \
    bench -bench 'ESIngestNoticesVsRaw' -benchtime 1x ./internal/store/elastic
  # Decoding a page of 20 notices: the store's decoder beside encoding/json.
  bench -bench 'DecodePage' -benchtime 2000x ./internal/store/elastic
  # The dataset through `noticesd ingest`'s scale path, then the read mixes
  # through the API beside the same requests sent raw, in one process.
  bench -bench 'BenchmarkScale$' -benchtime 1x ./api
  # POST /v1/match and watch creation on a synthetic 50,000-company register in Redis.
  bench -bench 'HTTP.*Scale' -benchtime 20x ./api
  # The Redis store: the bulk screen (from the replica's copy and from Redis), watch
  # creation, arrival matching; and the screen copy's memory at 4M companies / 1M notices.
  bench -bench 'Screen50k|CreateWatch50k|MatchOneNotice' -benchtime 20x ./internal/store/redisstore
  bench -bench 'ScreenCopySize' -benchtime 1x ./internal/store/redisstore
  # Redis bytes per notice: used_memory's growth over 50,000 notices loaded on 10,000 (register unchanged).
  bench -bench 'RedisBytesPerNotice' -benchtime 1x ./internal/store/scale
  # Redis bytes per register row: MEMORY USAGE of a register generation's keys (the identifier
  # sets) over the $NOTICES_BENCH_REGISTER rows of the sample register.
  bench -bench 'RegisterBytesPerRow' -benchtime 1x ./internal/store/redisstore
  # Webhook deliveries on asynq beside a bare HTTPS POST loop.
  bench -bench . -benchtime 3000x ./worker/scheduler
  echo "- Scale part: $(minutes $((SECONDS - t0))) min; load average at its end: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$runinfo"
fi

# A run of one part keeps the other part's figures from the last raw output
# (docs/benchmarks.txt), in the document and in the raw output it rewrites.
prev=()
if [[ $parts != *" embedded "* || $parts != *" scale "* ]] && [ -s "${out%.md}.txt" ]; then
  cp "${out%.md}.txt" "$raw.prev"
  prev=(-previous "$raw.prev" -raw-out "${out%.md}.txt")
  echo "- Parts not run this time (BENCH_PARTS=\"${parts# }\"): their figures are the previous run's, kept from \`${out%.md}.txt\`" >>"$runinfo"
else
  cp "$raw" "${out%.md}.txt"   # kept even if the report cannot be written
fi
go run ./scripts/benchreport -targets scripts/bench-targets.tsv -rows scripts/bench-rows.tsv -notes scripts/bench-notes.md "${prev[@]}" \
  -run "$(cat "$runinfo")" \
  -dataset "$NOTICES_BENCH_NOTICES notices and $NOTICES_BENCH_REGISTER register rows from \`noticesd sample\` (seed 1). Embedded: ingested through the real ingest path into one SQLite file (WAL, FTS5). Scale: the same files through \`noticesd ingest\`'s scale-mode path into one local Elasticsearch node and Redis (the indices' mappings from \`mappings/\`)." \
  -doc "$out" <"$raw"
echo "wrote $out and ${out%.md}.txt"
if [ ${#failed[@]} -gt 0 ]; then
  echo "bench.sh: FAILED: ${failed[*]} (see the output above)" >&2
  exit 1
fi
