#!/usr/bin/env bash
# Install Debian's chromium for the web-inbox browser tests (tests/e2e) when it is missing.
# Idempotent and quiet: does nothing when /usr/bin/chromium already exists. Needs root (CI runs
# as root); Playwright is pointed at this executable and never downloads a browser of its own.
set -euo pipefail

CHROMIUM=/usr/bin/chromium

if [ -x "$CHROMIUM" ]; then
    exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
    echo "ensure-chromium: $CHROMIUM is missing and installing it needs root" >&2
    exit 1
fi

export DEBIAN_FRONTEND=noninteractive DEBCONF_NOWARNINGS=yes
apt-get update -qq >/dev/null
apt-get install -y -qq --no-install-recommends chromium >/dev/null

if [ ! -x "$CHROMIUM" ]; then
    echo "ensure-chromium: apt-get finished but $CHROMIUM is still missing" >&2
    exit 1
fi
