#!/usr/bin/env bash
# The whole test suite from a fresh clone: ./scripts/run_tests.sh [pytest args]
source "$(dirname "${BASH_SOURCE[0]}")/setup_env.sh"
echo "[tests] ROS_DOMAIN_ID=$ROS_DOMAIN_ID ROS_AUTOMATIC_DISCOVERY_RANGE=$ROS_AUTOMATIC_DISCOVERY_RANGE"
exec .venv/bin/python -m pytest test -ra "$@"
