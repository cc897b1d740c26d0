"""Shared pytest setup for ros_dynamics.

ROS isolation (applies to the whole session, before any test module imports rclpy):

* ``ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST`` and a random ``ROS_DOMAIN_ID`` (1..100; override
  with ``ROS_DYNAMICS_TEST_DOMAIN_ID``) are put in ``os.environ``, so every DDS participant of
  the tests (this process and the node processes it starts) stays on loopback and in its own
  domain. A ``ROS_DOMAIN_ID`` already in the environment is deliberately *not* reused.
* With the pip ROS wheels, their library directories are added to ``LD_LIBRARY_PATH`` (for the
  child processes and for the libraries that rcutils/rmw look up at run time; the wheels'
  extension modules find their own libraries through their RPATH, so the pytest process itself
  needs no re-exec).

Skips: a dependency the set-up installs (requirements-dev.txt) is imported and fails when
missing. Only launch/launch_ros (no PyPI wheels) may skip; a skip for any other reason fails the
session. The end of the run says how many tests were skipped and why (and, with
``ROS_DYNAMICS_SKIP_REPORT=path``, writes that to the file; scripts/run_tests.sh prints it).

Fixtures: ``ros_env`` (environment for child processes that use ROS), ``rclpy_context`` (a
session-wide initialized rclpy context; rclpy is installed by the set-up, so a missing rclpy
fails the tests that use it). This file itself imports nothing of ROS.
"""
import os
import random
import sys

import pytest

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO_ROOT not in sys.path:
    sys.path.insert(0, REPO_ROOT)

from ros_dynamics.ros import compat as ros_compat  # noqa: E402

TEST_DOMAIN_ID = int(os.environ.get('ROS_DYNAMICS_TEST_DOMAIN_ID')
                     or random.SystemRandom().randint(1, 100))
os.environ.update(ros_compat.ros_environment(domain_id=TEST_DOMAIN_ID, localhost_only=True))


def pytest_configure(config):
    for marker, meaning in (('core', 'fast, pure Python (no ROS)'),
                            ('ros', 'real rclpy processes over loopback DDS'),
                            ('system', 'colcon build, end-to-end')):
        config.addinivalue_line('markers', f'{marker}: {meaning}')


@pytest.fixture(scope='session')
def ros_env():
    """Environment for a child process that uses ROS (isolated domain, loopback, libraries)."""
    env = ros_compat.ros_environment(domain_id=TEST_DOMAIN_ID, localhost_only=True)
    env['PYTHONPATH'] = os.pathsep.join(
        [REPO_ROOT] + [p for p in env.get('PYTHONPATH', '').split(os.pathsep) if p])
    env['PYTHONUNBUFFERED'] = '1'
    return env


@pytest.fixture(scope='session')
def rclpy_context():
    """An initialized rclpy context for the whole session (a missing rclpy fails here)."""
    import rclpy
    context = rclpy.Context()
    rclpy.init(context=context)
    yield context
    context.try_shutdown()


#: The only permitted skip reason: launch and launch_ros have no PyPI wheels.
SKIP_ALLOWED = 'launch / launch_ros not installed'
_skips = []      # (node id, reason)


def _skip_reason(report):
    longrepr = report.longrepr
    reason = str(longrepr[2] if isinstance(longrepr, tuple) else longrepr)
    return reason.removeprefix('Skipped: ')


def pytest_collectreport(report):
    if report.skipped:
        _skips.append((report.nodeid, _skip_reason(report)))


def pytest_runtest_logreport(report):
    if report.skipped and not hasattr(report, 'wasxfail'):
        _skips.append((report.nodeid, _skip_reason(report)))


def _forbidden():
    return [(n, r) for n, r in _skips if SKIP_ALLOWED not in r]


def pytest_sessionfinish(session, exitstatus):
    if _forbidden() and session.exitstatus == 0:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
    path = os.environ.get('ROS_DYNAMICS_SKIP_REPORT')
    if path:
        reasons = sorted({r for _, r in _skips})
        with open(path, 'w') as f:
            f.write(f'{len(_skips)} skipped (only launch/launch_ros may skip)\n')
            f.writelines(f'{sum(r == x for _, x in _skips)} x {r}\n' for r in reasons)


def pytest_terminal_summary(terminalreporter):
    tr = terminalreporter
    tr.write_line(f'skipped: {len(_skips)} (only launch/launch_ros may skip)')
    for nodeid, reason in _forbidden():
        tr.write_line(f'FAILED by skipping: {nodeid}: {reason} -- a dependency the set-up '
                      'installs must be imported, not skipped', red=True)
