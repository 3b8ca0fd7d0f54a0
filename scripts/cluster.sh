#!/usr/bin/env bash
# cluster.sh up [N] | down | status — a local lockd cluster on 127.0.0.1.
#
# Node i (1-based) serves HTTP on 127.0.0.1:74i0 and peers on 127.0.0.1:74i1,
# keeps its data in .cluster/ni and logs to .cluster/ni.log; PIDs are in
# .cluster/ni.pid. "down" stops only the processes it started, by PID.
# LOCKD_SERVE_ARGS adds flags to every node (e.g. "--pprof").
# LOCKD_PORT_PREFIX moves the ports: node i serves on PREFIXi0 and PREFIXi1
# (default 74). The nodes run with --unsafe-fault-injection (which the
# partition and clock scripts need), a flag only a build with the
# lockd_unsafe tag has: LOCKD_BIN defaults to bin/lockd-unsafe (make
# build-unsafe). LOCKD_FAULT_INJECTION=0 starts them without it, from
# bin/lockd (make build) by default.
set -euo pipefail
BASE=${LOCKD_CLUSTER_DIR:-.cluster}
PREFIX=${LOCKD_PORT_PREFIX:-74}
case "$PREFIX" in
  [1-9][0-9]) ;;
  *) echo "cluster.sh: LOCKD_PORT_PREFIX must be two digits, 10..99" >&2; exit 2 ;;
esac
FAULTS=--unsafe-fault-injection BUILD=build-unsafe
[ "${LOCKD_FAULT_INJECTION:-1}" = 0 ] && FAULTS= BUILD=build
if [ -n "$FAULTS" ]; then BIN=${LOCKD_BIN:-bin/lockd-unsafe}; else BIN=${LOCKD_BIN:-bin/lockd}; fi

http_addr() { echo "127.0.0.1:${PREFIX}${1}0"; }
peer_addr() { echo "127.0.0.1:${PREFIX}${1}1"; }

# running PID: the process exists and is not a zombie (an exited node whose
# parent, this script's earlier run, is gone stays a zombie until init
# reaps it).
running() { kill -0 "$1" 2>/dev/null && ! grep -q '^State:[[:space:]]*Z' "/proc/$1/status" 2>/dev/null; }
alive() { [ -f "$BASE/n$1.pid" ] && running "$(cat "$BASE/n$1.pid")"; }

up() {
  local n=${1:-3}
  if [ "$n" -lt 1 ] || [ "$n" -gt 9 ]; then echo "cluster.sh: N must be 1..9" >&2; exit 2; fi
  [ -x "$BIN" ] || { echo "cluster.sh: $BIN not found; run 'make $BUILD' first" >&2; exit 1; }
  mkdir -p "$BASE"
  local initial=""
  for i in $(seq 1 "$n"); do initial+="${initial:+,}n$i=$(peer_addr "$i")"; done
  echo "$n" > "$BASE/size"
  for i in $(seq 1 "$n"); do
    if alive "$i"; then echo "n$i already running (pid $(cat "$BASE/n$i.pid"))"; continue; fi
    "$BIN" serve --id "n$i" --http "$(http_addr "$i")" --peer "$(peer_addr "$i")" \
      --data "$BASE/n$i" --initial-cluster "$initial" $FAULTS ${LOCKD_SERVE_ARGS:-} \
      >>"$BASE/n$i.log" 2>&1 &
    echo $! > "$BASE/n$i.pid"
    echo "n$i: http://$(http_addr "$i") (pid $!)"
  done
  for _ in $(seq 1 100); do
    if curl -sf "http://$(http_addr 1)/readyz" >/dev/null 2>&1; then status; return; fi
    sleep 0.1
  done
  echo "cluster.sh: no leader after 10s; see $BASE/n*.log" >&2
  exit 1
}

down() {
  for f in "$BASE"/n*.pid; do
    [ -f "$f" ] || continue
    local pid; pid=$(cat "$f")
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 100); do running "$pid" || break; sleep 0.1; done
    if running "$pid"; then kill -KILL "$pid" 2>/dev/null || true; fi
    rm -f "$f"
  done
  echo "stopped"
}

status() {
  local n; n=$(cat "$BASE/size" 2>/dev/null || echo 3)
  for i in $(seq 1 "$n"); do
    if alive "$i"; then
      printf 'n%s pid %-7s %s\n' "$i" "$(cat "$BASE/n$i.pid")" \
        "$(curl -s "http://$(http_addr "$i")/v1/cluster" | head -c 300)"
    else
      printf 'n%s down\n' "$i"
    fi
  done
}

case "${1:-}" in
  up) up "${2:-3}" ;;
  down) down ;;
  status) status ;;
  *) echo "usage: cluster.sh up [N] | down | status" >&2; exit 2 ;;
esac
