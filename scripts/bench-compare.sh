#!/usr/bin/env bash
# bench-compare.sh [lockd-compare run flags...] — lockd, etcd and ZooKeeper
# side by side (BENCHMARKS.md, "Comparing with etcd and ZooKeeper"), and
# etcd's v3 API as lockd's nodes serve it (the system lockd-etcd) beside
# etcd, through the same clientv3 code (`--benches etcd-api`).
#
# etcd is bin/etcd when it exists (`make bench-compare` builds it from
# bench/etcdserver: etcd 3.7.3, pinned there), else Debian's etcd-server
# (3.4; ETCD_BIN=etcd picks it even when bin/etcd exists). Installs what
# is missing of Debian's etcd-server (only when bin/etcd is not used) and
# ZooKeeper (Debian zookeeperd, 3.8) with apt-get, then, one system at a time,
# starts a 3-member cluster on 127.0.0.1 with its data under .compare/,
# runs the same rows against it (bin/lockd-compare run), times failover
# on it (bin/lockd-compare failover: the leader killed with SIGKILL and
# restarted by `bench-compare.sh restart`, trial after trial), and stops
# it by the PIDs it started; only the cluster being measured runs.
# The flags go to `lockd-compare run`: `--benches kv` (or
# `--benches locks,handoff,keepalive,kv`) adds the kv rows of the
# namespace of keys (put, get, cas, txn at each --workers count, watch
# fan-out at each --fanout count), run against each system in turn.
# lockd's failover trials run after its cluster stopped, on a cluster of
# their own (`lockd-bench failover`'s). Ends with the table and
# bench-out/compare.{json,md}. Every process it starts is stopped when it
# exits, whatever happens.
#
# lockd-etcd (COMPARE_SYSTEMS="etcd lockd-etcd", `--benches etcd-api`, its
# default) is a 3-node lockd cluster started with --etcd-listen, measured
# only through etcd's API on etcd's own client ports (the two never run at
# once), so that the same endpoints and the same code measure both; it has
# no failover trials (lockd's are the lockd system's). With
# COMPARE_PROFILE_DIR=DIR the nodes of etcd and lockd-etcd also serve
# /debug/pprof (etcd --enable-pprof, lockd --pprof) and `lockd-compare run`
# writes a CPU profile of each node during each of their etcd-API rows into
# DIR/etcd and DIR/lockd-etcd: for a run of its own, apart from the run
# whose numbers are quoted, since profiling costs the nodes some CPU.
#
# Ports (all on 127.0.0.1):
#   etcd       client 7511-7513, peer 7521-7523
#   ZooKeeper  client 7531-7533, quorum 7541-7543, election 7551-7553
#   lockd      HTTP 7610, 7620, 7630, peer 7611, 7621, 7631
#   lockd-etcd etcd's API 7511-7513 (etcd's client ports), HTTP and peer
#              as lockd's
#   lockd's failover cluster: ports the harness picks between 10000 and the
#   ephemeral range, on 127.0.0.1 or other loopback addresses (127.x.y.z)
#
# Environment: COMPARE_SYSTEMS (default "etcd zookeeper lockd": which, in
# that order; lockd-etcd too), COMPARE_FAILOVER_TRIALS (5; 0 skips the
# failover trials), COMPARE_DIR (.compare), COMPARE_OUT (bench-out),
# COMPARE_COMMAND (the command recorded in the report), COMPARE_PROFILE_DIR
# (unset: no profiles), ETCD_BIN (bin/etcd if it exists, else etcd),
# LOCKD_BIN, LOCKD_COMPARE_BIN.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${LOCKD_BIN:-bin/lockd}
CMP=${LOCKD_COMPARE_BIN:-bin/lockd-compare}
DIR=${COMPARE_DIR:-.compare}
OUT=${COMPARE_OUT:-bench-out}
SYSTEMS=${COMPARE_SYSTEMS:-etcd zookeeper lockd}
COMMAND=${COMPARE_COMMAND:-scripts/bench-compare.sh $*}
PROFILE_DIR=${COMPARE_PROFILE_DIR:-}
if [ -n "${ETCD_BIN:-}" ]; then ETCD=$ETCD_BIN
elif [ -x bin/etcd ]; then ETCD=bin/etcd
else ETCD=etcd
fi
# One system's run may take this long before it is stopped (the defaults
# take about 2 minutes).
RUN_LIMIT=${COMPARE_RUN_LIMIT:-900}
# Failover trials per system (each kills the leader once); 0 skips them.
FAILOVER_TRIALS=${COMPARE_FAILOVER_TRIALS:-5}

