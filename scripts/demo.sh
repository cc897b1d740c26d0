#!/usr/bin/env bash
# The main job from a fresh clone: simulated arm + dynamics node + contact observer on loopback DDS.
#   ./scripts/demo.sh [--urdf FILE --contact-link LINK] [other scripts/demo.py options]
# The wall time it reports counts from here: set-up (first run: install, build, compile) included.
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export ROS_DYNAMICS_DEMO_T0="${ROS_DYNAMICS_DEMO_T0:-$(date +%s.%N)}"
source "$ROOT/scripts/setup_env.sh" || exit 1
export ROS_DYNAMICS_DEMO_SETUP_END="$(date +%s.%N)"
exec "$ROOT/.venv/bin/python" "$ROOT/scripts/demo.py" "$@"
