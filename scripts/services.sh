#!/usr/bin/env bash
# The Elasticsearch 8 node and the redis-server that the live tests use, as local
# processes on free loopback ports. Used by `make test` (scripts/test.sh), by the Go
# fallback in internal/testservers, and by hand.
#
#   scripts/services.sh install                 download / install what is missing, start nothing
#   scripts/services.sh start [elasticsearch] [redis] [redis-cluster]
#                                               (elasticsearch and redis when none is named;
#                                               redis-cluster: 3 masters + 3 replicas, Redis
#                                               Cluster mode, for NOTICES_TEST_REDIS_CLUSTER_URL)
#   scripts/services.sh status                  what runs, where, which version
#   scripts/services.sh env                     `export NOTICES_TEST_..._URL=...` lines for the shell
#   scripts/services.sh stop                    stop everything this run directory started
#   scripts/services.sh paths                   install what Elasticsearch needs, start nothing, and
#                                               print ES_HOME, ES_JAVA_HOME and ES_USER lines (for
#                                               the several-node cluster of internal/testservers)
#
# Installs what is missing, idempotently: redis-server (Debian package), a JDK >= 17
# (Debian package), Maven and unzip (Debian packages), and the Elasticsearch server from
# Maven Central (org.elasticsearch.distribution.integ-test-zip:elasticsearch:VERSION:zip),
# cached in .cache/services (git-ignored). Elasticsearch refuses to run as root, so as
# root it runs as the system user noticesd-es (created when missing).
#
# Settings (environment):
#   NOTICES_SERVICES_CACHE  download cache          [.cache/services]
#   NOTICES_SERVICES_RUN    run directory (pids, URLs, env file)  [$NOTICES_SERVICES_CACHE/run]
#   NOTICES_SERVICES_OWNER  a pid: when it exits, everything started here is stopped
#   NOTICES_ES_VERSION      [8.19.21, the newest 8.x on Maven Central]
#   NOTICES_ES_USER         [noticesd-es] (only used as root)
#   NOTICES_ES_JAVA_OPTS    [-Xms512m -Xmx1g]
#   NOTICES_SERVICES_WAIT   seconds to wait for each server to become healthy [240]
#   NOTICES_REDIS_APPENDONLY  redis-server's appendonly: yes as docs/redis.md requires (make run-scale) [no, fast for tests]
# Exits non-zero with "services: FAILED (stage): reason" when a server cannot be had.
set -euo pipefail

SCRIPT=$(readlink -f "$0")
ROOT=$(cd "$(dirname "$SCRIPT")/.." && pwd)
ES_VERSION=${NOTICES_ES_VERSION:-8.19.21}
ES_ARTIFACT=org.elasticsearch.distribution.integ-test-zip:elasticsearch:$ES_VERSION:zip
CACHE=${NOTICES_SERVICES_CACHE:-$ROOT/.cache/services}
RUN=${NOTICES_SERVICES_RUN:-$CACHE/run}
OWNER=${NOTICES_SERVICES_OWNER:-}
ES_USER=${NOTICES_ES_USER:-noticesd-es}
ES_JAVA_OPTS_WANTED=${NOTICES_ES_JAVA_OPTS:--Xms512m -Xmx1g}
WAIT=${NOTICES_SERVICES_WAIT:-240}
REDIS_APPENDONLY=${NOTICES_REDIS_APPENDONLY:-no}

log() { echo "services: $*" >&2; }
die() { # die STAGE MESSAGE...
  local stage=$1; shift
  echo "services: FAILED ($stage): $*" >&2
  exit 1
}
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }
need() { command -v "$1" >/dev/null 2>&1; }
am_root() { [ "$(id -u)" = 0 ]; }

