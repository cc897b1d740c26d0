#!/usr/bin/env bash
# Sourced by run_tests.sh and demo.sh: creates .venv (Python 3.11, as the ROS 2 wheels need),
# installs requirements-dev.txt and this package (editable), and sets the environment every
# DDS-starting process here must have: loopback-only discovery and an explicit domain id.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PYTHON="${PYTHON:-$(command -v python3.11 || command -v python3)}"
STAMP=.venv/.installed-$(cat requirements-dev.txt setup.py | sha1sum | cut -c1-12)
if [ ! -f "$STAMP" ]; then
  echo "[setup] creating .venv and installing dependencies (first run takes a few minutes; log: .venv/install.log)"
  [ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
  {
    .venv/bin/python -m pip install --upgrade pip
    .venv/bin/python -m pip install -r requirements-dev.txt
    .venv/bin/python -m pip install -e .
  } > .venv/install.log 2>&1 || { tail -n 40 .venv/install.log; echo "[setup] install failed"; exit 1; }
  rm -f .venv/.installed-*
  touch "$STAMP"
  echo "[setup] done"
  .venv/bin/python -m ros_dynamics.warmup    # compile the numba kernels into the cache now
fi
# The interface package ros_dynamics_msgs, built with CMake into .venv (cached: rebuilt only when
# ros_dynamics_msgs/ changes); afterwards it needs no environment beyond what is set below.
scripts/build_interfaces.sh "$ROOT/.venv"
export PATH="$ROOT/.venv/bin:$PATH"
# The rclpy wheels ship their shared libraries in site-packages (what ros_wheels_bootstrapper does).
ROS_LIBS=$(.venv/bin/python - <<'PY'
import glob, os, sys
site = os.path.join(sys.prefix, 'lib', f'python{sys.version_info.major}.{sys.version_info.minor}', 'site-packages')
print(os.pathsep.join([os.path.join(sys.prefix, 'lib')] + sorted(glob.glob(os.path.join(site, 'ros_*.libs')))))
PY
)
export LD_LIBRARY_PATH="$ROS_LIBS${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export _ROS_WHEELS_BOOTSTRAP_COMPLETE=1
# Network rule: DDS stays on this machine, in a random domain unless one is given.
export ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST
export ROS_DOMAIN_ID="${ROS_DOMAIN_ID:-$(( (RANDOM % 100) + 1 ))}"
export MPLBACKEND=Agg
