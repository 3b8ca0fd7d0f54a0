#!/usr/bin/env bash
# ui-screenshot.sh [FILE] — render the status page (/ui/) of a small
# in-process 3-node cluster (a few sessions, locks held, shared and queued
# for, an election, a few keys) in headless Chromium and write it as a PNG, by default
# docs/img/status-page.png, the one docs/operations.md shows. Needs chromium on PATH
# (make test-deps installs it, as root with apt-get).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-docs/img/status-page.png}
mkdir -p "$(dirname "$out")"
tmp=$(mktemp --suffix=.png)
trap 'rm -f "$tmp"' EXIT
rm -f "$tmp"
go test ./httpapi/ui -run '^TestStatusPage_Screenshot$' -count=1 -v -args -screenshot="$tmp"
[ -s "$tmp" ] || { echo "ui-screenshot: no screenshot was written (is chromium installed? see the test's skip message above)" >&2; exit 1; }
mv "$tmp" "$out"
echo "wrote $out ($(wc -c <"$out") bytes)"