APT_UPDATED=
apt_install() { # apt_install STAGE PACKAGE...
  local stage=$1; shift
  need apt-get || die "$stage" "$* missing and there is no apt-get to install it; install $* by hand"
  am_root || die "$stage" "$* missing; installing it needs root: sudo apt-get install -y $*"
  local t0; t0=$(now)
  if [ -z "$APT_UPDATED" ]; then
    log "apt-get update"
    DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null 2>&1 || log "apt-get update failed; trying the install anyway"
    APT_UPDATED=1
  fi
  log "apt-get install -y $*"
  # A package's install script must not start a system service (redis-server on 6379)
  # that would outlive the tests: deny service starts for the install, as Docker images do.
  local policy=/usr/sbin/policy-rc.d added=
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\n# scripts/services.sh: no service starts during its apt-get install\nexit 101\n' >"$policy"
    chmod 755 "$policy"
    added=1
  fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null || {
    [ -z "$added" ] || rm -f "$policy"
    die "$stage" "apt-get install -y $* failed"
  }
  [ -z "$added" ] || rm -f "$policy"
  log "installed $* in $(since "$t0") s"
}

# with_lock FILE COMMAND...: one installer at a time per cache (several test binaries may
# ask for the same download at once).
with_lock() {
  local lock=$1; shift
  mkdir -p "$(dirname "$lock")"
  (
    flock -w 900 9 || die lock "waited 15 min for $lock"
    "$@"
  ) 9>"$lock"
}

# ---- installation -------------------------------------------------------------------

REDIS_ORIGIN=
ensure_redis() {
  if need redis-server && need redis-cli; then
    REDIS_ORIGIN="Debian package, already installed"
    return
  fi
  local t0; t0=$(now)
  apt_install redis-install redis-server redis-tools
  REDIS_ORIGIN="Debian package, installed now in $(since "$t0") s"
}

JAVA_HOME_FOUND=
ensure_java() {
  local home=${ES_JAVA_HOME:-${JAVA_HOME:-}}
  if [ -z "$home" ] && need java; then
    home=$(dirname "$(dirname "$(readlink -f "$(command -v java)")")")
  fi
  if [ -z "$home" ] || [ ! -x "$home/bin/java" ]; then
    apt_install jdk openjdk-17-jre-headless
    home=$(dirname "$(dirname "$(readlink -f "$(command -v java)")")")
  fi
  local major
  major=$("$home/bin/java" -XshowSettings:properties -version 2>&1 | awk -F' = ' '/java.specification.version/ { print $2 }')
  case "$major" in
    ''|1.*) die jdk "$home/bin/java is not Java 17 or newer (java.specification.version=$major); set ES_JAVA_HOME" ;;
  esac
  [ "$major" -ge 17 ] || die jdk "$home/bin/java is Java $major; Elasticsearch $ES_VERSION needs 17 or newer; set ES_JAVA_HOME"
  JAVA_HOME_FOUND=$home
}

ES_HOME=
ES_ORIGIN=
ensure_es() {
  local home=$CACHE/elasticsearch-$ES_VERSION
  local zip=$CACHE/downloads/elasticsearch-$ES_VERSION.zip
  if [ -x "$home/bin/elasticsearch" ]; then
    ES_ORIGIN="Maven Central $ES_ARTIFACT, cached"
  else
    with_lock "$CACHE/install.lock" install_es "$home" "$zip"
    ES_ORIGIN="Maven Central $ES_ARTIFACT, $(cat "$CACHE/downloads/last-install")"
  fi
  ES_HOME=$home
  if am_root; then
    ensure_es_user
    # Every directory above ES_HOME must be traversable by the ES user; when it is not
    # (a home directory with mode 700, say), run from a copy under /tmp.
    if ! as_es_user test -r "$ES_HOME/lib" -a -x "$ES_HOME/bin/elasticsearch"; then
      local copy=${TMPDIR:-/tmp}/noticesd-elasticsearch-$ES_VERSION
      if ! as_es_user test -x "$copy/bin/elasticsearch" 2>/dev/null; then
        log "$ES_USER cannot read $ES_HOME; copying it to $copy"
        rm -rf "$copy.tmp" && cp -a "$ES_HOME" "$copy.tmp" && chmod 755 "$copy.tmp" && rm -rf "$copy" && mv "$copy.tmp" "$copy"
      fi
      ES_HOME=$copy
      as_es_user test -x "$ES_HOME/bin/elasticsearch" || die es-user "$ES_USER cannot run $ES_HOME/bin/elasticsearch"
    fi
  fi
}

