"""Every script in benchmarks/ answers ``--help`` (its usage, status 0, nothing run), and every
other file there is a module that a script imports."""
import os
import re
import subprocess
import sys

import pytest

pytestmark = pytest.mark.core

BENCH = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'benchmarks')
FILES = sorted(f for f in os.listdir(BENCH) if f.endswith('.py'))


def _text(name):
    with open(os.path.join(BENCH, name)) as f:
        return f.read()


SCRIPTS = [f for f in FILES if re.search(r"^if __name__ == '__main__':", _text(f), re.M)]


def test_every_script_answers_help():
    # all at once (each imports numpy, the package, some Pinocchio or rclpy): the test waits for
    # the slowest import, not for the sum
    procs = {f: subprocess.Popen([sys.executable, os.path.join(BENCH, f), '--help'],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                 cwd=BENCH) for f in SCRIPTS}
    failed = {}
    for f, p in procs.items():
        out, err = p.communicate(timeout=300)
        if p.returncode != 0 or not out.startswith('usage:') or 'wrote ' in out + err:
            failed[f] = (p.returncode, out[-500:], err[-1500:])
    assert not failed, failed
    assert {'node_cycle.py', 'vs_pinocchio.py', 'pinocchio_node.py', 'relay_node.py'} <= set(
        SCRIPTS)


def test_every_other_file_is_a_module_a_script_imports():
    scripts = ''.join(_text(f) for f in SCRIPTS)
    for f in set(FILES) - set(SCRIPTS):
        name = f[:-3]
        assert re.search(rf'^\s*(from {name} import|import {name}\b)', scripts, re.M), (
            f'benchmarks/{f} is neither a script (no __main__) nor imported by one')
