"""Compile every kernel into numba's disk cache ahead of time (e.g. once at set-up).

    python -m ros_dynamics.warmup

Importing ros_dynamics compiles nothing; each kernel is compiled at its first call, or loaded
from the disk cache if a process compiled it before (core/jit.py).  This compiles them all, one
line of progress per kernel with the CPU time it typically takes (``ESTIMATE``) and the time it
took; one line if all are cached already.  Processes started meanwhile wait for a kernel being
compiled and then load it (an inter-process lock in the cache directory), so it is safe to
start nodes while this runs.
"""

import sys
import time

# compile CPU seconds per kernel, measured cold by benchmarks/compile_cost.py on a shared
# 2-core machine (less on an idle one), compiled in this order (the functions the kernels share,
# jit.shared, are compiled by the first that needs them); a kernel already in the cache loads
# in ~0.1 s
ESTIMATE = {
    'terms': 7.0, 'geometry': 2.0, 'observer_terms': 1.5, 'mass_matrix': 1.0, 'gravity': 1.0,
    'inverse_dynamics': 2.0, 'forward_dynamics': 3.0, 'contact_compliance': 7.0,
    'dynamics_batch': 4.0, 'christoffel_batch': 2.0, 'residual_step': 0.5, 'any_above': 0.1,
    'cycle_step': 6.0, 'read_and_step': 6.0, 'task_space': 5.5, 'derivatives': 8.0,
    'derivatives_batch': 10.0,
}


def main(argv=None):
    import ros_dynamics.core  # noqa: F401  (define every kernel; compile nothing)
    import ros_dynamics.estimation.observer  # noqa: F401
    import ros_dynamics.estimation.cycle_kernel  # noqa: F401
    import ros_dynamics.ros.dynamics_node.wire  # noqa: F401  (the reader and read_and_step)
    from ros_dynamics.core.jit import ENTRY_KERNELS, cached, ready

    t_all = time.process_time()
    kernels = list(ENTRY_KERNELS.items())
    missing = [name for name, (kernel, _) in kernels if not cached(kernel)]
    if not missing:
        _warm_pipeline()
        print(f'ros_dynamics: all {len(kernels)} kernels are in the numba cache '
              f'({time.process_time() - t_all:.1f} s CPU to check)', flush=True)
        return 0
    total = sum(ESTIMATE.get(name, 1.0) for name in missing)
    print(f'ros_dynamics: compiling {len(missing)} of {len(kernels)} kernels into the numba cache '
          f'(about {total:.0f} s CPU; once, later processes load them)', flush=True)
    for i, (name, (kernel, _)) in enumerate(kernels, 1):
        t0, w0 = time.process_time(), time.perf_counter()
        estimate = f'~{ESTIMATE.get(name, 1.0):.0f} s' if name in missing else 'cached'
        print(f'  [{i:2d}/{len(kernels)}] {name:20s} ({estimate}) ... ', end='', flush=True)
        ready(kernel)
        cpu, wall = time.process_time() - t0, time.perf_counter() - w0
        print(f'{cpu:.1f} s CPU ({wall:.1f} s wall)', flush=True)
    t0 = time.process_time()
    print('  [+] the node cycle (joint-state reader, the compiled step, what follows it) ... ', end='', flush=True)
    _warm_pipeline()
    print(f'{time.process_time() - t0:.1f} s CPU', flush=True)
    print(f'ros_dynamics: kernels ready ({time.process_time() - t_all:.1f} s CPU)', flush=True)
    return 0


def _warm_pipeline():
    """The small kernels of the node's per-cycle pipeline outside the core, on the bundled
    arm: the joint-state reader and the node's cycle (its compiled step and what follows it)."""
    import numpy as np
    from ros_dynamics.core.bundled import bundled_urdf
    from ros_dynamics.core.urdf import load_urdf
    from ros_dynamics.estimation.cycle_state import ObserverSettings
    from ros_dynamics.estimation.cycle import node_cycle
    from ros_dynamics.ros.dynamics_node.wire import compile_reader
    compile_reader()
    model = load_urdf(bundled_urdf('arm7'))
    names, z = tuple(model.joint_names), np.zeros(model.nv)
    js = node_cycle(model, ObserverSettings(model))
    for k in range(2):
        js.step(names, z, z, z, 1, k, 0)


if __name__ == '__main__':
    sys.exit(main())
