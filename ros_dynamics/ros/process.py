"""Process life cycle shared by the executables (``dynamics_node``, ``sim``): init, spin, stop.

A ROS process should end with exit status 0 and no traceback when it is asked to stop, whether
by Ctrl-C in a terminal, by ``ros2 launch`` (which forwards SIGINT to its children, often after
the terminal already delivered one: two SIGINTs) or by SIGTERM (systemd, docker, ``kill``).
rclpy's default handlers shut the context down *from the signal handler* and then raise
KeyboardInterrupt wherever the main thread happens to be: inside a callback that is publishing
("publisher's context is invalid"), inside the executor (ExternalShutdownException), or inside
the kernel compile at start-up -- each a traceback and a non-zero status that ``ros2 launch``
reports as "process has died".

Here rclpy installs no handlers (``SignalHandlerOptions.NO``); ours only record the request and
wake the executor through a guard condition, so a running callback always completes, the spin
loop returns, and the node is destroyed before the context is shut down. While the node is
still being built (model load, kernel compile) a stop request ends the process at once, quietly
(``os._exit`` after flushing the output: nothing has been published yet, and an exception
raised from the handler there can land in a C callback of the compiler, which prints it and
goes on).
"""
from __future__ import annotations

import os
import signal
import sys
import threading
import time

from .parameter_table import ParameterError


ARGUMENT_HINT = (
    'Hint: rcl reads every -p value as YAML, so a URDF given as -p robot_description:="$(cat '
    'robot.urdf)" breaks on XML comments and some characters. Give the description in a '
    'parameter file (--params-file), with the launch file\'s urdf:= argument, or on the '
    'robot_description topic (README, Troubleshooting).')


def _exit_now():
    """End the process at once with status 0 (the node is not built: nothing to finish)."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001 - a closed or broken stream: exit anyway
            pass
    os._exit(0)


class Lifecycle:
    """Signal handling and the spin loop of one process; see :func:`run`."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self):
        self.stop = threading.Event()
        self.signal_name = None
        self._spinning = False
        self._wake = None
        self._previous = {}

    def install(self):
        for sig in self.SIGNALS:
            self._previous[sig] = signal.signal(sig, self._on_signal)

    def restore(self):
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        self._previous.clear()

    def _on_signal(self, signum, frame):
        first = not self.stop.is_set()
        self.stop.set()
        if first:
            self.signal_name = signal.Signals(signum).name
        if self._wake is not None:
            self._wake()  # wakes a waiting executor
        if not self._spinning and first:
            _exit_now()


def run(make_node, args=None, *, executor='single', keep_going=None, on_stop=None,
        before_spin=None) -> int:
    """Init rclpy, build the node with ``make_node()``, spin until a signal, clean up; returns 0.

    executor: 'single' (rclpy.executors.SingleThreadedExecutor) or 'events' (rclpy's
      experimental EventsExecutor, implemented in C++), or a callable(node) returning one.
    keep_going(node): optional; spinning also ends when it returns False.
    on_stop(node): called after spinning ends (e.g. to stop a worker thread), before the node is
      destroyed; the context is still valid then.
    before_spin(node): called once the node exists (e.g. to start a worker thread).
    """
    import rclpy
    from rclpy.exceptions import ParameterException
    from rclpy.signals import SignalHandlerOptions

    life = Lifecycle()
    life.install()
    node = None
    ex = None
    try:
        try:
            rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
        except Exception as exc:  # noqa: BLE001 - rcl's argument parser (RCLError)
            sys.stderr.write(f'could not start: {exc}\n{ARGUMENT_HINT}\n')
            return 2
        try:
            node = make_node()
        except (ParameterError, ParameterException) as exc:
            # a parameter value the node cannot start with (our rules or the descriptor's)
            sys.stderr.write(f'could not start: {exc}\n')
            return 2
        # the node exists: from here a signal ends the spin loop, and the stop is logged with
        # the node's statistics (on_stop), even if it comes before the first spin
        life._spinning = True
        ex = make_executor(executor(node) if callable(executor) else executor,
                           node.get_logger())
        ex.add_node(node)
        if hasattr(ex, 'wake'):  # EventsExecutor: no guard conditions, a wake() instead
            life._wake = ex.wake
        else:
            life._wake = node.create_guard_condition(lambda: None).trigger
        if before_spin is not None and not life.stop.is_set():
            before_spin(node)
        while not life.stop.is_set() and (keep_going is None or keep_going(node)):
            ex.spin_once(timeout_sec=0.2)
        if life.signal_name is not None:
            node.get_logger().info(f'{life.signal_name} received: shutting down')
    finally:
        life._spinning = True   # from here on a signal only sets the flag
        try:
            if node is not None and on_stop is not None:
                on_stop(node)
            if ex is not None:
                ex.shutdown(timeout_sec=1.0)
            if node is not None:
                node.destroy_node()
        finally:
            rclpy.try_shutdown()
            life.restore()
    return 0


def run_with_loop(make_node, args=None, join_timeout=5.0, executor='events') -> int:
    """:func:`run` for a node whose work is its ``loop()`` in a thread of its own (the
    simulators): the thread starts once the node exists; spinning ends on a signal or when the
    node's ``done`` event is set, which also ends the loop; then the thread is joined and the
    node's ``summary()`` logged.  The executor (of the commands it receives) is rclpy's
    EventsExecutor by default: 160 against 374 us of CPU per message for the single-threaded
    one (benchmarks/results/executor_overhead.md), a simulator's 500 commands a second."""
    import threading

    def start(node):
        node.thread = threading.Thread(target=node.loop, daemon=True)
        node.thread.start()

    def stop(node):
        node.done.set()
        if getattr(node, 'thread', None) is not None:
            node.thread.join(timeout=join_timeout)
        node.summary()

    return run(make_node, args, executor=executor, before_spin=start, on_stop=stop,
               keep_going=lambda node: not node.done.is_set())


def make_executor(kind: str, logger=None):
    """An rclpy executor by name: 'events' (rclpy.experimental.EventsExecutor, rclpy >= 9 /
    Kilted; falls back to 'single' where it does not exist) or 'single'."""
    if kind == 'events':
        try:
            from rclpy.experimental import EventsExecutor
            return EventsExecutor()
        except ImportError:
            if logger is not None:
                logger.info('rclpy has no EventsExecutor here: using SingleThreadedExecutor')
            kind = 'single'
    if kind == 'single':
        from rclpy.executors import SingleThreadedExecutor
        return SingleThreadedExecutor()
    raise ValueError(f"unknown executor {kind!r}: 'single' or 'events'")


class ThrottledLog:
    """Log a message at most once per period for each ``kind`` of problem (one throttle per
    kind, so a frequent kind hides no other), with the count of repeats not logged."""

    def __init__(self, logger):
        self.logger = logger
        self._last = {}            # kind -> (last time logged, repeats skipped since)

    def log(self, kind, text, level='warning', period=2.0):
        now = time.monotonic()
        last, skipped = self._last.get(kind, (None, 0))
        if last is not None and now - last < period:
            self._last[kind] = (last, skipped + 1)
            return
        self._last[kind] = (now, 0)
        if skipped:
            text += f' ({skipped} more of this kind not logged)'
        # one call site per severity: rclpy refuses a severity change at one call site
        if level == 'error':
            self.logger.error(text)
        elif level == 'info':
            self.logger.info(text)
        else:
            self.logger.warning(text)
