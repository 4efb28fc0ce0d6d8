#!/usr/bin/env bash
# make run-scale: the scale-out stack from local processes, for a machine without Docker
# (compose.yaml is the same stack in containers). It
#   1. builds bin/noticesd (make build),
#   2. starts Elasticsearch and redis-server (appendonly yes, as docs/redis.md requires) on
#      free loopback ports (scripts/services.sh), unless NOTICES_ELASTICSEARCH_URL and
#      NOTICES_REDIS_URL name servers you run,
#   3. runs `noticesd demo` with NOTICES_BACKEND=scale: on the first run of a namespace it
#      generates and ingests the sample, then it makes sure the account "demo" exists
#      (fresh keys each run), prints the keys and curl lines, and serves the API,
#   4. once the API answers /ready, starts two `noticesd worker` processes (webhook
#      delivery and arrival matching; their logs go to $NOTICES_DATA_DIR/worker-N.log),
#   5. on Ctrl-C (or when any of these processes exits) stops everything it started:
#      serve, the workers, and the servers of step 2.
#
# Settings (environment): every NOTICES_* setting of `noticesd --help`, and
#   NOTICES_DATA_DIR       [data/scale]  sample files, worker logs, the generated secret key
#   NOTICES_NAMESPACE      [notices]     index/key prefix; the sample is loaded once per namespace
#   NOTICES_SECRET_KEY     [generated once into $NOTICES_DATA_DIR/secret.key]
#   RUN_SCALE_WORKERS      [2]           worker processes
#   RUN_SCALE_BIN          [bin/noticesd, built here]  a binary to use instead of building
# Servers started in step 2 are fresh each run (their data goes when they stop), so each run
# is a first run there; with your own servers the sample is loaded only once per namespace.
set -euo pipefail

ROOT=$(cd "$(dirname "$(readlink -f "$0")")/.." && pwd)
cd "$ROOT"

log() { echo "run-scale: $*" >&2; }
die() { echo "run-scale: FAILED: $*" >&2; exit 1; }
alive() { [ -n "${1:-}" ] && kill -0 "$1" 2>/dev/null; }

WORKERS=${RUN_SCALE_WORKERS:-2}
export NOTICES_BACKEND=scale
export NOTICES_DATA_DIR=${NOTICES_DATA_DIR:-$ROOT/data/scale}
export NOTICES_NAMESPACE=${NOTICES_NAMESPACE:-notices}
export NOTICES_ADDR=${NOTICES_ADDR:-:8080}
export NOTICES_LOG_FORMAT=${NOTICES_LOG_FORMAT:-text}
mkdir -p "$NOTICES_DATA_DIR"

