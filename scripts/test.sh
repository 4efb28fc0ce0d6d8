#!/usr/bin/env bash
# The one test command (make test). Installs what it needs on a fresh machine, starts one
# Elasticsearch node and one redis-server for the whole run (scripts/services.sh) unless
# NOTICES_TEST_ELASTICSEARCH_URL / NOTICES_TEST_REDIS_URL already name servers to use, and
# stops them at the end, also when a test fails or the run is interrupted.
set -euo pipefail
cd "$(dirname "$0")/.."

need() { command -v "$1" >/dev/null 2>&1; }
apt_install() {
  if need apt-get; then
    echo "== installing $* from Debian's packages"
    (apt-get update -qq || true) >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
  else
    echo "test.sh: $* missing and no apt-get to install it" >&2
    exit 1
  fi
}
need gcc || apt_install gcc libc6-dev
# The webhook guide's verification recipes are run by internal/webhook's tests (CI=true fails without them).
need python3 || apt_install python3
need node || apt_install nodejs
need perl || apt_install perl
# The README's tour and the API reference's examples run as written (testbin.Tour).
need curl || apt_install curl
need jq || apt_install jq
need go || { echo "test.sh: Go toolchain not found" >&2; exit 1; }
# The Redis backend's AOF-restart and Redis-down tests start their own
# redis-server (never the shared one).
need redis-server || apt_install redis-server
# test/deploy validates compose.yaml with `docker-compose config` (no engine needed).
need docker-compose || docker compose version >/dev/null 2>&1 || apt_install docker-compose

# ---- servers for the live suites
NOTICES_SERVICES_RUN=$(mktemp -d "${TMPDIR:-/tmp}/noticesd-test-services.XXXXXX")
export NOTICES_SERVICES_RUN
export NOTICES_SERVICES_OWNER=$$   # if this script dies hard, services.sh's watchdog stops them
stop_services() {
  ./scripts/services.sh stop || true
  rm -rf "$NOTICES_SERVICES_RUN"
}
trap stop_services EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

wanted=()
if [ -n "${NOTICES_TEST_ELASTICSEARCH_URL:-}" ]; then
  echo "== elasticsearch: existing server $NOTICES_TEST_ELASTICSEARCH_URL (NOTICES_TEST_ELASTICSEARCH_URL)"
else
  wanted+=(elasticsearch)
fi
if [ -n "${NOTICES_TEST_REDIS_URL:-}" ]; then
  echo "== redis: existing server $NOTICES_TEST_REDIS_URL (NOTICES_TEST_REDIS_URL)"
else
  wanted+=(redis)
fi
if [ ${#wanted[@]} -gt 0 ]; then
  echo "== starting ${wanted[*]} (scripts/services.sh)"
  if ! ./scripts/services.sh start "${wanted[@]}"; then
    echo "test.sh: the live test servers could not be started (see the FAILED line above);" >&2
    echo "test.sh: fix that, or point the tests at running servers with" >&2
    echo "test.sh: NOTICES_TEST_ELASTICSEARCH_URL / NOTICES_TEST_REDIS_URL (README, docs/testing.md)" >&2
    exit 1
  fi
  # shellcheck disable=SC1090
  source <(./scripts/services.sh env)
  ./scripts/services.sh status | sed 's/^/== /'
fi

TAGS=sqlite_fts5
# Each stage says when it starts (seconds since this script did), so a slow run shows where its time
# went: a new machine's empty build cache costs most in the first go test (docs/testing.md).
stage() { echo "== $* (at ${SECONDS}s)"; }
stage "go mod tidy leaves go.mod and go.sum unchanged"
if ! go mod tidy -diff; then
  echo "test.sh: go.mod/go.sum are not tidy; run 'go mod tidy' and commit the result" >&2
  exit 1
fi
stage "go vet"
go vet -tags "$TAGS" ./...
stage "staticcheck"
# Pinned; fetched from the Go module proxy into the module cache on first use.
GOFLAGS="-tags=$TAGS" go run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...
stage "go test"
go test -tags "$TAGS" -count=1 -timeout 12m ./...
stage "race detector on the concurrent parts"
go test -race -tags "$TAGS" -count=1 -timeout 10m ./api ./internal/limit ./worker ./internal/collector ./matcher ./internal/webhook ./internal/store/sqlite ./internal/scheduler
go test -race -short -tags "$TAGS" -count=1 -timeout 10m ./internal/store/redisstore
go test -race -tags "$TAGS" -count=1 -timeout 10m -run 'Reindex|TwoIngesters|Allocate' ./internal/store/elastic ./internal/store/arrival
# Counted, not timed: a timed -fuzztime can end in a spurious "context deadline exceeded"
# failure when a worker is busy at the deadline (golang/go#75804, fixed in Go 1.27; it failed
# make test here once, while a new input was being minimized). Each count is about 10-20 s of
# this machine; -fuzzminimizetime keeps a new input's minimization from holding both workers
# for up to a minute.
stage "fuzz q parser, notice line and request body decoding, JSON string encoding and notice documents (counted runs)"
fuzz() { go test -tags "$TAGS" -run '^$' -fuzz "$1" -fuzztime "$2" -fuzzminimizetime 2s "$3"; }
fuzz FuzzParse 200000x ./internal/query
fuzz FuzzDecodeObject 60000x ./ingest
fuzz FuzzDecodeObject 60000x ./internal/watch
fuzz FuzzAppendString 200000x ./internal/jsontext
fuzz FuzzAppendNotice 20000x ./internal/store/elastic/esdoc
stage "done"
