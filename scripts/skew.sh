#!/usr/bin/env bash
# skew.sh NODE|leader OFFSET [RATE] — set a node's injectable clock to real
# time + OFFSET (a Go duration: 2s, -500ms) running at RATE (default 1).
# "skew.sh NODE 0s 1" puts it back. A RATE further from 1 than the
# cluster's --max-clock-drift breaks the master lease's assumption: tests only.
# The nodes need --unsafe-fault-injection (a lockd_unsafe build, as
# cluster.sh starts by default).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
[ $# -ge 2 ] || { echo "usage: skew.sh NODE|leader OFFSET [RATE]" >&2; exit 2; }
id=$(resolve "$1")
debug "$id" POST /v1/debug/clock "{\"offset\":\"$2\",\"rate\":${3:-1}}"
