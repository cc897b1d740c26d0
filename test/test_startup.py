"""Start-up: importing compiles nothing, a kernel is compiled (or loaded from the disk cache) at
its first call, under an inter-process lock, and numba's cache works with any NUMBA_OPT.

Each check runs a fresh interpreter (the package's own state is per process)."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import ros_dynamics as rd
from ros_dynamics.core import jit, kernels

pytestmark = pytest.mark.core

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _python(code, **env):
    return subprocess.Popen([sys.executable, '-c', code], cwd=REPO, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=dict(os.environ, PYTHONPATH=REPO, **env))


def test_import_compiles_nothing():
    """import ros_dynamics loads neither NumPy nor numba (the API comes at first use); the core
    defines its kernels and compiles none of them."""
    p = _python('import sys\n'
                'import ros_dynamics\n'
                'print(sorted(m for m in ("numpy", "numba", "rclpy") if m in sys.modules))\n'
                'import ros_dynamics.core, ros_dynamics.estimation.observer\n'
                'from ros_dynamics.core.jit import ENTRY_KERNELS\n'
                'print(len(ENTRY_KERNELS))\n'
                'print(sorted(n for n, (k, _) in ENTRY_KERNELS.items() if k.overloads))')
    out, err = p.communicate(timeout=600)
    assert p.returncode == 0, err
    loaded, count, compiled = out.strip().splitlines()
    assert loaded == '[]'
    assert int(count) >= 10
    assert compiled == '[]'


def test_every_entry_kernel_is_sealed_to_one_signature():
    """A call with other argument types is refused by the dispatcher (the public function then
    converts), never compiled into a second version."""
    model = rd.load_urdf(rd.bundled_urdf('arm7'))
    rd.mass_matrix(model, [0.1] * 7)            # a list: converted, the sealed kernel called
    assert len(kernels.mass_matrix.overloads) == 1
    with pytest.raises(TypeError):
        kernels.mass_matrix(model.packed, rd.Data(model).work, [0.1] * 7)
    assert len(kernels.mass_matrix.overloads) == 1
    assert set(jit.ENTRY_KERNELS) >= {'terms', 'observer_terms', 'mass_matrix',
                                      'gravity', 'inverse_dynamics', 'forward_dynamics',
                                      'contact_compliance', 'dynamics_batch', 'christoffel_batch'}


def test_a_second_process_waits_for_the_compile_lock():
    """While this process holds the lock of the cache directory, another process that needs a
    kernel waits; once released it gets the kernel."""
    kernel = kernels.gravity
    child = ('import sys, ros_dynamics as rd\n'
             'm = rd.load_urdf(rd.bundled_urdf("arm7"))\n'
             'print("calling", flush=True)\n'
             'print(rd.gravity(m, [0.0] * 7)[1], flush=True)\n')
    with jit.compile_lock(kernel):
        p = _python(child)
        assert p.stdout.readline().strip() == 'calling'
        with pytest.raises(subprocess.TimeoutExpired):
            p.wait(timeout=3.0)                 # blocked on the lock (it would take ~0.1 s)
    out, err = p.communicate(timeout=600)
    assert p.returncode == 0, err
    model = rd.load_urdf(rd.bundled_urdf('arm7'))
    assert float(out.strip()) == pytest.approx(rd.gravity(model, [0.0] * 7)[1], rel=1e-12)


def test_unoptimized_kernels_compile_and_run(tmp_path):
    """NUMBA_OPT=0 (e.g. for debugging): numba may decline to cache some kernel and warns
    through the locator; the core's locator answers as numba's own does."""
    p = _python('import numpy as np, ros_dynamics as rd\n'
                'm = rd.load_urdf(rd.bundled_urdf("arm7"))\n'
                'J = rd.link_jacobian(m, np.zeros(7), m.link_names[-1])\n'
                'print(J.shape)', NUMBA_OPT='0', NUMBA_CACHE_DIR=str(tmp_path))
    out, err = p.communicate(timeout=600)
    assert p.returncode == 0, err
    assert out.strip() == '(6, 7)'


def test_a_second_process_loads_every_kernel_from_the_disk_cache(tmp_path):
    """The functions compiled once per process and shared by the kernels (the named views, the
    kinematics pass, Algorithm 2's sweep) are rebuilt from numba's cache in a later process:
    it compiles nothing and gets the same numbers (Gamma checked against C = Gamma v)."""
    code = ('import json, numpy as np, ros_dynamics as rd\n'
            'from numba.core import event\n'
            'compiled = []\n'
            'class L(event.Listener):\n'
            '    def on_start(self, ev): compiled.append(ev.data["dispatcher"].py_func.__name__)\n'
            '    def on_end(self, ev): pass\n'
            'event.register("numba:compile", L())\n'
            'm = rd.load_urdf(rd.bundled_urdf("arm7"))\n'
            'q, v = np.linspace(-1, 1, 7), np.linspace(0.5, -0.3, 7)\n'
            'd = rd.Data(m)\n'
            'rd.compute_all_terms(m, q, v, d, christoffel=True)\n'
            'G = rd.christoffel(m, q)\n'
            'print(json.dumps(dict(compiled=compiled, C=d.C.tolist(), Gv=(G @ v).tolist(),\n'
            '                      dataG=d.Gamma.tolist(), G=G.tolist(),\n'
            '                      g=rd.gravity(m, q).tolist())))\n')
    runs = []
    for _ in range(2):
        p = _python(code, NUMBA_CACHE_DIR=str(tmp_path))
        out, err = p.communicate(timeout=600)
        assert p.returncode == 0, err
        runs.append(json.loads(out.strip().splitlines()[-1]))
    first, second = runs
    assert {'terms', 'geometry', 'gravity'} <= set(first['compiled'])
    assert second['compiled'] == []
    for key in ('C', 'G', 'g'):        # (the last bit may differ: FMA contraction is free)
        np.testing.assert_allclose(first[key], second[key], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(second['Gv'], second['C'], atol=1e-12)
    np.testing.assert_allclose(second['dataG'], second['G'], atol=1e-12)


def test_warmup_sees_every_kernel():
    """python -m ros_dynamics.warmup finds every entry kernel (set-up relies on it to fill the
    cache: with none found it would report success and compile nothing)."""
    import re
    p = _python('import sys\nfrom ros_dynamics import warmup\nsys.exit(warmup.main())')
    out, err = p.communicate(timeout=1800)
    assert p.returncode == 0, err
    counts = re.search(r'(?:all (\d+) kernels|of (\d+) kernels)', out)
    assert counts is not None, out
    assert int(counts.group(1) or counts.group(2)) >= 10, out


def test_a_kernel_calling_core_kernels_is_stale_with_them(tmp_path):
    """The compiled cycle's kernel (outside the core) calls the core's ``terms``, the
    observer's kernels and the rules: an edit of any of them invalidates its cache entry
    (numba's own stamp, the defining file alone, would load it stale), an edit elsewhere does
    not."""
    import shutil
    pkg = tmp_path / 'src'
    shutil.copytree(os.path.join(REPO, 'ros_dynamics'), pkg / 'ros_dynamics',
                    ignore=shutil.ignore_patterns('__pycache__'))
    code = ('import sys\n'
            'from ros_dynamics.core.jit import cached\n'
            'from ros_dynamics.estimation.cycle_kernel import compile_cycle, cycle_step\n'
            'print(cached(cycle_step))\n'
            'if sys.argv[-1] == "compile":\n'
            '    compile_cycle()\n')

    def run(arg):
        p = subprocess.run([sys.executable, '-c', code, arg], cwd=str(tmp_path), text=True,
                           capture_output=True, timeout=900,
                           env=dict(os.environ, PYTHONPATH=str(pkg),
                                    NUMBA_CACHE_DIR=str(tmp_path / 'cache')))
        assert p.returncode == 0, p.stderr
        return p.stdout.split()[0] == 'True'

    assert not run('compile')
    assert run('check')
    for edited, stale in (('ros_dynamics/ros/dynamics_node/wire.py', False),
                          ('ros_dynamics/estimation/observer.py', True),
                          ('ros_dynamics/estimation/rules.py', True),
                          ('ros_dynamics/core/rnea.py', True)):
        with open(pkg / edited, 'a') as f:
            f.write('\n# edited\n')
        assert run('compile') is not stale, edited
        assert run('check')


def test_a_kernel_called_while_another_thread_compiles_it(tmp_path):
    """The node compiles the geometry kernel on a thread (Engine.warm_later) while the executor
    thread may already need it (a contact wrench): the call waits for that compile and
    succeeds (numba's dispatcher, left to itself, would refuse it: 'compilation disabled')."""
    code = ('import threading\n'
            'import numpy as np, ros_dynamics as rd\n'
            'from ros_dynamics.core import jit, kernels\n'
            'model = rd.load_urdf(rd.bundled_urdf("arm7"))\n'
            'q = np.full(7, 0.3)\n'
            'w = threading.Thread(target=jit.ready, args=(kernels.geometry,))\n'
            'w.start()\n'
            'calls = 0\n'
            'while w.is_alive() or calls < 3:\n'
            '    J = rd.link_jacobian(model, q, "arm_link_5")\n'
            '    G = rd.christoffel(model, q)\n'
            '    calls += 1\n'
            'w.join()\n'
            'print(calls, float(np.abs(J).sum()) > 0, G.shape)\n')
    p = subprocess.run([sys.executable, '-c', code], cwd=REPO, text=True, capture_output=True,
                       timeout=900, env=dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path)))
    assert p.returncode == 0, p.stderr[-3000:]
    assert p.stdout.split()[1:] == ['True', '(7,', '7,', '7)'], p.stdout
