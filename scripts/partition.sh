#!/usr/bin/env bash
# partition.sh — cut or slow links of a cluster.sh cluster through the nodes' fault
# hooks (the nodes run with --unsafe-fault-injection: a build with the
# lockd_unsafe tag, make build-unsafe).
#
#   partition.sh isolate NODE|leader    cut every link of one node
#   partition.sh split n1,n2 n3,n4,n5   cut every link between two groups
#   partition.sh oneway FROM TO         drop FROM's messages to TO only
#   partition.sh delay FROM TO DURATION hold FROM's messages to TO for DURATION
#   partition.sh delay NODE|leader DURATION   hold every message to and from NODE
#   partition.sh show                   print every node's rules
#   partition.sh heal                   remove every rule on every node
#
# RULE=blackhole (accept, never answer) instead of the default drop; delay
# ignores RULE. DURATION is a Go duration from 1ms to 60s, such as 300ms.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
RULE=${RULE:-drop}

rule() { debug "$1" POST /v1/debug/faults "{\"peer\":\"$2\",\"direction\":\"$3\",\"rule\":\"$RULE\"}" >/dev/null; }
delay() { # delay ON PEER DIRECTION DURATION: one rule on ON's side only
  local out
  out=$(debug "$1" POST /v1/debug/faults "{\"peer\":\"$2\",\"direction\":\"$3\",\"rule\":\"delay\",\"delay\":\"$4\"}")
  case "$out" in *'"error"'*) echo "$1: $out" >&2; exit 1 ;; esac
}
all() { for i in $(seq 1 "$(size)"); do echo "n$i"; done; }
cut() { # cut A B: both directions, rules on both sides
  alive "$1" && rule "$1" "$2" both
  alive "$2" && rule "$2" "$1" both
  echo "cut $1 <-> $2"
}

case "${1:-}" in
  isolate)
    id=$(resolve "${2:?usage: partition.sh isolate NODE|leader}")
    for o in $(all); do [ "$o" = "$id" ] || cut "$id" "$o"; done ;;
  split)
    IFS=, read -ra A <<< "${2:?usage: partition.sh split A,B C,D}"
    IFS=, read -ra B <<< "${3:?usage: partition.sh split A,B C,D}"
    for a in "${A[@]}"; do for b in "${B[@]}"; do cut "$(resolve "$a")" "$(resolve "$b")"; done; done ;;
  oneway)
    from=$(resolve "${2:?usage: partition.sh oneway FROM TO}")
    to=$(resolve "${3:?usage: partition.sh oneway FROM TO}")
    rule "$from" "$to" out
    rule "$to" "$from" in
    echo "dropping $from -> $to" ;;
  delay)
    if [ $# -ge 4 ]; then
      from=$(resolve "$2"); to=$(resolve "$3")
      alive "$from" && delay "$from" "$to" out "$4"
      echo "delaying $from -> $to by $4"
    else
      id=$(resolve "${2:?usage: partition.sh delay FROM TO DURATION | delay NODE DURATION}")
      d=${3:?usage: partition.sh delay NODE DURATION}
      for o in $(all); do [ "$o" = "$id" ] || delay "$id" "$o" both "$d"; done
      echo "delaying every message to and from $id by $d"
    fi ;;
  show)
    for o in $(all); do alive "$o" && { printf '%s: ' "$o"; debug "$o" GET /v1/debug/faults; }; done ;;
  heal)
    for o in $(all); do alive "$o" && debug "$o" DELETE /v1/debug/faults >/dev/null; done
    echo "healed" ;;
  *) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
esac
