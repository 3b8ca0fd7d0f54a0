#!/usr/bin/env bash
# Installs what the fault harness's iptables partitions need, when it can:
# as root with apt-get and no iptables yet. Without iptables the harness
# refuses to run the iptables-* faults (--faults all includes them): the
# run fails with a message instead of passing without them. The harness
# runs this script itself when a requested fault needs iptables.
set -euo pipefail
if command -v iptables >/dev/null 2>&1; then
	exit 0
fi
if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
	echo "jepsen-deps: iptables is missing and cannot be installed here (needs root and apt-get); runs with the iptables-* faults (--faults all includes them) will fail" >&2
	exit 0
fi
echo "jepsen-deps: installing iptables (apt-get) for the iptables-* faults" >&2
apt-get update -qq && apt-get install -y -qq iptables >/dev/null || \
	echo "jepsen-deps: could not install iptables; runs with the iptables-* faults (--faults all includes them) will fail" >&2
