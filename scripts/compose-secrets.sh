#!/usr/bin/env bash
# Makes what compose.secured.yaml mounts, in DIR (default ./secrets, made mode 700): a CA of your
# own, the certificates it signs of each Elasticsearch node (HTTPS, and TLS between the nodes:
# elasticsearch, elasticsearch2) and of each Redis server (redis, redis-replica, and one for the
# three Sentinels redis-sentinel1..3); names: the compose service names, localhost and 127.0.0.1,
# plus EXTRA_SANS, e.g. "DNS:es.example.internal,IP:10.0.0.5"; usages: server and client, as
# nodes and replicas dial each other with them), random passwords for noticesd's user on both
# and for the Sentinels, Redis's ACL file (the password as its SHA-256 only), the replicas'
# login to the primary (redis_replication.conf), and Elasticsearch's file-realm files: the role
# noticesd needs (roles.yml), the user (users, a bcrypt hash made by the Elasticsearch image's own
# elasticsearch-users) and users_roles. docs/operating.md ("Secured Elasticsearch and Redis with
# compose") walks through it; make test-deploy runs it (test/deployrun). compose.secured.yaml uses
# the files of elasticsearch and redis; compose.replicated.yaml the others too.
#
#   scripts/compose-secrets.sh [DIR]
#
# Environment: ES_IMAGE (the Elasticsearch image whose elasticsearch-users makes the hash),
# NOTICES_NAMESPACE (the index prefix the role covers, default notices), EXTRA_SANS, DAYS (825).
# Files are mode 644 in the 700 directory: compose bind-mounts them as they are, and the
# containers' users (Elasticsearch uid 1000, redis, noticesd uid 10001) must read them.
# Existing files are kept (delete one to make it again); the CA key never leaves DIR.
set -euo pipefail
DIR=${1:-./secrets}
ES_IMAGE=${ES_IMAGE:-docker.elastic.co/elasticsearch/elasticsearch:8.19.21}
NS=${NOTICES_NAMESPACE:-notices}
DAYS=${DAYS:-825}
install -d -m 700 "$DIR" "$DIR/tls"
chmod 755 "$DIR/tls"
cd "$DIR"
umask 022
say() { echo "compose-secrets: $*" >&2; }

if [ ! -s ca-key.pem ]; then
  say "a CA (ca-key.pem stays here; tls/ca.pem is what clients trust)"
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days "$DAYS" \
    -subj "/CN=noticesd compose CA" -keyout ca-key.pem -out tls/ca.pem 2>/dev/null
  chmod 600 ca-key.pem
fi
# cert NAME [SANS]: tls/NAME.pem and NAME-key.pem, for the host NAME (the compose service) and SANS
cert() {
  local name=$1
  [ -s "tls/$name.pem" ] && [ -s "$name-key.pem" ] && return
  say "the certificate of $name"
  local sans="DNS:$name,DNS:localhost,IP:127.0.0.1${2:+,$2}${EXTRA_SANS:+,$EXTRA_SANS}"
  openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj "/CN=$name" \
    -keyout "$name-key.pem" -out "$name.csr" 2>/dev/null
  openssl x509 -req -in "$name.csr" -CA tls/ca.pem -CAkey ca-key.pem -CAcreateserial -days "$DAYS" \
    -extfile <(printf 'subjectAltName=%s\nextendedKeyUsage=serverAuth,clientAuth\n' "$sans") -out "tls/$name.pem" 2>/dev/null
  rm -f "$name.csr" tls/ca.srl ca.srl
  chmod 644 "$name-key.pem"
}
cert elasticsearch
cert elasticsearch2
cert redis
cert redis-replica
cert redis-sentinel DNS:redis-sentinel1,DNS:redis-sentinel2,DNS:redis-sentinel3

for f in es_password redis_password redis_sentinel_password; do
  [ -s "$f" ] || { say "a random $f"; openssl rand -hex 24 >"$f"; }
  chmod 644 "$f"
done

if [ ! -s redis_users.acl ]; then
  say "redis_users.acl: default user off, noticesd with the rule docs/operating.md gives"
  printf 'user default off\nuser noticesd on #%s ~* &* +@all\n' "$(tr -d '\n' <redis_password | sha256sum | cut -d' ' -f1)" >redis_users.acl
fi

if [ ! -s redis_replication.conf ]; then
  say "redis_replication.conf: how a replica logs in to the primary (noticesd's user)"
  printf 'masteruser noticesd\nmasterauth %s\n' "$(tr -d '\n' <redis_password)" >redis_replication.conf
fi

if [ ! -s es_roles.yml ]; then
  cat >es_roles.yml <<ROLE
noticesd:
  cluster: [monitor]
  indices:
    - names: ['$NS-*']
      privileges: [manage, read, write]
ROLE
fi
[ -s es_users_roles ] || echo 'noticesd:noticesd' >es_users_roles
if [ ! -s es_users ]; then
  say "es_users: the noticesd user, hashed by $ES_IMAGE's elasticsearch-users"
  # the password on standard input, not on a command line of the host
  docker run --rm -i --network none --entrypoint /bin/bash "$ES_IMAGE" -c '
    set -e; read -r pw
    if command -v java >/dev/null; then ES_JAVA_HOME=$(dirname "$(dirname "$(readlink -f "$(command -v java)")")"); export ES_JAVA_HOME; fi
    cd /usr/share/elasticsearch
    bin/elasticsearch-users useradd noticesd -p "$pw" >/dev/null
    grep "^noticesd:" config/users' <es_password >es_users.tmp || { rm -f es_users.tmp; echo "compose-secrets: elasticsearch-users in $ES_IMAGE failed (above)" >&2; exit 1; }
  mv es_users.tmp es_users
fi
chmod 644 es_users es_users_roles es_roles.yml redis_users.acl redis_replication.conf
say "done: $(pwd)"