install_es() { # runs under the install lock
  local home=$1 zip=$2 t0 how
  [ -x "$home/bin/elasticsearch" ] && { echo "cached (installed by a parallel run)" >"$CACHE/downloads/last-install"; return; }
  mkdir -p "$CACHE/downloads"
  if [ -s "$zip" ]; then
    how="zip cached, unpacked now"
  else
    need mvn || apt_install maven maven
    t0=$(now)
    log "downloading $ES_ARTIFACT from Maven Central"
    # Maven's own downloads (the dependency plugin) live in the cache too.
    mvn -B -q -Dstyle.color=never -Dmaven.repo.local="$CACHE/m2" dependency:copy \
      -Dartifact="$ES_ARTIFACT" -DoutputDirectory="$CACHE/downloads.tmp" -Dmdep.overWriteReleases=true \
      >"$CACHE/mvn.log" 2>&1 || {
      tail -n 20 "$CACHE/mvn.log" >&2
      die download "mvn dependency:copy -Dartifact=$ES_ARTIFACT failed (is Maven Central reachable? log: $CACHE/mvn.log)"
    }
    mv "$CACHE/downloads.tmp/elasticsearch-$ES_VERSION.zip" "$zip"
    rm -rf "$CACHE/downloads.tmp" "$CACHE/m2/org/elasticsearch/distribution"  # the zip is kept once, in downloads/
    how="downloaded now in $(since "$t0") s"
  fi
  need unzip || apt_install unzip unzip
  t0=$(now)
  rm -rf "$home.tmp" && mkdir -p "$home.tmp"
  unzip -q "$zip" -d "$home.tmp" || die unpack "unzip $zip failed (delete it to download again)"
  rm -rf "$home" && mv "$home.tmp/elasticsearch-$ES_VERSION" "$home" && rm -rf "$home.tmp"
  chmod 755 "$CACHE" "$home"
  echo "$how, unpacked in $(since "$t0") s" >"$CACHE/downloads/last-install"
}

ensure_es_user() {
  id -u "$ES_USER" >/dev/null 2>&1 && return
  need useradd || die es-user "user $ES_USER is missing and there is no useradd to create it"
  log "creating system user $ES_USER (Elasticsearch refuses to run as root)"
  useradd -r -M -d /nonexistent -s /usr/sbin/nologin "$ES_USER" || die es-user "useradd $ES_USER failed"
}

# as_es_user COMMAND...: run as the ES user when root, as ourselves otherwise.
as_es_user() {
  if am_root; then
    setpriv --reuid="$ES_USER" --regid="$ES_USER" --init-groups -- "$@"
  else
    "$@"
  fi
}

# ---- ports and health ---------------------------------------------------------------

# free_port: sets PORT to a loopback TCP port nobody listens on (and not handed out
# earlier in this run). The kernel's table of listening sockets is in /proc/net/tcp{,6}.
TAKEN=" "
PORT=
free_port() {
  local used=" " h p i
  for h in $(awk 'FNR > 1 && $4 == "0A" { split($2, a, ":"); print a[2] }' /proc/net/tcp /proc/net/tcp6 2>/dev/null); do
    used="$used$((16#$h)) "
  done
  for i in $(seq 1 200); do
    p=$((20000 + (RANDOM * 32768 + RANDOM) % 40000))
    case "$used$TAKEN" in *" $p "*) continue ;; esac
    TAKEN="$TAKEN$p "
    PORT=$p
    return
  done
  die port "found no free port in 20000-59999"
}

# free_cluster_port: sets PORT to a free loopback port whose cluster bus port (PORT+10000)
# is free too, both below 65536.
free_cluster_port() {
  local i
  for i in $(seq 1 50); do
    free_port
    [ "$PORT" -lt 55535 ] || continue
    case "$TAKEN" in *" $((PORT + 10000)) "*) continue ;; esac
    awk -v p="$(printf '%04X' $((PORT + 10000)))" 'FNR > 1 && $4 == "0A" { split($2, a, ":"); if (a[2] == p) found = 1 } END { exit !found }' \
      /proc/net/tcp /proc/net/tcp6 2>/dev/null && continue
    TAKEN="$TAKEN$((PORT + 10000)) "
    return
  done
  die port "found no free port pair (PORT, PORT+10000) below 55535"
}