for f in "$BIN" "$CMP"; do
  [ -x "$f" ] || { echo "bench-compare.sh: $f not found; run 'make bench-compare'" >&2; exit 1; }
done

log() { echo "bench-compare: $*" >&2; }

# ---- processes: every one this script starts is listed in $DIR/*.pid ----

# running PID: the process exists and has not exited (an exited child stays
# a zombie until it is reaped).
running() { kill -0 "$1" 2>/dev/null && ! grep -q '^State:[[:space:]]*Z' "/proc/$1/status" 2>/dev/null; }

# ours PID: the process runs with its data under $DIR (so a PID file left
# by an earlier run never stops an unrelated process that reuses the PID).
ours() { tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null | grep -qF "$DIR/"; }

# stop_pids FILE...: SIGTERM each PID, wait up to 15 s for all, SIGKILL the
# rest, reap them (when they are this shell's children) and remove the files.
stop_pids() {
  local f pid pids=()
  for f in "$@"; do
    [ -f "$f" ] || continue
    pid=$(cat "$f")
    if running "$pid" && ours "$pid"; then kill -TERM "$pid" 2>/dev/null || true; pids+=("$pid"); fi
    rm -f "$f"
  done
  for pid in "${pids[@]}"; do
    for _ in $(seq 1 150); do running "$pid" || break; sleep 0.1; done
    if running "$pid"; then log "pid $pid did not stop in 15 s; SIGKILL"; kill -KILL "$pid" 2>/dev/null || true; fi
    wait "$pid" 2>/dev/null || true
  done
}

