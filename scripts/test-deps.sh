#!/usr/bin/env bash
# Installs what the optional parts of `make test` use and this machine
# lacks, saying what and why before it does anything: Chromium, for the
# status page's headless browser test (httpapi/ui). Only `make test-deps`
# and .ci/run call it; `make test` itself never changes the machine, and
# skips the browser test with a one-line reason when Chromium is missing.
set -euo pipefail
for name in chromium chromium-browser google-chrome google-chrome-stable; do
	if command -v "$name" >/dev/null 2>&1; then
		echo "test-deps: $name is installed; nothing to do"
		exit 0
	fi
done
if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
	echo "test-deps: Chromium is missing and cannot be installed here (needs root and apt-get); the status page's browser test will be skipped" >&2
	exit 0
fi
echo "test-deps: installing chromium with apt-get, for the status page's browser test (httpapi/ui); apt-get may install or upgrade the packages it depends on (about 120 on a minimal Debian)" >&2
if ! { apt-get -o DPkg::Lock::Timeout=120 update -qq &&
	DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=120 install -y -qq chromium; }; then
	echo "test-deps: apt-get could not install chromium; the status page's browser test will be skipped" >&2
fi