# http_get PORT PATH: the body of a GET on 127.0.0.1:PORT; fails unless the status is 200.
# Plain bash (/dev/tcp), so that a fresh machine needs no curl.
http_get_raw() {
  local resp
  exec 3<>"/dev/tcp/127.0.0.1/$1" || return 1
  printf 'GET %s HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' "$2" >&3
  resp=$(cat <&3)
  case "${resp%%$'\r'*}" in *" 200 "*) ;; *) return 1 ;; esac
  printf '%s' "${resp#*$'\r\n\r\n'}"
}
http_get() {
  timeout 10 bash -c "$(declare -f http_get_raw); http_get_raw \"\$@\"" http_get "$1" "$2" 2>/dev/null
}

json_field() { # json_field NAME: first "NAME" : "value" in stdin
  sed -n 's/.*"'"$1"'" *: *"\([^"]*\)".*/\1/p' | head -n1
}

alive() { [ -n "${1:-}" ] && kill -0 "$1" 2>/dev/null; }

# owner_check: when the owner died while we were starting (a test binary killed during a
# cold download), the watchdog may already have run its stop; so stop here and give up.
owner_check() {
  if [ -n "$OWNER" ] && ! alive "$OWNER"; then
    stop_all >/dev/null 2>&1 || true
    drop_owned_run
    die owner "process $OWNER, which the servers were started for, has exited"
  fi
}

# ---- start --------------------------------------------------------------------------

start_es() {
  if [ -s "$RUN/elasticsearch.url" ] && alive "$(cat "$RUN/elasticsearch.pid" 2>/dev/null)"; then
    log "elasticsearch already running at $(cat "$RUN/elasticsearch.url")"
    return
  fi
  local t0
  t0=$(now)
  ensure_java
  ensure_es
  with_port_retries elasticsearch start_es_once "$t0"
}

START_FAILURE=
START_DETAIL=
# with_port_retries NAME START_ONCE ARGS...: START_ONCE ARGS up to three times while it fails
# for a port taken meanwhile (START_FAILURE=port); any other failure stops with its
# START_FAILURE and START_DETAIL.
with_port_retries() {
  local name=$1 attempt
  shift
  for attempt in 1 2 3; do
    if "$@"; then return; fi
    [ "$START_FAILURE" = port ] || break
    log "$name: port taken meanwhile; trying other ports (attempt $((attempt + 1)))"
  done
  die "$name $START_FAILURE" "$START_DETAIL"
}
start_es_once() {
  local t0=$1 state http transport pid deadline body version t1
  state=$(mktemp -d "${TMPDIR:-/tmp}/noticesd-es.XXXXXX")
  chmod 755 "$state"
  echo "$state" >"$RUN/elasticsearch.dir"
  free_port; http=$PORT
  free_port; transport=$PORT
  cp -a "$ES_HOME/config" "$state/config"
  mkdir -p "$state/data" "$state/logs" "$state/tmp" "$state/snapshots"
  cat >"$state/config/elasticsearch.yml" <<EOF
cluster.name: noticesd-test
node.name: noticesd-test
path.data: $state/data
path.logs: $state/logs
# shared-file-system snapshots (docs/operating.md, "Backups"); deleted with the node
path.repo: $state/snapshots
discovery.type: single-node
network.host: 127.0.0.1
http.port: $http
transport.port: $transport
xpack.security.enabled: false
# a nearly full disk must not turn the test node read-only
cluster.routing.allocation.disk.threshold_enabled: false
EOF
  am_root && chown -R "$ES_USER:" "$state"
  t1=$(now)
  # setsid: its own session and process group, so that stop reaches the CLI launcher and
  # the server JVM it forks, and a Ctrl-C in the terminal does not kill it mid-test.
  (
    cd "$state"
    exec setsid env -i PATH=/usr/bin:/bin HOME="$state" LANG=C.UTF-8 \
      ES_HOME="$ES_HOME" ES_PATH_CONF="$state/config" ES_JAVA_HOME="$JAVA_HOME_FOUND" \
      ES_JAVA_OPTS="$ES_JAVA_OPTS_WANTED" ES_TMPDIR="$state/tmp" \
      bash -c 'if [ "$(id -u)" = 0 ]; then exec setpriv --reuid="$0" --regid="$0" --init-groups -- "$@"; else exec "$@"; fi' \
      "$ES_USER" "$ES_HOME/bin/elasticsearch"
  ) >"$state/logs/console.log" 2>&1 </dev/null &
  pid=$!
  echo "$pid" >"$RUN/elasticsearch.pid"
  deadline=$((SECONDS + WAIT))
  until body=$(http_get "$http" "/_cluster/health?wait_for_status=yellow&timeout=1s") &&
        case "$(json_field status <<<"$body")" in green|yellow) true ;; *) false ;; esac; do
    owner_check
    if ! alive "$pid"; then
      START_DETAIL="the node exited while starting; last lines of $state/logs/console.log:
