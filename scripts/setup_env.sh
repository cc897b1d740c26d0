#!/usr/bin/env bash
# The environment for everything in this repository, in your shell (bash):
#
#   source scripts/setup_env.sh      # then `python ...` runs .venv's Python with ROS 2 ready
#
# It first runs scripts/install_venv.sh (creates .venv, installs the dependencies, builds
# ros_dynamics_msgs; cached), then exports PATH, LD_LIBRARY_PATH, ROS_AUTOMATIC_DISCOVERY_RANGE
# (LOCALHOST: DDS stays on this machine), ROS_DOMAIN_ID (random unless set) and MPLBACKEND.
# Safe to source in an interactive shell: it leaves the shell options (set -e, -u, -o pipefail)
# and the working directory as they were, and a failure returns a non-zero status with a
# message instead of closing the terminal. run_tests.sh, demo.sh and closed_loop.sh source it.

_ros_dynamics_setup() {
  local root ros_libs
  root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)" || return 1

  # 1. .venv and ros_dynamics_msgs (a separate program: its strict mode stays there).
  "$root/scripts/install_venv.sh" || { echo "[setup] failed (see the messages above)" >&2; return 1; }
  # The numba kernels into the disk cache (progress per kernel; one line when all are cached).
  if [ -f "$root/ros_dynamics/warmup.py" ]; then
    PYTHONPATH="$root${PYTHONPATH:+:$PYTHONPATH}" "$root/.venv/bin/python" -m ros_dynamics.warmup \
      || { echo "[setup] compiling the kernels failed" >&2; return 1; }
  fi

  # 2. The environment, in the caller's shell (nothing is added twice when sourced again).
  case ":$PATH:" in
    *":$root/.venv/bin:"*) ;;
    *) export PATH="$root/.venv/bin:$PATH" ;;
  esac
  # The rclpy wheels ship their shared libraries in site-packages (what ros_wheels_bootstrapper does).
  ros_libs=$("$root/.venv/bin/python" - <<'PY'
import glob, os, sys
site = os.path.join(sys.prefix, 'lib', f'python{sys.version_info.major}.{sys.version_info.minor}', 'site-packages')
print(os.pathsep.join([os.path.join(sys.prefix, 'lib')] + sorted(glob.glob(os.path.join(site, 'ros_*.libs')))))
PY
  ) || { echo "[setup] $root/.venv/bin/python does not run" >&2; return 1; }
  case ":${LD_LIBRARY_PATH:-}:" in
    *":$ros_libs:"*) ;;
    *) export LD_LIBRARY_PATH="$ros_libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" ;;
  esac
  export _ROS_WHEELS_BOOTSTRAP_COMPLETE=1
  export ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST
  export ROS_DOMAIN_ID="${ROS_DOMAIN_ID:-$(( (RANDOM % 100) + 1 ))}"
  export MPLBACKEND="${MPLBACKEND:-Agg}"
  return 0
}

_ros_dynamics_setup_status=0
_ros_dynamics_setup || _ros_dynamics_setup_status=$?
unset -f _ros_dynamics_setup
# `return` when sourced (the caller's shell stays open), `exit` when run as a program.
if [ "${BASH_SOURCE[0]}" != "$0" ]; then
  eval "unset _ros_dynamics_setup_status; return $_ros_dynamics_setup_status"
fi
exit "$_ros_dynamics_setup_status"
