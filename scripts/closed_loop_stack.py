"""Starting and stopping a closed loop's processes (simulator, dynamics node, controller) for the
closed-loop scripts (closed_loop_quadruped.py, closed_loop_mujoco.py, closed_loop_trot.py)."""
import time

from demo import _stop, start_program


def process_cpu(pid):
    """CPU seconds (user + system) a live process has used so far (None if it has ended)."""
    import os
    try:
        with open(f'/proc/{pid}/stat') as f:
            fields = f.read().rsplit(')', 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf('SC_CLK_TCK')


def run_stack(lis, subs, logs, files, sim_module, args, log_dir, say, started, progress,
              executor=None, cpu=None):
    """Start the dynamics node and the controller (``files['dyn']``, ``files['ctl']``), wait
    until the listener ``lis``'s subscriptions ``subs`` are matched with their publishers, start
    the simulator ``sim_module`` (``files['sim']``) and spin ``lis`` (in ``executor``, default
    an EventsExecutor) until it ends; then stop every process and shut rclpy down. Returns the
    monotonic start time; ``cpu`` (a dict), if given, gets each process's CPU seconds from
    the simulator's start to its end (the listener's: ``listener``) and the wall seconds."""
    import rclpy

    from ros_dynamics.ros.process import make_executor
    procs, t_start = [], time.monotonic()
    try:
        for name, module, f in (('dynamics_node', 'ros_dynamics.ros.dynamics_node.node', 'dyn'),
                                ('wbc_controller', 'ros_dynamics.ros.control.wbc_node', 'ctl')):
            start_program(procs, logs[name], ['-m', module], files[f])
        executor = executor or make_executor('events')
        executor.add_node(lis)
        # the simulator waits only for its joint_states subscribers: start it once this
        # listener is matched with the dynamics node's and the controller's publishers too, or
        # the first cycles' task space or CoM references go unrecorded under load
        say('[closed_loop] waiting for the dynamics node and the controller to be discovered')
        while (any(s.get_publisher_count() < 1 for s in subs)
               and time.monotonic() - t_start < args.timeout):
            executor.spin_once(timeout_sec=0.05)
            if any(p.poll() is not None for p in procs):
                raise RuntimeError(f'a process ended before the start; logs in {log_dir}')
        before = [process_cpu(p.pid) for p in procs] + [time.process_time(), time.monotonic()]
        sim = start_program(procs, logs['sim'], ['-m', sim_module], files['sim'])
        say(started)
        _spin_while(executor, sim, t_start + args.timeout, progress, procs, before, cpu)
    finally:
        _stop(procs)
        lis.destroy_node()
        rclpy.try_shutdown()
    return t_start


def _spin_while(executor, sim, deadline, progress, procs, before, cpu):
    """Spin until the simulator ends, reading the processes' CPU just before it exits (its
    last cycles: it ends by itself after its duration)."""
    import time as _time
    last = _time.monotonic()
    usage = None
    while sim.poll() is None and _time.monotonic() < deadline:
        executor.spin_once(timeout_sec=0.05)
        now = [process_cpu(p.pid) for p in procs]
        if None not in now:
            usage = now + [_time.process_time(), _time.monotonic()]
        if progress is not None and _time.monotonic() - last > 10.0:
            last = _time.monotonic()
            progress()
    for _ in range(200):                     # drain what is still queued
        executor.spin_once(timeout_sec=0.01)
    if cpu is not None and usage is not None:
        names = ['dynamics_node', 'wbc_controller']
        cpu.update({n: usage[i] - before[i] for i, n in enumerate(names)})
        cpu['sim'] = usage[2]
        cpu['listener'] = usage[3] - before[2]
        cpu['wall'] = usage[4] - before[3]


#: the controller's statistics line (wbc_node.WBCController.report)
_STATS = (r'periods at ([\d.]+) Hz: owed (\d+), answered (\d+) \([\d.]+ %\), skipped (\d+), '
          r'gaps in the stream (\d+); staleness (?:p50 ([\d.]+) ms, p99 ([\d.]+) ms, max '
          r'([\d.]+) ms|-); latency (?:p50 ([\d.]+) ms, p99 ([\d.]+) ms, max ([\d.]+) ms|-); '
          r'age (?:p50 (-?[\d.]+) ms, p99 (-?[\d.]+) ms, max (-?[\d.]+) ms|-); '
          r'pairs (\d+)/(\d+), QP solved (\d+)/(\d+), rejected (\d+), resent (\d+)'
          r'(?:; QP CPU time p50 (\d+) us, p99 (\d+) us)?')


def controller_statistics(log):
    """The last statistics line of wbc_controller's log as a dict (None when there is none):
    control_rate, periods owed / answered / skipped, gaps, staleness_ms, latency_ms and age_ms
    (p50, p99, max), pairs served / received, QP solved / tried, rejected, resent, qp_cpu_us (p50,
    p99), touchdowns {kind: count} and lost (the trot)."""
    import ast
    import re
    found = re.findall(_STATS, log)
    if not found:
        return None
    x = found[-1]
    touch = re.findall(r'touch-downs (\{[^}]*\}), lost (\d+)', log)
    num = [float(v) if v else None for v in x]
    return dict(control_rate=num[0], owed=int(num[1]), answered=int(num[2]),
                skipped=int(num[3]), gaps=int(num[4]),
                answered_fraction=num[2] / num[1] if num[1] else 0.0,
                staleness_ms=num[5:8] if num[5] is not None else None,
                latency_ms=num[8:11] if num[8] is not None else None,
                age_ms=num[11:14] if num[11] is not None else None,
                pairs_served=int(num[14]), pairs_received=int(num[15]), qp_solved=int(num[16]),
                qp_tried=int(num[17]), rejected=int(num[18]), resent=int(num[19]),
                qp_cpu_us=num[20:22] if num[20] is not None else None,
                touchdowns=ast.literal_eval(touch[-1][0]) if touch else None,
                lost=int(touch[-1][1]) if touch else None)
