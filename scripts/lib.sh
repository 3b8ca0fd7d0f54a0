# lib.sh — shared by the scripts that act on a cluster.sh cluster. Source it.
# Node i serves HTTP on 127.0.0.1:74i0 (LOCKD_PORT_PREFIX moves it, as in
# cluster.sh); its PID is in $BASE/ni.pid.
BASE=${LOCKD_CLUSTER_DIR:-.cluster}

http_addr() { echo "127.0.0.1:${LOCKD_PORT_PREFIX:-74}${1#n}0"; }
size() { cat "$BASE/size" 2>/dev/null || echo 3; }
pid_of() { cat "$BASE/$1.pid" 2>/dev/null; }
alive() { local p; p=$(pid_of "$1") && kill -0 "$p" 2>/dev/null; }

# leader prints the id of the node the running nodes name as leader.
leader() {
  local i id
  for i in $(seq 1 "$(size)"); do
    alive "n$i" || continue
    id=$(curl -s -m 2 "http://$(http_addr "$i")/v1/cluster" | sed -n 's/.*"leader":{"id":"\([^"]*\)".*/\1/p')
    if [ -n "$id" ]; then echo "$id"; return 0; fi
  done
  echo "no leader found" >&2
  return 1
}

# resolve turns NODE (n2, 2) or "leader" into a node id.
resolve() {
  case "$1" in
    leader) leader ;;
    n[0-9]) echo "$1" ;;
    [0-9]) echo "n$1" ;;
    *) echo "bad node '$1': use n1..n9 or leader" >&2; return 2 ;;
  esac
}

# debug sends METHOD PATH [BODY] to node ID's debug API.
debug() {
  local id=$1 method=$2 path=$3 body=${4:-}
  curl -s -m 3 -X "$method" "http://$(http_addr "$id")$path" ${body:+-d "$body"}
  echo
}
