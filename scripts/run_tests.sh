#!/usr/bin/env bash
# The whole test suite from a fresh clone: ./scripts/run_tests.sh [pytest args]
# Ends with the number of skipped tests (only launch/launch_ros, which have no PyPI wheels, may
# skip; any other skip fails the run) and exits with pytest's status.
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$ROOT/scripts/setup_env.sh" || exit 1
cd "$ROOT" || exit 1

# The browser-view test (test/test_viewer.py) renders in chromium, a system prerequisite
# (README). As root on a Debian/Ubuntu system it is installed here with apt-get; otherwise a
# missing chromium stops the run with what to install.
if ! command -v chromium >/dev/null 2>&1 && ! command -v chromium-browser >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    mkdir -p out
    log="$ROOT/out/chromium-install.log"
    echo "[tests] chromium (for the browser-view test) is missing: installing it with apt-get (about a minute; log: $log)"
    echo "[tests]   apt-get update ..."
    apt-get update > "$log" 2>&1 \
      && echo "[tests]   apt-get install chromium ..." \
      && DEBIAN_FRONTEND=noninteractive apt-get install -y chromium >> "$log" 2>&1 \
      || { tail -n 20 "$log"; echo "[tests] installing chromium failed (log: $log); install it and run again" >&2; exit 1; }
    echo "[tests]   $(chromium --version 2>/dev/null || echo 'chromium installed')"
  else
    echo "[tests] chromium is not installed; the browser-view test needs it." >&2
    echo "[tests] Install it (Debian/Ubuntu: sudo apt-get install chromium), or run this script as root on Debian/Ubuntu to install it." >&2
    exit 1
  fi
fi

echo "[tests] ROS_DOMAIN_ID=$ROS_DOMAIN_ID ROS_AUTOMATIC_DISCOVERY_RANGE=$ROS_AUTOMATIC_DISCOVERY_RANGE"
mkdir -p out
export ROS_DYNAMICS_SKIP_REPORT="$ROOT/out/test_skips.txt"    # written by test/conftest.py
rm -f "$ROS_DYNAMICS_SKIP_REPORT"
.venv/bin/python -m pytest test -ra "$@"
status=$?
if [ -f "$ROS_DYNAMICS_SKIP_REPORT" ]; then
  echo "[tests] $(head -n 1 "$ROS_DYNAMICS_SKIP_REPORT")"
  tail -n +2 "$ROS_DYNAMICS_SKIP_REPORT" | sed 's/^/[tests]   /'
else
  echo "[tests] no skip count (pytest stopped before it finished)"
fi
exit "$status"