stop_all() {
  stop_pids "$DIR"/etcd/*.pid "$DIR"/zookeeper/*.pid "$DIR"/lockd-etcd/*.pid
  if [ -d "$DIR/lockd" ]; then
    LOCKD_CLUSTER_DIR=$DIR/lockd LOCKD_PORT_PREFIX=76 scripts/cluster.sh down >/dev/null
  fi
}

# wait_for SECONDS WHAT CMD...: run CMD every 0.2 s until it succeeds.
wait_for() {
  local secs=$1 what=$2
  shift 2
  for _ in $(seq 1 $((secs * 5))); do
    if "$@"; then return 0; fi
    sleep 0.2
  done
  log "$what not ready after ${secs}s"
  return 1
}

# ---- installing the peers ----

install_peers() {
  local pkgs=()
  [[ " $SYSTEMS " == *" etcd "* ]] && [ "$ETCD" = etcd ] && ! command -v etcd >/dev/null && pkgs+=(etcd-server)
  [[ " $SYSTEMS " == *" zookeeper "* ]] && [ ! -f /usr/share/java/zookeeper.jar ] && pkgs+=(zookeeperd)
  [ ${#pkgs[@]} -eq 0 ] && return 0
  [ "$(id -u)" = 0 ] || { log "${pkgs[*]} missing; run as root so that apt-get can install them"; exit 1; }
  log "installing ${pkgs[*]} with apt-get"
  # The packages would start system-wide services listening on every
  # interface; a policy-rc.d that says no keeps them from starting.
  local policy=/usr/sbin/policy-rc.d made=
  if [ ! -e $policy ]; then
    printf '#!/bin/sh\nexit 101\n' >$policy && chmod +x $policy && made=1
  fi
  local rc=0
  { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${pkgs[@]}"; } >"$DIR/apt.log" 2>&1 || rc=$?
  [ -n "$made" ] && rm -f $policy
  if [ $rc != 0 ]; then log "apt-get failed; see $DIR/apt.log"; exit 1; fi
}

# ---- etcd ----

etcd_health() {
  local i
  for i in 1 2 3; do
    curl -sf -m 1 "http://127.0.0.1:751$i/health" | grep -q '"health":"true"' || return 1
  done
}

# start_etcd_member I: starts member eI in the background, on its data if
# it has some (a restart after a kill), at etcd's default timing
# (heartbeat 100 ms, election 1000 ms).
start_etcd_member() {
  local d=$DIR/etcd i=$1 j initial= pprof=()
  mkdir -p "$d"
  [ -n "$PROFILE_DIR" ] && pprof=(--enable-pprof)
  for j in 1 2 3; do initial+="${initial:+,}e$j=http://127.0.0.1:752$j"; done
  # etcd fsyncs its WAL on every commit by default.
  "$ETCD" --name "e$i" --data-dir "$d/e$i" \
    --listen-client-urls "http://127.0.0.1:751$i" --advertise-client-urls "http://127.0.0.1:751$i" \
    --listen-peer-urls "http://127.0.0.1:752$i" --initial-advertise-peer-urls "http://127.0.0.1:752$i" \
    --initial-cluster "$initial" --initial-cluster-token lockd-compare --initial-cluster-state new \
    --logger zap --log-outputs stderr "${pprof[@]}" </dev/null >>"$d/e$i.log" 2>&1 &
  echo $! >"$d/e$i.pid"
  # (The failover trials kill members: no job report from this shell.)
  disown $!
}

start_etcd() {
  local i
  for i in 1 2 3; do start_etcd_member "$i"; done
  wait_for 30 "etcd" etcd_health
}

etcd_version() {
  local v
  v=$("$ETCD" --version 2>/dev/null | sed -n 's/^etcd Version: //p')
  if [ "$ETCD" = bin/etcd ]; then
    echo "$v ($ETCD: go.etcd.io/etcd/server/v3 $(sed -n 's/^require go.etcd.io\/etcd\/server\/v3 //p' bench/etcdserver/go.mod)" \
      "built by make bench-compare from bench/etcdserver, $("$ETCD" --version 2>/dev/null | sed -n 's/^Go Version: //p'), CGO_ENABLED=0)"
  elif [ "$(command -v "$ETCD")" = /usr/bin/etcd ]; then
    echo "$v (Debian etcd-server $(dpkg-query -W -f='${Version}' etcd-server 2>/dev/null))"
  else
    echo "$v ($ETCD)"
  fi
}

# ---- ZooKeeper ----

# srvr PORT: the member's answer to the srvr four-letter word.
srvr() { timeout 2 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$1" && printf srvr >&3 && cat <&3' _ "$1" 2>/dev/null || true; }

zk_ready() {
  local i leaders=0 mode
  for i in 1 2 3; do
    mode=$(srvr "753$i" | sed -n 's/^Mode: //p')
    case $mode in
      leader) leaders=$((leaders + 1)) ;;
      follower) ;;
      *) return 1 ;;
    esac
  done
  [ $leaders = 1 ]
}

# start_zookeeper_member I: starts member I in the background on its
# configuration (written by start_zookeeper) and data.
start_zookeeper_member() {
  local d i=$1 cp=/etc/zookeeper/conf:/usr/share/java/zookeeper.jar
  d=$(cd "$DIR/zookeeper" && pwd)
  # Without an SLF4J binding ZooKeeper logs nothing.
  [ -f /usr/share/java/slf4j-simple.jar ] && cp+=:/usr/share/java/slf4j-simple.jar
  java -cp "$cp" -Xms128m -Xmx512m -Dorg.slf4j.simpleLogger.showDateTime=true \
    org.apache.zookeeper.server.quorum.QuorumPeerMain "$d/zk$i.cfg" </dev/null >>"$d/zk$i.log" 2>&1 &
  echo $! >"$d/zk$i.pid"
  disown $!
}

# start_zookeeper: ZooKeeper's default timing (tickTime 2000, initLimit
# 10, syncLimit 5, as Debian's zoo.cfg has them), without its limit of 60
# connections per client address (maxClientCnxns=0): the load comes from
# one address, as no production client's does, and the kv-watch row's
# 1,000 watchers are 1,000 sessions, each on a connection of its own
# (lockd's nodes run without their per-client limit too). srvr, which tells
# whether a member is ready and which one leads, is the one four-letter
# word allowed: ZooKeeper's default list holds only srvr, and the
# configuration names it explicitly.
start_zookeeper() {
  local d i
  mkdir -p "$DIR/zookeeper"
  d=$(cd "$DIR/zookeeper" && pwd)
  for i in 1 2 3; do
    mkdir -p "$d/zk$i"
    echo "$i" >"$d/zk$i/myid"
    cat >"$d/zk$i.cfg" <<EOF
tickTime=2000
initLimit=10
syncLimit=5
dataDir=$d/zk$i
clientPort=753$i
clientPortAddress=127.0.0.1
forceSync=yes
maxClientCnxns=0
admin.enableServer=false
4lw.commands.whitelist=srvr
server.1=127.0.0.1:7541:7551
server.2=127.0.0.1:7542:7552
server.3=127.0.0.1:7543:7553
EOF
  done
  for i in 1 2 3; do start_zookeeper_member "$i"; done
  wait_for 60 "ZooKeeper" zk_ready
}

# (Debian's build reports itself as "3.8.0-${mvngit.commit.id}": name the
# package's version too.)
zookeeper_version() {
  echo "$(srvr 7531 | sed -n 's/^Zookeeper version: \([^-,]*\).*/\1/p') (Debian zookeeper $(dpkg-query -W -f='${Version}' zookeeper 2>/dev/null))"
}

