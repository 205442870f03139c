#!/usr/bin/env bash
# End-to-end test of the web console (/ui) in a real browser: Debian's
# Chromium driven by Playwright (playwright-core from e2e/ui's lockfile; it
# never downloads a browser of its own). Installs Chromium with apt-get
# when /usr/bin/chromium is missing (CI runs as root on a fresh Debian
# machine), builds the binary, starts two replicating nodes and runs
# e2e/ui/e2e.mjs. UPDATE_SCREENSHOTS=1 writes its screenshots to docs/console/
# (shown in the README) instead of a temporary directory.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== console e2e (Playwright + Debian Chromium)"
if [ ! -x /usr/bin/chromium ]; then
  as_root=()
  if [ "$(id -u)" != 0 ]; then
    if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
      as_root=(sudo -n)
    else
      echo "/usr/bin/chromium is missing; install it with: sudo apt-get install -y chromium" >&2
      exit 1
    fi
  fi
  echo "installing Debian's chromium"
  "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null
  "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >/dev/null
fi
go build -o bin/mnemo ./cmd/mnemo
(cd e2e/ui && npm ci --silent --no-audit --no-fund >/dev/null)
node e2e/ui/e2e.mjs "$PWD/bin/mnemo"
