#!/usr/bin/env bash
# kill.sh NODE|leader — kill -9 one node of a cluster.sh cluster.
# Restart it with "scripts/cluster.sh up N" (it starts only the dead nodes).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
[ $# -eq 1 ] || { echo "usage: kill.sh NODE|leader" >&2; exit 2; }
id=$(resolve "$1")
alive "$id" || { echo "$id is not running" >&2; exit 1; }
kill -KILL "$(pid_of "$id")"
echo "killed $id (pid $(pid_of "$id"))"