# ---- lockd ----

start_lockd() {
  # Every node fsyncs its Raft log on every append (its default log
  # store). The nodes run without fault injection, as a production node
  # would, and without connection limits: the load comes from one
  # address, as no production client does.
  LOCKD_CLUSTER_DIR=$DIR/lockd LOCKD_PORT_PREFIX=76 LOCKD_FAULT_INJECTION=0 LOCKD_BIN=$BIN \
    LOCKD_SERVE_ARGS="${LOCKD_SERVE_ARGS:---http-max-conns-per-client 0 --http-max-conns 0}" \
    scripts/cluster.sh up 3 >/dev/null
}

# (`lockd version` prints three lines: the report wants one.)
lockd_version() { "$BIN" version | sed 's/^lockd //' | paste -sd ',' - | sed 's/,/, /g'; }

# ---- lockd-etcd: lockd's nodes measured through etcd's API ----

# lockd_etcd_ready: every node's HTTP port answers /readyz (it can serve a
# default read: a leader holds its master lease) and its etcd port accepts.
lockd_etcd_ready() {
  local i
  for i in 1 2 3; do
    curl -sf -m 1 "http://127.0.0.1:76${i}0/readyz" >/dev/null || return 1
    timeout 1 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$1"' _ "751$i" 2>/dev/null || return 1
  done
}

# start_lockd_etcd: three nodes, as start_lockd's (bin/lockd, fsync on
# every append, no fault injection, no connection limits) plus
# --etcd-listen on etcd's client ports; --pprof with COMPARE_PROFILE_DIR.
# (scripts/cluster.sh gives every node the same flags, and each needs a
# port of its own, so this starts them itself.)
start_lockd_etcd() {
  local d=$DIR/lockd-etcd i initial= pprof=()
  mkdir -p "$d"
  [ -n "$PROFILE_DIR" ] && pprof=(--pprof)
  for i in 1 2 3; do initial+="${initial:+,}n$i=127.0.0.1:76${i}1"; done
  for i in 1 2 3; do
    "$BIN" serve --id "n$i" --http "127.0.0.1:76${i}0" --peer "127.0.0.1:76${i}1" --data "$d/n$i" \
      --initial-cluster "$initial" --etcd-listen "127.0.0.1:751$i" \
      --http-max-conns-per-client 0 --http-max-conns 0 --rate-limit 0 "${pprof[@]}" </dev/null >>"$d/n$i.log" 2>&1 &
    echo $! >"$d/n$i.pid"
    disown $!
  done
  wait_for 30 "lockd-etcd" lockd_etcd_ready
}