$(tail -n 25 "$state/logs/console.log")"
      if grep -q -e 'BindException' -e 'Address already in use' "$state/logs/console.log"; then START_FAILURE=port; else START_FAILURE=start; fi
      stop_one elasticsearch quiet
      return 1
    fi
    if [ "$SECONDS" -ge "$deadline" ]; then
      START_FAILURE=health
      START_DETAIL="no yellow cluster health on port $http within ${WAIT}s; last lines of $state/logs/console.log:
$(tail -n 25 "$state/logs/console.log")"
      stop_one elasticsearch quiet
      return 1
    fi
    sleep 0.5
  done
  # (GET / lives in the rest-root module, which the test zip lacks; _cat answers chunked.)
  version=$(http_get "$http" '/_cat/nodes?h=version' | grep -oE '^[0-9]+\.[0-9]+\.[0-9]+[^[:space:]]*' | head -n1)
  echo "http://127.0.0.1:$http" >"$RUN/elasticsearch.url"
  echo "$version" >"$RUN/elasticsearch.version"
  echo "local process; $ES_ORIGIN; JDK $JAVA_HOME_FOUND; started in $(since "$t1") s ($(since "$t0") s with install checks)" >"$RUN/elasticsearch.about"
  log "elasticsearch $version ready at http://127.0.0.1:$http in $(since "$t1") s ($(since "$t0") s with install checks; local process; $ES_ORIGIN; pid $pid)"
}

start_redis() {
  if [ -s "$RUN/redis.url" ] && alive "$(cat "$RUN/redis.pid" 2>/dev/null)"; then
    log "redis already running at $(cat "$RUN/redis.url")"
    return
  fi
  local t0 t1 attempt state port pid deadline version
  t0=$(now)
  ensure_redis
  for attempt in 1 2 3; do
    state=$(mktemp -d "${TMPDIR:-/tmp}/noticesd-redis.XXXXXX")
    echo "$state" >"$RUN/redis.dir"
    free_port; port=$PORT
    t1=$(now)
    (
      cd "$state"
      exec setsid redis-server --bind 127.0.0.1 --port "$port" --save '' --appendonly "$REDIS_APPENDONLY" \
        --dir "$state" --logfile "$state/redis.log" --daemonize no
    ) >"$state/console.log" 2>&1 </dev/null &
    pid=$!
    echo "$pid" >"$RUN/redis.pid"
    deadline=$((SECONDS + WAIT))
    until [ "$(redis-cli -p "$port" ping 2>/dev/null)" = PONG ]; do
      owner_check
      if ! alive "$pid"; then
        START_DETAIL="redis-server exited while starting: $(tail -n 10 "$state/redis.log" "$state/console.log" 2>/dev/null)"
        START_FAILURE=start
        grep -q 'Address already in use' "$state/redis.log" "$state/console.log" 2>/dev/null && START_FAILURE=port
        break
      fi
      if [ "$SECONDS" -ge "$deadline" ]; then
        START_FAILURE=health START_DETAIL="redis-server on port $port did not answer PING within ${WAIT}s"
        break
      fi
      sleep 0.1
    done
    if [ "$(redis-cli -p "$port" ping 2>/dev/null)" = PONG ]; then
      version=$(redis-cli -p "$port" info server | tr -d '\r' | awk -F: '$1 == "redis_version" { print $2 }')
      echo "redis://127.0.0.1:$port/0" >"$RUN/redis.url"
      echo "$version" >"$RUN/redis.version"
      echo "local process; $REDIS_ORIGIN ($(command -v redis-server)); started in $(since "$t1") s ($(since "$t0") s with install checks)" >"$RUN/redis.about"
      log "redis $version ready at redis://127.0.0.1:$port/0 in $(since "$t1") s ($(since "$t0") s with install checks; local process; $REDIS_ORIGIN; pid $pid)"
      return
    fi
    stop_one redis quiet
    [ "$START_FAILURE" = port ] || break
    log "redis: port taken meanwhile; trying another (attempt $((attempt + 1)))"
  done
  die "redis $START_FAILURE" "$START_DETAIL"
}

