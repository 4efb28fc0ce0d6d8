#!/usr/bin/env bash
# The one test command (make test). Installs what it needs on a fresh machine.
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
need go || { echo "test.sh: Go toolchain not found" >&2; exit 1; }

TAGS=sqlite_fts5
echo "== go vet"
go vet -tags "$TAGS" ./...
echo "== go test"
go test -tags "$TAGS" -count=1 -timeout 12m ./...
echo "== race detector on the concurrent parts"
go test -race -tags "$TAGS" -count=1 -timeout 10m ./api ./worker ./internal/collector ./matcher ./internal/webhook ./internal/store/sqlite
go test -race -tags "$TAGS" -count=1 -timeout 10m -run 'Reindex|TwoIngesters|Allocate' ./internal/store/elastic ./internal/store/arrival
echo "== fuzz q parser (20s)"
go test -tags "$TAGS" -run '^$' -fuzz FuzzParse -fuzztime 20s ./internal/query