stop_lockd_etcd() { stop_pids "$DIR"/lockd-etcd/*.pid; }

lockd_etcd_version() { echo "lockd $(lockd_version), its etcd v3 API (--etcd-listen)"; }

stop_etcd() { stop_pids "$DIR"/etcd/*.pid; }
stop_zookeeper() { stop_pids "$DIR"/zookeeper/*.pid; }
stop_lockd() { LOCKD_CLUSTER_DIR=$DIR/lockd LOCKD_PORT_PREFIX=76 scripts/cluster.sh down >/dev/null; }

endpoints() {
  case $1 in
    etcd) echo 127.0.0.1:7511,127.0.0.1:7512,127.0.0.1:7513 ;;
    zookeeper) echo 127.0.0.1:7531,127.0.0.1:7532,127.0.0.1:7533 ;;
    lockd) echo http://127.0.0.1:7610,http://127.0.0.1:7620,http://127.0.0.1:7630 ;;
    lockd-etcd) echo 127.0.0.1:7511,127.0.0.1:7512,127.0.0.1:7513 ;;
  esac
}

client_version() {
  case $1 in
    etcd | lockd-etcd) echo "client go.etcd.io/etcd/client/v3 $(sed -n 's/^\tgo.etcd.io\/etcd\/client\/v3 //p' bench/compare/go.mod)" ;;
    zookeeper) echo "client github.com/go-zookeeper/zk $(sed -n 's/^\tgithub.com\/go-zookeeper\/zk //p' bench/compare/go.mod)" ;;
    lockd) echo "its HTTP API, no client library" ;;
  esac
}

pid_files() {
  case $1 in
    etcd) echo "$DIR/etcd/e1.pid,$DIR/etcd/e2.pid,$DIR/etcd/e3.pid" ;;
    zookeeper) echo "$DIR/zookeeper/zk1.pid,$DIR/zookeeper/zk2.pid,$DIR/zookeeper/zk3.pid" ;;
  esac
}

# ---- restart: how the failover trials start a killed member again ----

# bench-compare.sh restart etcd|zookeeper I: starts member I again on its
# data, in the background, and returns; the run that called it stops it
# with the rest of its cluster.
if [ "${1:-}" = restart ]; then
  case "${2:-} ${3:-}" in
    "etcd "[123] | "zookeeper "[123]) ;;
    *) log "usage: bench-compare.sh restart etcd|zookeeper 1|2|3"; exit 2 ;;
  esac
  "start_${2}_member" "$3"
  exit 0
fi

# ---- the run ----

# A signal stops the run in progress (which then ends its rows and writes
# what it has), then everything else.
RUNNER=
on_signal() {
  if [ -n "$RUNNER" ] && running "$RUNNER"; then kill -INT "$RUNNER" 2>/dev/null || true; wait "$RUNNER" 2>/dev/null || true; fi
  exit 130
}
trap 'stop_all' EXIT
trap 'on_signal' INT TERM

# measure LIMIT CMD...: runs CMD in the background under a time limit (so
# that a signal to this script is handled at once) and waits for it.
measure() {
  local limit=$1
  shift
  timeout -k 10 "$limit" "$@" &
  RUNNER=$!
  local rc=0
  wait "$RUNNER" || rc=$?
  RUNNER=
  return $rc
}

# failover SYSTEM VERSION: the failover trials: etcd's and ZooKeeper's on
# their running cluster (killing and restarting members), lockd's on a
# cluster of its own (`lockd-bench failover`'s, bench/failover).
failover() {
  local s=$1 version=$2 args
  if [ "$s" = lockd ]; then
    rm -rf "$DIR/lockd-failover"
    args=(--lockd-bin "$BIN" --dir "$DIR/lockd-failover")
  else
    args=(--endpoints "$(endpoints "$s")" --pid-files "$(pid_files "$s")" --restart "scripts/bench-compare.sh restart $s {i}")
  fi
  log "$s: failover, $FAILOVER_TRIALS trials"
  # A trial takes about 10 s; one that goes wrong gives up within 90 s.
  measure $((120 + 90 * FAILOVER_TRIALS)) "$CMP" failover --system "$s" --trials "$FAILOVER_TRIALS" --version "$version" \
    --out "$DIR/$s-failover.json" "${args[@]}"
}

for s in $SYSTEMS; do
  case $s in etcd | zookeeper | lockd | lockd-etcd) ;; *) log "unknown system $s in COMPARE_SYSTEMS"; exit 2 ;; esac
done
if [[ " $SYSTEMS " == *" etcd "* ]] && [ "$ETCD" != etcd ] && [ ! -x "$ETCD" ]; then
  log "$ETCD not found; run 'make bench-compare' (or ETCD_BIN=etcd for Debian's etcd-server)"
  exit 1
fi
case $FAILOVER_TRIALS in
  '' | *[!0-9]* | ???*) log "COMPARE_FAILOVER_TRIALS must be a number, 0 (no failover trials) to 99"; exit 2 ;;
esac
FAILOVER_TRIALS=$((10#$FAILOVER_TRIALS))
stop_all
rm -rf "$DIR"
mkdir -p "$DIR" "$OUT"
[ -n "$PROFILE_DIR" ] && mkdir -p "$PROFILE_DIR"
install_peers

start=$(date +%s)
results=()
failed=
for s in $SYSTEMS; do
  fn=${s//-/_}
  log "$s: starting a 3-member cluster"
  if ! "start_$fn"; then
    log "$s: did not start; its logs are in $DIR/$s"
    failed+=" $s"
    "stop_$fn"
    continue
  fi
  version="$("${fn}_version"); $(client_version "$s"); 3 members, fsync on every commit"
  log "$s: running the rows"
  profile=()
  if [ -n "$PROFILE_DIR" ]; then
    case $s in
      etcd) profile=(--profile-dir "$PROFILE_DIR/etcd" --profile-endpoints http://127.0.0.1:7511,http://127.0.0.1:7512,http://127.0.0.1:7513) ;;
      lockd-etcd) profile=(--profile-dir "$PROFILE_DIR/lockd-etcd" --profile-endpoints http://127.0.0.1:7610,http://127.0.0.1:7620,http://127.0.0.1:7630) ;;
    esac
  fi
  if ! measure "$RUN_LIMIT" "$CMP" run --system "$s" --endpoints "$(endpoints "$s")" \
    --version "$version" --out "$DIR/$s.json" "${profile[@]}" "$@"; then
    log "$s: the run failed"
    failed+=" $s"
  fi
  [ -f "$DIR/$s.json" ] && results+=("$DIR/$s.json")
  # lockd's failover trials run on a cluster of their own, after this one
  # has stopped.
  if [ "$FAILOVER_TRIALS" -gt 0 ] && [ "$s" = lockd-etcd ]; then
    log "$s: no failover trials of its own (lockd's are the lockd system's)"
  elif [ "$FAILOVER_TRIALS" -gt 0 ] && [ "$s" != lockd ] && ! failover "$s" "$version"; then
    log "$s: the failover trials failed"
    failed+=" $s-failover"
  fi
  log "$s: stopping"
  "stop_$fn"
  if [ "$FAILOVER_TRIALS" -gt 0 ] && [ "$s" = lockd ] && ! failover "$s" "$version"; then
    log "$s: the failover trials failed"
    failed+=" $s-failover"
  fi
  [ -f "$DIR/$s-failover.json" ] && results+=("$DIR/$s-failover.json")
done

if [ ${#results[@]} -gt 0 ]; then
  "$CMP" report --json "$OUT/compare.json" --markdown "$OUT/compare.md" \
    --commit "$(git describe --always --dirty 2>/dev/null || echo unknown)" --command "$COMMAND" "${results[@]}"
  log "wrote $OUT/compare.json and $OUT/compare.md in $(($(date +%s) - start)) s"
fi
if [ -n "$failed" ]; then
  log "failed:$failed"
  exit 1
fi