# start_redis_cluster: a Redis Cluster of 3 masters and 3 replicas (one each), six
# redis-server --cluster-enabled yes processes in one session, each with its own directory,
# joined by redis-cli --cluster create; ready once every node says cluster_state:ok and
# every master has its replica, synced. Its URL is go-redis's cluster form (redis.ParseClusterURL):
# redis://127.0.0.1:P1?addr=127.0.0.1:P2&addr=127.0.0.1:P3.
start_redis_cluster() {
  if [ -s "$RUN/redis-cluster.url" ] && alive "$(cat "$RUN/redis-cluster.pid" 2>/dev/null)"; then
    log "redis-cluster already running at $(cat "$RUN/redis-cluster.url")"
    return
  fi
  local t0
  t0=$(now)
  ensure_redis
  with_port_retries redis-cluster start_redis_cluster_once "$t0"
}

start_redis_cluster_once() {
  local t0=$1 t1 state ports=() addrs=() p i pid deadline version ok url
  state=$(mktemp -d "${TMPDIR:-/tmp}/noticesd-redis-cluster.XXXXXX")
  echo "$state" >"$RUN/redis-cluster.dir"
  for i in 1 2 3 4 5 6; do
    free_cluster_port
    ports+=("$PORT")
    addrs+=("127.0.0.1:$PORT")
    mkdir -p "$state/$PORT"
  done
  t1=$(now)
  (
    cd "$state"
    # One session for the six: stop_one ends them together.
    exec setsid env APPENDONLY="$REDIS_APPENDONLY" bash -c '
      for p in "$@"; do
        redis-server --bind 127.0.0.1 --port "$p" --cluster-enabled yes --cluster-config-file nodes.conf \
          --cluster-node-timeout 2000 --save "" --appendonly "$APPENDONLY" --dir "$PWD/$p" \
          --logfile "$PWD/$p/redis.log" --daemonize no &
      done
      wait' cluster "${ports[@]}"
  ) >"$state/console.log" 2>&1 </dev/null &
  pid=$!
  echo "$pid" >"$RUN/redis-cluster.pid"
  deadline=$((SECONDS + WAIT))
  for p in "${ports[@]}"; do
    until [ "$(redis-cli -p "$p" ping 2>/dev/null)" = PONG ]; do
      owner_check
      if grep -q 'Address already in use' "$state/$p/redis.log" 2>/dev/null; then
        START_FAILURE=port START_DETAIL="port $p or its bus port $((p + 10000)) was taken"
        stop_one redis-cluster quiet
        return 1
      fi
      if ! alive "$pid" || [ "$SECONDS" -ge "$deadline" ]; then
        START_FAILURE=start
        START_DETAIL="redis-server on port $p (cluster node) did not answer PING: $(tail -n 10 "$state/$p/redis.log" "$state/console.log" 2>/dev/null)"
        stop_one redis-cluster quiet
        return 1
      fi
      sleep 0.1
    done
  done
  if ! redis-cli --cluster create "${addrs[@]}" --cluster-replicas 1 --cluster-yes >"$state/create.log" 2>&1; then
    START_FAILURE=create START_DETAIL="redis-cli --cluster create failed: $(tail -n 15 "$state/create.log")"
    stop_one redis-cluster quiet
    return 1
  fi
  # Ready: every node sees the whole cluster as ok, and every master has its replica.
  until ok=1
    for p in "${ports[@]}"; do
      redis-cli -p "$p" cluster info 2>/dev/null | tr -d '\r' | grep -qx 'cluster_state:ok' || ok=
      redis-cli -p "$p" cluster info 2>/dev/null | tr -d '\r' | grep -qx 'cluster_known_nodes:6' || ok=
      # (a replica counts once its first sync is done: WAIT is answered from then on)
      if redis-cli -p "$p" info replication 2>/dev/null | tr -d '\r' | grep -qx 'role:master'; then
        redis-cli -p "$p" info replication 2>/dev/null | tr -d '\r' | grep -q '^slave0:.*state=online' || ok=
      else
        redis-cli -p "$p" info replication 2>/dev/null | tr -d '\r' | grep -qx 'master_link_status:up' || ok=
      fi
    done
    [ -n "$ok" ]; do
    owner_check
    if [ "$SECONDS" -ge "$deadline" ]; then
      START_FAILURE=health START_DETAIL="the cluster on ports ${ports[*]} was not ok with a synced replica per master within ${WAIT}s"
      stop_one redis-cluster quiet
      return 1
    fi
    sleep 0.2
  done
  version=$(redis-cli -p "${ports[0]}" info server | tr -d '\r' | awk -F: '$1 == "redis_version" { print $2 }')
  url="redis://${addrs[0]}?addr=${addrs[1]}&addr=${addrs[2]}"
  echo "$url" >"$RUN/redis-cluster.url"
  echo "$version" >"$RUN/redis-cluster.version"
  echo "local processes, 3 masters + 3 replicas on ports ${ports[*]}; $REDIS_ORIGIN; started in $(since "$t1") s ($(since "$t0") s with install checks)" >"$RUN/redis-cluster.about"
  log "redis-cluster $version ready at $url in $(since "$t1") s (3 masters + 3 replicas, ports ${ports[*]}; session $pid)"
}

