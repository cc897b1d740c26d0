"""Where a node's Python thread spends its CPU: ``perf record`` of that one thread, by library.

vs_pinocchio.py ``--perf`` records each node's main thread (its Python thread: the executor
that runs the callbacks) while it answers the joint states, and splits that thread's measured
CPU per joint state (``/proc``) by the share of perf's samples in each library, grouped:

* ``interpreter``: libpython (the bytecode of every Python function, the callbacks included);
* ``kernel``: system calls and interrupts the thread caused (perf's ``[kernel.kallsyms]``);
* ``DDS``: Fast DDS, Fast CDR and the rmw layer;
* ``rclpy``: rclpy's C++ module, rcl, rcutils, tracetools;
* ``C/C++ runtime``: libc, libstdc++, libm (copies, allocation, locks);
* ``numba code``: the compiled kernels (perf's ``[JIT]`` maps);
* ``numba dispatch``: numba's dispatcher and runtime modules (typing and unboxing the
  arguments of each call into a compiled kernel);
* ``numpy``: numpy's C modules;
* ``other``: the rest.

perf (Debian: linux-perf) must be installed and allowed to record the user's own processes
(``kernel.perf_event_paranoid`` <= 2).
"""
import os
import shutil
import signal
import subprocess

#: (group, prefixes of the perf "dso" names it holds), in the order of the table
GROUPS = (('interpreter', ('libpython',)),
          ('kernel', ('[kernel',)),
          ('DDS', ('libfastdds', 'libfastcdr', 'librmw')),
          ('rclpy', ('_rclpy', 'librcl', 'librcutils', 'libtracetools')),
          ('C/C++ runtime', ('libc.', 'libstdc++', 'libm.', 'libpthread')),
          ('numba code', ('[JIT]',)),
          ('numba dispatch', ('_dispatcher', '_nrt_python', '_helperlib', '_typeof')),
          ('numpy', ('_multiarray', '_umath', '_simd')),
          ('other', ('',)))
FREQUENCY = 999      # samples per second of the thread's CPU (each interrupts it: a profiled run's
#                      CPU is for the split, not for the cost)


def check():
    """SystemExit with what to do when perf cannot record here."""
    if shutil.which('perf') is None:
        raise SystemExit('--perf needs perf (Debian: apt-get install linux-perf)')


def start(pid, path):
    """perf recording the main thread of process ``pid`` into ``path`` until :func:`stop`."""
    return subprocess.Popen(['perf', 'record', '-q', '-F', str(FREQUENCY), '-t', str(pid),
                             '-o', path], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)


def stop(recorder):
    recorder.send_signal(signal.SIGINT)
    recorder.wait(60)


def shares(path):
    """{group: share of the samples} of a recording (module text)."""
    out = subprocess.run(['perf', 'report', '-i', path, '--sort', 'dso', '--stdio', '-n'],
                         capture_output=True, text=True, check=True).stdout
    counts = dict.fromkeys((g for g, _ in GROUPS), 0)
    for line in out.splitlines():
        parts = line.split(None, 2)
        if line.startswith('#') or len(parts) < 3 or not parts[0].endswith('%'):
            continue
        dso = parts[2].strip()
        group = next(g for g, prefixes in GROUPS if any(dso.startswith(p) for p in prefixes))
        counts[group] += int(parts[1])
    total = sum(counts.values())
    os.remove(path)
    return {g: n / total for g, n in counts.items()} if total else {}
