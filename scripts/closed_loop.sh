#!/usr/bin/env bash
# Closed loop from a fresh clone: sim (external efforts) + dynamics node + tracking controller,
# once per law; prints the RMS tracking error per joint and saves out/closed_loop.png.
#   ./scripts/closed_loop.sh [closed_loop.py args]
#   ./scripts/closed_loop.sh --robot quadruped   # floating-base quadruped + wbc_controller
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$ROOT/scripts/setup_env.sh" || exit 1
exec "$ROOT/.venv/bin/python" "$ROOT/scripts/closed_loop.py" "$@"