write_env() {
  {
    [ -s "$RUN/elasticsearch.url" ] && echo "export NOTICES_TEST_ELASTICSEARCH_URL=$(cat "$RUN/elasticsearch.url")"
    [ -s "$RUN/redis.url" ] && echo "export NOTICES_TEST_REDIS_URL=$(cat "$RUN/redis.url")"
    [ -s "$RUN/redis-cluster.url" ] && echo "export NOTICES_TEST_REDIS_CLUSTER_URL='$(cat "$RUN/redis-cluster.url")'"
    true
  } >"$RUN/services.env"
}

# watchdog: when the owner process exits (make test killed, a test binary timed out),
# stop everything. It runs in its own session so that a Ctrl-C does not kill it first.
start_watchdog() {
  [ -n "$OWNER" ] || return 0
  alive "$(cat "$RUN/watchdog.pid" 2>/dev/null)" && return 0
  NOTICES_SERVICES_RUN=$RUN NOTICES_SERVICES_CACHE=$CACHE setsid bash -c '
    while kill -0 "$1" 2>/dev/null; do sleep 1; done
    exec "$2" stop-owned' watchdog "$OWNER" "$SCRIPT" >>"$RUN/watchdog.log" 2>&1 </dev/null &
  echo $! >"$RUN/watchdog.pid"
}

# ---- stop ---------------------------------------------------------------------------

