#!/usr/bin/env bash
# The whole test suite from a fresh clone: ./scripts/run_tests.sh [pytest args]
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$ROOT/scripts/setup_env.sh" || exit 1
cd "$ROOT" || exit 1
# The browser-view test renders in Debian's chromium (installed once, as root, from Debian).
if ! command -v chromium >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "[tests] installing chromium from Debian for the browser-view test (once, about a minute; log: .venv/chromium-install.log)"
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; } \
    > .venv/chromium-install.log 2>&1 \
    || echo "[tests] chromium not installed (see the log): the browser-view test will be skipped"
fi
echo "[tests] ROS_DOMAIN_ID=$ROS_DOMAIN_ID ROS_AUTOMATIC_DISCOVERY_RANGE=$ROS_AUTOMATIC_DISCOVERY_RANGE"
exec .venv/bin/python -m pytest test -ra "$@"
