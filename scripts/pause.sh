#!/usr/bin/env bash
# pause.sh NODE|leader SECONDS — SIGSTOP one node, wait, SIGCONT it.
# The node is continued even if this script is interrupted.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
[ $# -eq 2 ] || { echo "usage: pause.sh NODE|leader SECONDS" >&2; exit 2; }
id=$(resolve "$1")
alive "$id" || { echo "$id is not running" >&2; exit 1; }
pid=$(pid_of "$id")
trap 'kill -CONT "$pid" 2>/dev/null || true' EXIT
kill -STOP "$pid"
echo "paused $id (pid $pid) for $2 s"
sleep "$2"
kill -CONT "$pid"
echo "continued $id"
