#!/usr/bin/env bash
# The main job from a fresh clone: simulated arm + dynamics node + contact observer on loopback DDS.
#   ./scripts/demo.sh [demo.py args]
source "$(dirname "${BASH_SOURCE[0]}")/setup_env.sh"
exec .venv/bin/python scripts/demo.py "$@"