# ---- what this script started, stopped by cleanup (EXIT trap) ------------------------
SERVE_PID=
WORKER_PIDS=()
SERVICES_RUN=
# shellcheck disable=SC2317 # invoked by the EXIT trap
cleanup() {
  local status=$? pids=() pid any
  trap - EXIT INT TERM
  alive "$SERVE_PID" && pids+=("$SERVE_PID")
  for pid in "${WORKER_PIDS[@]}"; do alive "$pid" && pids+=("$pid"); done
  if [ ${#pids[@]} -gt 0 ]; then
    log "stopping serve and workers (pids ${pids[*]})"
    kill -TERM "${pids[@]}" 2>/dev/null || true
    # serve drains for up to 15 s, a worker waits for its attempts in flight.
    for _ in $(seq 1 100); do
      any=
      for pid in "${pids[@]}"; do alive "$pid" && any=1; done
      [ -z "$any" ] && break
      sleep 0.2
    done
    for pid in "${pids[@]}"; do
      if alive "$pid"; then log "pid $pid still running after 20 s: killing it"; kill -KILL "$pid" 2>/dev/null || true; fi
    done
    wait 2>/dev/null || true
  fi
  if [ -n "$SERVICES_RUN" ]; then
    NOTICES_SERVICES_RUN=$SERVICES_RUN ./scripts/services.sh stop || true
    rm -rf "$SERVICES_RUN"
  fi
  log "stopped"
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---- 1. the binary --------------------------------------------------------------------
BIN=${RUN_SCALE_BIN:-}
if [ -z "$BIN" ]; then
  make --no-print-directory build >&2
  BIN=$ROOT/bin/noticesd
fi
[ -x "$BIN" ] || die "$BIN is not an executable"
if "$BIN" version 2>/dev/null | grep -q 'scale unavailable'; then
  die "$BIN has no scale backend ($("$BIN" version | grep scale))"
fi

# ---- 2. Elasticsearch and Redis -------------------------------------------------------
wanted=()
if [ -n "${NOTICES_ELASTICSEARCH_URL:-}" ]; then
  log "elasticsearch: $NOTICES_ELASTICSEARCH_URL (NOTICES_ELASTICSEARCH_URL)"
else
  wanted+=(elasticsearch)
fi
if [ -n "${NOTICES_REDIS_URL:-}" ]; then
  log "redis: $NOTICES_REDIS_URL (NOTICES_REDIS_URL)"
else
  wanted+=(redis)
fi
if [ ${#wanted[@]} -gt 0 ]; then
  SERVICES_RUN=$(mktemp -d "${TMPDIR:-/tmp}/noticesd-run-scale.XXXXXX")
  log "starting ${wanted[*]} (scripts/services.sh; the first run installs and downloads what is missing)"
  # NOTICES_SERVICES_OWNER: should this script be killed outright, services.sh's
  # watchdog stops the servers when this process is gone.
  # NOTICES_REDIS_APPENDONLY=yes: Redis with its append-only file, as docs/redis.md requires
  # (make test's Redis runs without it, for speed).
  NOTICES_SERVICES_RUN=$SERVICES_RUN NOTICES_SERVICES_OWNER=$$ NOTICES_REDIS_APPENDONLY=yes \
    ./scripts/services.sh start "${wanted[@]}" ||
    die "the servers could not be started (see the FAILED line above)"
  [ -s "$SERVICES_RUN/elasticsearch.url" ] && NOTICES_ELASTICSEARCH_URL=$(cat "$SERVICES_RUN/elasticsearch.url")
  [ -s "$SERVICES_RUN/redis.url" ] && NOTICES_REDIS_URL=$(cat "$SERVICES_RUN/redis.url")
fi
export NOTICES_ELASTICSEARCH_URL NOTICES_REDIS_URL

# ---- the secret key that seals webhook secrets: the operator's, or one kept here -------
if [ -z "${NOTICES_SECRET_KEY:-}" ]; then
  keyfile=$NOTICES_DATA_DIR/secret.key
  if [ ! -s "$keyfile" ]; then
    (umask 077 && head -c 32 /dev/urandom | base64 >"$keyfile")
    log "generated a secret key in $keyfile (keep it with the data of namespace $NOTICES_NAMESPACE)"
  fi
  NOTICES_SECRET_KEY=$(cat "$keyfile")
  export NOTICES_SECRET_KEY
fi

# ---- 3. sample, demo account, keys, serve ---------------------------------------------
log "scale mode: elasticsearch $NOTICES_ELASTICSEARCH_URL, redis $NOTICES_REDIS_URL, namespace $NOTICES_NAMESPACE"
"$BIN" demo &
SERVE_PID=$!

port=${NOTICES_ADDR##*:}
host=${NOTICES_ADDR%:*}
case "$host" in ''|0.0.0.0|'[::]') host=127.0.0.1 ;; esac
until "$BIN" health --url "http://$host:$port/ready" --timeout 2s >/dev/null 2>&1; do
  alive "$SERVE_PID" || { wait "$SERVE_PID" || true; die "noticesd demo (serve) exited before it was ready"; }
  sleep 0.5
done

# ---- 4. the workers -------------------------------------------------------------------
for i in $(seq 1 "$WORKERS"); do
  "$BIN" worker 2>>"$NOTICES_DATA_DIR/worker-$i.log" >&2 &
  WORKER_PIDS+=("$!")
done
log "serve (pid $SERVE_PID) and $WORKERS workers (pids ${WORKER_PIDS[*]}; logs $NOTICES_DATA_DIR/worker-*.log) are running; Ctrl-C stops them all"

# ---- 5. until Ctrl-C, or until one of them exits -----------------------------------------
status=0
wait -n "$SERVE_PID" "${WORKER_PIDS[@]}" || status=$?
for pid in "$SERVE_PID" "${WORKER_PIDS[@]}"; do
  alive "$pid" || log "pid $pid exited (status $status); stopping the rest"
done
exit "$status"
