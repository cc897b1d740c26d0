#!/usr/bin/env bash
# Closed loop from a fresh clone: sim (external efforts) + dynamics node + tracking controller,
# once per law; prints the RMS tracking error per joint and saves out/closed_loop.png.
#   ./scripts/closed_loop.sh [closed_loop.py args]
source "$(dirname "${BASH_SOURCE[0]}")/setup_env.sh"
exec .venv/bin/python scripts/closed_loop.py "$@"
