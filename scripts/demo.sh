#!/usr/bin/env bash
# The main job from a fresh clone: simulated arm + dynamics node + contact observer on loopback DDS.
#   ./scripts/demo.sh [demo.py args]
source "$(dirname "${BASH_SOURCE[0]}")/setup_env.sh"
echo "[demo] ROS_DOMAIN_ID=$ROS_DOMAIN_ID ROS_AUTOMATIC_DISCOVERY_RANGE=$ROS_AUTOMATIC_DISCOVERY_RANGE"
exec .venv/bin/python scripts/demo.py "$@"
