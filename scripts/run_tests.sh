#!/usr/bin/env bash
# The whole test suite from a fresh clone: ./scripts/run_tests.sh [pytest args]
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$ROOT/scripts/setup_env.sh" || exit 1
cd "$ROOT" || exit 1
echo "[tests] ROS_DOMAIN_ID=$ROS_DOMAIN_ID ROS_AUTOMATIC_DISCOVERY_RANGE=$ROS_AUTOMATIC_DISCOVERY_RANGE"
exec .venv/bin/python -m pytest test -ra "$@"
