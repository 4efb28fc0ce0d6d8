#!/bin/bash
# TEST-ONLY entrypoint of the Elasticsearch stand-in (Dockerfile beside it): every environment
# variable named like a setting (lower case, with a dot: discovery.type=single-node) becomes
# -Ename=value, as the official image's entrypoint does; ES_JAVA_OPTS is read by Elasticsearch
# itself. Defaults as the official image: network.host 0.0.0.0 unless set.
set -euo pipefail
if [ "${1:-eswrapper}" != eswrapper ]; then exec "$@"; fi
ES_JAVA_HOME=$(dirname "$(dirname "$(readlink -f "$(command -v java)")")")
export ES_JAVA_HOME
args=()
host_set=
while IFS= read -r -d '' kv; do
  name=${kv%%=*}
  if [[ $name =~ ^[a-z0-9_]+(\.[a-z0-9_]+)+$ ]]; then
    args+=("-E${kv}")
    [ "$name" != network.host ] || host_set=1
  fi
done < <(env -0)
[ -n "$host_set" ] || args+=("-Enetwork.host=0.0.0.0")
exec /usr/share/elasticsearch/bin/elasticsearch "${args[@]}"
