#!/usr/bin/env bash
# bench-serving.sh [lockd-bench flags...] — start a 3-node cluster of its
# own (scripts/cluster.sh, data in .bench-cluster/), run "lockd-bench
# serving" against all three nodes, write bench-out/serving.json, and stop
# the cluster it started, whatever happens.
set -euo pipefail
BIN=${LOCKD_BIN:-bin/lockd}
export LOCKD_CLUSTER_DIR=${LOCKD_CLUSTER_DIR:-.bench-cluster}
# The load comes from one address and holds a connection per blocking
# query (the watchers row: 10,000), past a node's default connection
# limits; a benchmark measures the serving path, not those limits.
export LOCKD_SERVE_ARGS=${LOCKD_SERVE_ARGS:---http-max-conns-per-client 0 --http-max-conns 0}
export LOCKD_BIN=$BIN
# The production build, as an operator runs it: no fault injection.
export LOCKD_FAULT_INJECTION=0
BENCH=${LOCKD_BENCH_BIN:-$(dirname "$BIN")/lockd-bench}
rm -rf "$LOCKD_CLUSTER_DIR"
trap 'scripts/cluster.sh down >/dev/null' EXIT
scripts/cluster.sh up 3 >/dev/null
mkdir -p bench-out
"$BENCH" serving --addr http://127.0.0.1:7410,http://127.0.0.1:7420,http://127.0.0.1:7430 \
  --json bench-out/serving.json "$@"
