"""The package's shape, checked on its sources: layers import only downwards (core <- estimation
<- identification <- control <- simulation <- ros: the per-cycle estimation never imports the
offline identification), no module imports another's private names, files stay small enough to read, the node is an adapter, and
no test or benchmark reaches into a node's private members."""
import ast
import os
import re

import pytest

pytestmark = pytest.mark.core

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PKG = os.path.join(ROOT, 'ros_dynamics')
LAYERS = ('core', 'estimation', 'identification', 'control', 'simulation', 'ros')


def _sources(folder):
    for dirpath, _, files in os.walk(folder):
        for name in sorted(files):
            if name.endswith('.py'):
                yield os.path.join(dirpath, name)


def _layer(path):
    rel = os.path.relpath(path, PKG).split(os.sep)
    return rel[0] if len(rel) > 1 and rel[0] in LAYERS else None


def _imported_layers(path):
    tree = ast.parse(open(path).read())
    rel_pkg = os.path.relpath(os.path.dirname(path), ROOT).split(os.sep)
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = rel_pkg[:len(rel_pkg) - node.level + 1]
                names = ['.'.join(base + ([node.module] if node.module else []))]
            else:
                names = [node.module or '']
        for name in names:
            parts = name.split('.')
            if parts[0] == 'ros_dynamics' and len(parts) > 1 and parts[1] in LAYERS:
                yield parts[1]


def test_layers_import_only_downwards():
    wrong = []
    for path in _sources(PKG):
        layer = _layer(path)
        if layer is None:
            continue
        for used in _imported_layers(path):
            if LAYERS.index(used) > LAYERS.index(layer):
                wrong.append(f'{os.path.relpath(path, ROOT)} imports ros_dynamics.{used}')
    assert not wrong, wrong


def test_no_private_names_imported_across_modules():
    wrong = []
    for path in _sources(PKG):
        for node in ast.walk(ast.parse(open(path).read())):
            if isinstance(node, ast.ImportFrom) and (node.level or (node.module or '').startswith('ros_dynamics')):
                wrong += [f'{os.path.relpath(path, ROOT)}: {a.name}' for a in node.names
                          if a.name.startswith('_') and not a.name.startswith('__')]
    assert not wrong, wrong


def test_file_sizes():
    sizes = {os.path.relpath(p, ROOT): sum(1 for _ in open(p)) for p in _sources(PKG)}
    assert sizes['ros_dynamics/ros/dynamics_node/node.py'] <= 500
    assert sizes['ros_dynamics/ros/dynamics_node/engine.py'] <= 350
    assert not {p: n for p, n in sizes.items() if n > 600}


def _functions(path, names):
    tree = ast.parse(open(os.path.join(PKG, path)).read())
    return [f for f in ast.walk(tree) if isinstance(f, (ast.FunctionDef, ast.ClassDef))
            and f.name in names]


def _engine_chains(node):
    """``eng.a.b`` / ``self._eng.a.b``: a member of a member of the engine."""
    def is_engine(x):
        return (isinstance(x, ast.Name) and x.id == 'eng') or (
            isinstance(x, ast.Attribute) and x.attr == '_eng')
    return [ast.unparse(a) for a in ast.walk(node) if isinstance(a, ast.Attribute)
            and isinstance(a.value, ast.Attribute) and is_engine(a.value.value)]


def test_the_joint_state_callback_reads_runs_publishes():
    """The callback: read -> Engine.run -> Outputs.publish, with at most two returns, and
    neither it nor the outputs reach through the engine into its parts (docs/architecture.md)."""
    callback, = _functions('ros/dynamics_node/node.py', {'_on_joint_state'})
    assert sum(isinstance(n, ast.Return) for n in ast.walk(callback)) <= 2
    calls = {ast.unparse(c.func) for c in ast.walk(callback) if isinstance(c, ast.Call)}
    assert {'eng.run', 'self._read', 'self._outputs.publish'} <= calls, calls
    path = (_functions('ros/dynamics_node/node.py', {'_on_joint_state', '_read', '_account'})
            + _functions('ros/dynamics_node/outputs.py', {'christoffel_due', 'publish', '_messages', '_due',
                                            '_show', '_contacts'}))
    assert not [c for f in path for c in _engine_chains(f)]


PRIVATE = re.compile(r'\b(node|big|self\.node|n)\._[a-z]\w*|\._on_[a-z_]+\(|\._(engine|cfg|'
                     r'built|install_built|observer|last_stamp_ns|pub_\w+|srv_\w+)\b')


def test_no_test_or_benchmark_touches_node_privates():
    hits = []
    for folder in ('test', 'benchmarks'):
        for path in _sources(os.path.join(ROOT, folder)):
            if os.path.basename(path) == os.path.basename(__file__):
                continue
            for k, line in enumerate(open(path), 1):
                if PRIVATE.search(line) and 'node_support' not in path:
                    hits.append(f'{os.path.relpath(path, ROOT)}:{k}: {line.strip()}')
    assert not hits, '\n'.join(hits)