# session_pids SID: the processes in session SID (from /proc: no procps on minimal images).
session_pids() {
  local f line rest state ppid pgrp sid
  for f in /proc/[0-9]*/stat; do
    { read -r line <"$f"; } 2>/dev/null || continue
    rest=${line##*) }
    read -r state ppid pgrp sid _ <<<"$rest"
    [ "$sid" = "$1" ] && { f=${f#/proc/}; echo "${f%/stat}"; }
  done
  return 0
}

# stop_one NAME [quiet]: TERM the session, wait for every process in it, KILL what stays.
stop_one() {
  local name=$1 quiet=${2:-} sid left i
  sid=$(cat "$RUN/$name.pid" 2>/dev/null || true)
  if alive "$sid"; then
    kill -TERM -- "-$sid" 2>/dev/null || kill -TERM "$sid" 2>/dev/null || true
    for i in $(seq 1 150); do
      left=$(session_pids "$sid")
      [ -z "$left" ] && break
      sleep 0.2
    done
    left=$(session_pids "$sid")
    if [ -n "$left" ]; then
      log "$name: still running after 30 s, killing $(echo $left)"
      kill -KILL $left 2>/dev/null || true
    fi
    [ -n "$quiet" ] || log "$name stopped (session $sid)"
  fi
  local dir
  dir=$(cat "$RUN/$name.dir" 2>/dev/null || true)
  case "$dir" in "${TMPDIR:-/tmp}"/noticesd-*) rm -rf "$dir" ;; esac
  rm -f "$RUN/$name.pid" "$RUN/$name.url" "$RUN/$name.dir" "$RUN/$name.about" "$RUN/$name.version"
}

stop_all() {
  stop_one elasticsearch
  stop_one redis
  stop_one redis-cluster
  local w
  w=$(cat "$RUN/watchdog.pid" 2>/dev/null || true)
  # (not when the watchdog itself is stopping us: it execs `stop-owned`, keeping its pid)
  if [ -n "$w" ] && [ "$w" != "$$" ] && alive "$w"; then kill "$w" 2>/dev/null || true; fi
  rm -f "$RUN/watchdog.pid" "$RUN/services.env"
}

# drop_owned_run: a run directory made for one owner (make test, a test binary) goes
# with it.
drop_owned_run() {
  case "$RUN" in */noticesd-test-services.*|*/noticesd-testservers-*) rm -rf "$RUN" ;; esac
}

status() {
  local name any=
  for name in elasticsearch redis redis-cluster; do
    [ "$name" = redis-cluster ] && [ ! -e "$RUN/redis-cluster.pid" ] && continue  # started only when asked for
    if [ -s "$RUN/$name.url" ] && alive "$(cat "$RUN/$name.pid" 2>/dev/null)"; then
      echo "$name $(cat "$RUN/$name.version" 2>/dev/null) running at $(cat "$RUN/$name.url") (session $(cat "$RUN/$name.pid")): $(cat "$RUN/$name.about" 2>/dev/null)"
      any=1
    else
      echo "$name: not running"
    fi
  done
  [ -n "$any" ]
}

# ---- main ---------------------------------------------------------------------------

cmd=${1:-}
[ $# -gt 0 ] && shift
case "$cmd" in
  install)
    mkdir -p "$CACHE"
    ensure_redis && log "redis-server: $REDIS_ORIGIN"
    ensure_java && log "JDK: $JAVA_HOME_FOUND"
    ensure_es && log "elasticsearch $ES_VERSION: $ES_ORIGIN at $ES_HOME"
    ;;
  start)
    mkdir -p "$CACHE" "$RUN"
    [ $# -gt 0 ] || set -- elasticsearch redis
    start_watchdog
    # Redis is quick; start it first, then Elasticsearch, with the Redis Cluster (a few
    # seconds) beside it.
    cluster_pid=
    for s in "$@"; do
      case "$s" in
        redis) start_redis ;;
        redis-cluster) start_redis_cluster & cluster_pid=$! ;;
        elasticsearch|es) ;;
        *) die usage "unknown service $s" ;;
      esac
    done
    for s in "$@"; do case "$s" in elasticsearch|es) start_es ;; esac; done
    if [ -n "$cluster_pid" ] && ! wait "$cluster_pid"; then
      exit 1  # its FAILED line is printed
    fi
    owner_check
    write_env
    ;;
  paths)
    mkdir -p "$CACHE"
    ensure_java
    ensure_es
    printf 'ES_HOME=%s\nES_JAVA_HOME=%s\nES_USER=%s\nES_VERSION=%s\n' "$ES_HOME" "$JAVA_HOME_FOUND" "$(am_root && echo "$ES_USER")" "$ES_VERSION"
    ;;
  stop) stop_all ;;
  stop-owned) stop_all; drop_owned_run ;;  # the watchdog's stop
  status) status ;;
  env) cat "$RUN/services.env" 2>/dev/null || true ;;
  *)
    sed -n '2,/^set -euo/p' "$SCRIPT" | sed '$d' | sed 's/^# \{0,1\}//' >&2
    exit 2
    ;;
esac
