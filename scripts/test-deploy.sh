#!/usr/bin/env bash
# make test-deploy: the container deployment, really built and run on a Docker engine of its own.
#
#  1. installs docker.io, docker-compose (v1) and debootstrap from Debian's packages when missing;
#  2. starts its own dockerd (socket, data root and exec root under a temp dir; no iptables, no
#     bridge; the overlay2 storage driver where overlay mounts work, vfs otherwise) and stops it
#     and removes everything it made on every exit;
#  3. makes the base images locally, because no container registry is reachable: debian:bookworm-slim
#     (debootstrap --variant=minbase, docker import), golang:<go major.minor>-bookworm (that plus gcc
#     and this machine's Go toolchain), redis:7 (Debian's redis-server) and a TEST-ONLY stand-in for
#     docker.elastic.co/elasticsearch/elasticsearch:8.19.21 (the Maven Central test zip on Debian's
#     JDK 17; test/deployrun/images/elasticsearch). Each is cached as a `docker save` tarball in
#     $NOTICES_DEPLOY_CACHE (default .cache/deploy), keyed by what made it;
#  4. builds noticesd:local from the Dockerfile (COMMIT passed; the version is in the code) and checks `version`;
#  5. go test -tags deployrun ./test/deployrun: compose up through a host-network override, the
#     tour, a webhook from a worker container, down/up keeping data, a worker killed mid-delivery;
#     then every command of docs/quickstart-operator.md (the secured stack); then the stack on a
#     Redis Cluster (compose.cluster.yaml: six nodes, a search and a screen);
#  6. the live suites of the Elasticsearch and Redis stores with their servers started by dockertest
#     (internal/testservers' Docker path) from the local images.
#
# Every stage prints its seconds. Environment:
#   NOTICES_DEPLOY_CACHE     image tarballs and the debootstrap rootfs [.cache/deploy]
#   NOTICES_SERVICES_CACHE   scripts/services.sh's cache, for the Elasticsearch zip [.cache/services]
#   DEBIAN_MIRROR            [http://deb.debian.org/debian]
#   NOTICES_DEPLOY_STORAGE_DRIVER  overlay2 or vfs [overlay2 when an overlay mount works here]
#   NOTICES_DEPLOY_KEEP=1    leave dockerd running at the end (for debugging; prints DOCKER_HOST)
#   NOTICES_DEPLOY_STOP_AFTER=images  stop once the images are built
#   NOTICES_DEPLOY_RUN=REGEXP  run only the compose tests REGEXP matches (go test -run, e.g.
#                            TestComposeCluster) and stop after them, without the dockertest stage
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
CACHE=${NOTICES_DEPLOY_CACHE:-$ROOT/.cache/deploy}
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
ES_VERSION=8.19.21
ES_IMAGE=docker.elastic.co/elasticsearch/elasticsearch:$ES_VERSION
T0=$SECONDS
stage() { echo "== [deploy ${SECONDS}s] $*"; }
took() { echo "== [deploy ${SECONDS}s] $1 took $(( SECONDS - $2 ))s"; }
die() { echo "test-deploy: $*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || die "must run as root: it starts its own dockerd and runs debootstrap"
need() { command -v "$1" >/dev/null 2>&1; }
missing=()
need dockerd || missing+=(docker.io)
need docker-compose || missing+=(docker-compose)
need debootstrap || missing+=(debootstrap)
need curl || missing+=(curl)
need jq || missing+=(jq)
need gcc || missing+=(gcc libc6-dev)
need go || die "no Go toolchain on PATH (the golang image is made from this machine's)"
if [ ${#missing[@]} -gt 0 ]; then
  stage "installing ${missing[*]} from Debian's packages"
  t=$SECONDS
  (apt-get update -qq || true) >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  took "install" "$t"
fi
mkdir -p "$CACHE"

# ---- our own dockerd
WORK=$(mktemp -d "${TMPDIR:-/tmp}/noticesd-deploy.XXXXXX")
chmod 755 "$WORK"
export DOCKER_HOST=unix://$WORK/docker.sock
DOCKERD_PID=
cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  if [ "${NOTICES_DEPLOY_KEEP:-}" = 1 ] && [ -n "$DOCKERD_PID" ]; then
    echo "== NOTICES_DEPLOY_KEEP=1: dockerd (pid $DOCKERD_PID) left running; export DOCKER_HOST=$DOCKER_HOST; stop with kill $DOCKERD_PID, then umount under $WORK and rm -rf $WORK"
    exit "$rc"
  fi
  stage "cleaning up (exit status $rc)"
  if [ -n "$DOCKERD_PID" ] && kill -0 "$DOCKERD_PID" 2>/dev/null; then
    # containers first, so that dockerd exits at once and leaves no container processes
    local ids
    ids=$(timeout 30 docker ps -aq 2>/dev/null || true)
    [ -z "$ids" ] || timeout 60 docker rm -f $ids >/dev/null 2>&1 || true
    kill "$DOCKERD_PID" 2>/dev/null || true
    for _ in $(seq 1 60); do kill -0 "$DOCKERD_PID" 2>/dev/null || break; sleep 0.5; done
    if kill -0 "$DOCKERD_PID" 2>/dev/null; then
      echo "test-deploy: dockerd did not stop within 30 s; killing it" >&2
      kill -9 "$DOCKERD_PID" 2>/dev/null || true
    fi
  fi
  # the containerd that dockerd started for itself (its pid file is under our exec root)
  local cpid
  cpid=$(cat "$WORK/exec/containerd/containerd.pid" 2>/dev/null || true)
  if [ -n "$cpid" ] && kill -0 "$cpid" 2>/dev/null; then kill "$cpid" 2>/dev/null || true; sleep 1; kill -9 "$cpid" 2>/dev/null || true; fi
  # vfs and the exec root leave mounts (shm, netns, overlay of the build); innermost first
  local m
  for m in $(awk -v w="$WORK" 'index($2, w) == 1 { print $2 }' /proc/self/mounts | sort -r); do
    umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || echo "test-deploy: could not unmount $m" >&2
  done
  rm -rf "$WORK" 2>/dev/null || { sleep 2; rm -rf "$WORK" || echo "test-deploy: could not remove $WORK" >&2; }
  if awk -v w="$WORK" 'index($2, w) == 1 { found = 1 } END { exit !found }' /proc/self/mounts; then
    echo "test-deploy: mounts under $WORK remain" >&2
    rc=1
  fi
  echo "== [deploy ${SECONDS}s] test-deploy ended with status $rc after $(( SECONDS - T0 ))s; dockerd stopped, $WORK removed"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Storage driver: overlay2 where this kernel mounts an overlay file system on the data root's
# file system (measured here: the golang image took 605 s to build with vfs, which copies every
# layer whole), vfs otherwise. NOTICES_DEPLOY_STORAGE_DRIVER forces one.
STORAGE=${NOTICES_DEPLOY_STORAGE_DRIVER:-}
if [ -z "$STORAGE" ]; then
  STORAGE=vfs
  o=$WORK/overlay-probe
  mkdir -p "$o"/{lower,upper,work,merged}
  if mount -t overlay overlay -o "lowerdir=$o/lower,upperdir=$o/upper,workdir=$o/work" "$o/merged" 2>/dev/null; then
    umount "$o/merged" && STORAGE=overlay2
  fi
  rm -rf "$o"
fi
stage "starting dockerd (storage driver $STORAGE; data root and socket under $WORK)"
t=$SECONDS
mkdir -p "$WORK/data" "$WORK/exec"
dockerd --host "$DOCKER_HOST" --data-root "$WORK/data" --exec-root "$WORK/exec" --pidfile "$WORK/dockerd.pid" \
  --iptables=false --ip6tables=false --bridge=none --storage-driver="$STORAGE" >"$WORK/dockerd.log" 2>&1 &
DOCKERD_PID=$!
until docker version >/dev/null 2>&1; do
  kill -0 "$DOCKERD_PID" 2>/dev/null || { tail -n 30 "$WORK/dockerd.log" >&2; die "dockerd exited while starting (log above)"; }
  [ $(( SECONDS - t )) -lt 60 ] || { tail -n 30 "$WORK/dockerd.log" >&2; die "dockerd did not answer within 60 s"; }
  sleep 0.5
done
stage "dockerd $(docker version -f '{{.Server.Version}}') answers at $DOCKER_HOST (pid $DOCKERD_PID)"
took "dockerd start" "$t"

# ---- base images
# key: a hash of what makes an image (the recipe text and the versions it depends on)
keyof() { sha256sum | cut -c1-16; }
# cached NAME KEY: load NAME from its tarball when one with KEY is cached; else return 1
cached() {
  local name=$1 key=$2 file
  file="$CACHE/$(tr '/:' '__' <<<"$name")-$key.tar"
  [ -s "$file" ] || return 1
  local t=$SECONDS
  docker load -i "$file" >/dev/null || { rm -f "$file"; return 1; }
  stage "$name loaded from $file ($(( SECONDS - t ))s)"
}
save() {
  local name=$1 key=$2 file t=$SECONDS
  file="$CACHE/$(tr '/:' '__' <<<"$name")-$key.tar"
  rm -f "$CACHE/$(tr '/:' '__' <<<"$name")"-*.tar
  docker save -o "$file.tmp" "$name" && mv "$file.tmp" "$file"
  stage "$name saved to $file ($(( SECONDS - t ))s)"
}
# built NAME KEY DIR: docker build DIR as NAME unless cached
built() {
  local name=$1 key=$2 dir=$3 t=$SECONDS
  cached "$name" "$key" && return
  stage "building $name from $dir"
  DOCKER_BUILDKIT=0 docker build -q --network host -t "$name" "$dir" >"$WORK/build.log" 2>&1 ||
    { tail -n 30 "$WORK/build.log" >&2; die "docker build of $name failed (above)"; }
  took "building $name" "$t"
  save "$name" "$key"
}

IMAGES=$ROOT/test/deployrun/images
stage "base images (cache $CACHE)"
T_IMAGES=$SECONDS
key=$(echo "debootstrap minbase bookworm $MIRROR v1" | keyof)
if ! cached debian:bookworm-slim "$key"; then
  t=$SECONDS
  rootfs=$WORK/rootfs
  stage "debootstrap --variant=minbase bookworm from $MIRROR"
  debootstrap --variant=minbase bookworm "$rootfs" "$MIRROR" >"$WORK/debootstrap.log" 2>&1 ||
    { tail -n 30 "$WORK/debootstrap.log" >&2; die "debootstrap failed (log above)"; }
  echo "deb $MIRROR bookworm main" >"$rootfs/etc/apt/sources.list"
  rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/*.bin "$rootfs"/var/cache/apt/archives/*.deb
  tar -C "$rootfs" -c . | docker import -c 'CMD ["bash"]' - debian:bookworm-slim >/dev/null
  rm -rf "$rootfs"
  took "debian:bookworm-slim (debootstrap + import)" "$t"
  save debian:bookworm-slim "$key"
fi
base_id=$(docker image inspect -f '{{.Id}}' debian:bookworm-slim)

GOROOT_HOST=$(go env GOROOT)
GOVERSION=$(go env GOVERSION)              # go1.26.8
GOTAG=$(sed -E 's/^go([0-9]+\.[0-9]+).*/\1/' <<<"$GOVERSION")-bookworm
grep -q "^FROM golang:$GOTAG " Dockerfile || die "the Dockerfile's build stage is not FROM golang:$GOTAG (this machine's Go is $GOVERSION): make them agree"
key=$( (echo "$base_id $GOVERSION"; cat "$IMAGES/golang/Dockerfile" /usr/local/share/ca-certificates/*.crt 2>/dev/null) | keyof)
if ! cached "golang:$GOTAG" "$key"; then
  t=$SECONDS
  ctx=$WORK/golang-ctx
  mkdir -p "$ctx/extra-ca"
  cp "$IMAGES/golang/Dockerfile" "$ctx/"
  cp /usr/local/share/ca-certificates/*.crt "$ctx/extra-ca/" 2>/dev/null || true
  # the toolchain without its tests and the API files the go command never reads
  tar -C "$GOROOT_HOST" --exclude=./test --exclude='./pkg/obj' --exclude='./pkg/tool/*/pprof' -c . | (mkdir -p "$ctx/go" && tar -C "$ctx/go" -x)
  built "golang:$GOTAG" "$key" "$ctx"
  rm -rf "$ctx"
fi

key=$( (echo "$base_id"; cat "$IMAGES/redis/Dockerfile") | keyof)
built redis:7 "$key" "$IMAGES/redis"

key=$( (echo "$base_id $ES_VERSION"; cat "$IMAGES/elasticsearch/Dockerfile" "$IMAGES/elasticsearch/entrypoint.sh") | keyof)
if ! cached "$ES_IMAGE" "$key"; then
  # the Elasticsearch test zip, as scripts/services.sh fetches and unpacks it (Maven Central)
  SVC_CACHE=${NOTICES_SERVICES_CACHE:-$ROOT/.cache/services}
  es_home=$SVC_CACHE/elasticsearch-$ES_VERSION
  if [ ! -x "$es_home/bin/elasticsearch" ]; then
    stage "fetching the Elasticsearch test zip (scripts/services.sh install elasticsearch)"
    NOTICES_SERVICES_CACHE=$SVC_CACHE ./scripts/services.sh install elasticsearch
  fi
  ctx=$WORK/es-ctx
  mkdir -p "$ctx"
  cp "$IMAGES/elasticsearch/Dockerfile" "$IMAGES/elasticsearch/entrypoint.sh" "$ctx/"
  cp -a "$es_home" "$ctx/elasticsearch"
  rm -rf "$ctx/elasticsearch/logs"/* "$ctx/elasticsearch/data"
  built "$ES_IMAGE" "$key" "$ctx"
  rm -rf "$ctx"
fi
took "base images" "$T_IMAGES"
docker images --format '   {{.Repository}}:{{.Tag}} {{.Size}}'

# ---- the noticesd image
stage "docker build -t noticesd:local . (the Dockerfile, with COMMIT)"
t=$SECONDS
COMMIT=$(git rev-parse HEAD)
DOCKER_BUILDKIT=0 docker build --network host --build-arg COMMIT="$COMMIT" \
  -t noticesd:local . >"$WORK/build.log" 2>&1 ||
  { tail -n 40 "$WORK/build.log" >&2; die "docker build of noticesd:local failed (above)"; }
grep -E '^(Step|Successfully)' "$WORK/build.log" | sed 's/^/   /'
took "noticesd:local build" "$t"
docker images --format '   {{.Repository}}:{{.Tag}} {{.Size}}' noticesd:local
out=$(docker run --rm --network host noticesd:local version)
echo "   docker run --rm noticesd:local version: $out"
grep -q "$COMMIT" <<<"$out" || die "noticesd:local version does not print the commit $COMMIT: $out"
echo "   the image's version names commit $COMMIT: ok"

if [ "${NOTICES_DEPLOY_STOP_AFTER:-}" = images ]; then exit 0; fi

# ---- compose, for real
stage "go test -tags deployrun ./test/deployrun (compose up, tour, webhook, down/up, worker killed; quickstart; Redis Cluster)"
t=$SECONDS
export NOTICES_DEPLOY_DOCKERD=1
CI=${CI:-} go test -count=1 -tags deployrun -timeout 30m -v ${NOTICES_DEPLOY_RUN:+-run "$NOTICES_DEPLOY_RUN"} ./test/deployrun 2>&1 | tee "$WORK/deployrun.log" | grep -E '^(=== RUN|--- |PASS|FAIL|ok|    |deployrun:)' || true
grep -qE '^ok ' "$WORK/deployrun.log" || { tail -n 80 "$WORK/deployrun.log" >&2; die "test/deployrun failed (above)"; }
took "compose tests" "$t"
if [ -n "${NOTICES_DEPLOY_RUN:-}" ]; then
  grep -q '^--- PASS' "$WORK/deployrun.log" || die "NOTICES_DEPLOY_RUN=$NOTICES_DEPLOY_RUN matched no test"
  stage "NOTICES_DEPLOY_RUN=$NOTICES_DEPLOY_RUN: only those compose tests ran (no dockertest stage); not the whole of test-deploy"
  exit 0
fi

# ---- dockertest, for real
stage "live store suites with servers from dockertest (DOCKER_HOST=$DOCKER_HOST, no NOTICES_TEST_*_URL)"
t=$SECONDS
unset NOTICES_TEST_ELASTICSEARCH_URL NOTICES_TEST_REDIS_URL
CI=true go test -count=1 -tags sqlite_fts5 -timeout 20m -v ./internal/store/elastic ./internal/store/redisstore 2>&1 |
  tee "$WORK/dockertest.log" | grep -E '^(--- FAIL|FAIL|ok|testservers:)|Docker image' || true
grep -qE '^(--- FAIL|FAIL)' "$WORK/dockertest.log" && { grep -B5 -A20 -- '--- FAIL' "$WORK/dockertest.log" | head -n 120 >&2; die "a live store suite failed under dockertest (above)"; }
[ "$(grep -c '^ok ' "$WORK/dockertest.log")" = 2 ] || { tail -n 40 "$WORK/dockertest.log" >&2; die "the two store packages did not both pass"; }
grep -q 'Docker image' "$WORK/dockertest.log" || die "the suites passed but did not say their servers came from Docker images"
# (TestRedisCluster's cluster is local processes by design: no image makes one, and its
# line says so without 'tried first'.)
! grep -q 'tried first' "$WORK/dockertest.log" || die "a server came from a local process after Docker failed (the 'tried first' line above)"
took "dockertest suites" "$t"

stage "test-deploy passed in $(( SECONDS - T0 ))s"
