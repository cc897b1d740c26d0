#!/usr/bin/env bash
# Creates .venv (Python 3.11, as the ROS 2 wheels need), installs requirements-dev.txt and this
# package (editable) into it, and builds the interface package ros_dynamics_msgs into it.
# Cached: pip runs again only when requirements-dev.txt or setup.py change, the CMake build only
# when ros_dynamics_msgs/ changes. Called by setup_env.sh (a program of its own, so that its strict
# mode never reaches the shell that sources setup_env.sh).
#   scripts/install_venv.sh          (PYTHON=/path/to/python3.11 to choose the interpreter)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PYTHON="${PYTHON:-$(command -v python3.11 || command -v python3)}"
STAMP=".venv/.installed-$(cat requirements-dev.txt setup.py | sha1sum | cut -c1-12)"
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
fi
# The interface package ros_dynamics_msgs, built with CMake into .venv; afterwards it needs no
# environment beyond what setup_env.sh sets.
scripts/build_interfaces.sh "$ROOT/.venv"
