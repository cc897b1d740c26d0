"""Helpers for running rclpy from the pip ``ros-*`` wheels as well as from a ROS install.

The rclpy wheels on PyPI (``ros-rclpy`` & co., with ``ros-wheels-bootstrapper``) ship their
shared libraries in ``site-packages/ros_*.libs`` and expect them on ``LD_LIBRARY_PATH``.
Their bootstrapper module re-executes Python with that variable set *as a side effect of
being imported*.  Nothing here requires the wheels: with a normal ROS installation (sourced
``setup.bash``) every function is a no-op.

* :func:`ros_environment` returns an environment for a child process (node, test, demo).
* :func:`prepare_environment` updates ``os.environ`` of this process (affects libraries that
  rcutils/rmw look up at run time, and children); it never re-executes.
* :func:`reexec_if_needed` re-executes the current command once with the library path set,
  as the bootstrapper does (used by the ``dynamics_node`` entry point only).

This module imports neither rclpy nor the bootstrapper (importing the latter re-executes).
"""
from __future__ import annotations

import glob
import importlib.util
import os
import sys

_GUARD = '_ROS_WHEELS_BOOTSTRAP_COMPLETE'


def wheels_present() -> bool:
    """True when the pip ROS wheels (``ros-wheels-bootstrapper``) are installed."""
    try:
        return importlib.util.find_spec('ros_wheels_bootstrapper') is not None
    except (ImportError, ValueError):
        return False


def ros_library_dirs() -> list[str]:
    """Library directories of the ROS wheels (empty without the wheels).

    Mirrors ``ros_wheels_bootstrapper.get_ros_paths()`` (``sys.prefix/lib`` and
    ``site-packages/ros_*.libs``) without importing that module, in a stable order.
    """
    if not wheels_present():
        return []
    dirs = [os.path.join(sys.prefix, 'lib')]
    site = os.path.join(sys.prefix, 'lib',
                        f'python{sys.version_info.major}.{sys.version_info.minor}',
                        'site-packages')
    dirs += sorted(os.path.realpath(p) for p in glob.glob(os.path.join(site, 'ros_*.libs'))
                   if os.path.isdir(p))
    return dirs


def _merged_ld_path(current: str) -> tuple[str, bool]:
    parts = [p for p in current.split(os.pathsep) if p]
    missing = [d for d in ros_library_dirs() if d not in parts]
    return os.pathsep.join(missing + parts), bool(missing)


def ros_environment(base: dict | None = None, domain_id: int | None = None,
                    localhost_only: bool = False) -> dict:
    """A copy of ``base`` (default ``os.environ``) ready for a child process using rclpy.

    Adds the wheels' library directories to ``LD_LIBRARY_PATH`` (and the bootstrapper guard so
    the child does not re-execute). ``domain_id`` / ``localhost_only`` set ``ROS_DOMAIN_ID`` and
    ``ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST`` when given (tests, demos, benchmarks).
    """
    env = dict(os.environ if base is None else base)
    if wheels_present():
        env['LD_LIBRARY_PATH'], _ = _merged_ld_path(env.get('LD_LIBRARY_PATH', ''))
        env[_GUARD] = '1'
    if domain_id is not None:
        env['ROS_DOMAIN_ID'] = str(int(domain_id))
    if localhost_only:
        env['ROS_AUTOMATIC_DISCOVERY_RANGE'] = 'LOCALHOST'
    return env


def prepare_environment() -> None:
    """Put the wheels' library directories on ``os.environ['LD_LIBRARY_PATH']`` (no re-exec).

    The dynamic loader reads ``LD_LIBRARY_PATH`` only at process start, but rcutils/rmw look
    libraries up through it at run time, and child processes inherit it.
    """
    if wheels_present():
        os.environ['LD_LIBRARY_PATH'], _ = _merged_ld_path(os.environ.get('LD_LIBRARY_PATH', ''))


def start_entry_point() -> None:
    """First thing a node executable does, before importing rclpy and the kernels: a SIGINT
    or SIGTERM that arrives during those imports (Ctrl-C right after ``ros2 launch``) ends the
    process at once with status 0 and no traceback (nothing is open yet; process.run installs
    the real handlers), then :func:`reexec_if_needed`."""
    import signal
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: os._exit(0))
    reexec_if_needed()


def reexec_if_needed() -> None:
    """Re-execute this command once with the wheels' library path set (no-op when not needed).

    Only for process entry points: it replaces the current process.
    """
    if not wheels_present() or os.environ.get(_GUARD):
        return
    new_path, changed = _merged_ld_path(os.environ.get('LD_LIBRARY_PATH', ''))
    if not changed:
        return
    env = dict(os.environ)
    env['LD_LIBRARY_PATH'] = new_path
    env[_GUARD] = '1'
    argv = list(getattr(sys, 'orig_argv', None) or [sys.executable] + sys.argv)
    try:
        sys.stdout.flush()
        sys.stderr.flush()
        os.execve(sys.executable, argv, env)
    except OSError as exc:  # pragma: no cover - keep going with what we have
        sys.stderr.write(f'ros_dynamics: could not re-execute with LD_LIBRARY_PATH set: {exc}\n')
