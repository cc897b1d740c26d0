"""`source scripts/setup_env.sh` is safe in an interactive shell.

What this proves: the real scripts/setup_env.sh, sourced by bash, (1) leaves the caller's shell
options (`set -o`, `shopt`) and working directory exactly as they were, (2) exports the
environment it promises (PATH with .venv/bin first, LOCALHOST discovery, a domain id), (3) adds
nothing twice when sourced again, and (4) when the installation step fails, returns a non-zero
status with a message and the caller's shell goes on running. The installation itself
(scripts/install_venv.sh: pip and the CMake build) is stubbed here: the script is run from a
copy of the repository's scripts/ folder whose install_venv.sh only exits 0 or 1, and whose
.venv/bin/python is the interpreter running this test. The installer is exercised by
./scripts/run_tests.sh and ./scripts/demo.sh from a fresh clone.
"""

import os
import shutil
import subprocess
import sys

import pytest

pytestmark = pytest.mark.core

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BASH = shutil.which('bash')
assert BASH, 'the scripts are bash scripts: bash must be installed'


def _fake_checkout(tmp_path, install_status):
    root = tmp_path / 'clone'
    (root / 'scripts').mkdir(parents=True)
    shutil.copy(os.path.join(REPO_ROOT, 'scripts', 'setup_env.sh'), root / 'scripts')
    stub = root / 'scripts' / 'install_venv.sh'
    stub.write_text(f'#!/usr/bin/env bash\nset -euo pipefail\necho "[stub install]" >&2\n'
                    f'exit {install_status}\n')
    stub.chmod(0o755)
    (root / '.venv' / 'bin').mkdir(parents=True)
    os.symlink(sys.executable, root / '.venv' / 'bin' / 'python')
    return root


def _run(script, cwd):
    env = {k: v for k, v in os.environ.items() if k not in ('ROS_DOMAIN_ID', 'BASH_ENV', 'ENV')}
    return subprocess.run([BASH, '--norc', '--noprofile', '-c', script], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=60)


def _sections(out):
    """Split the output at lines '=== name' into {name: text}."""
    parts, name = {}, None
    for line in out.splitlines():
        if line.startswith('=== '):
            name = line[4:]
            parts[name] = []
        elif name is not None:
            parts[name].append(line)
    return {k: '\n'.join(v) for k, v in parts.items()}


PROBE = r'''
echo "=== before"; set -o; shopt
pwd_before=$(pwd)
source "{setup}"
status=$?
echo "=== after"; set -o; shopt
echo "=== status"; echo "$status"
echo "=== pwd"; [ "$(pwd)" = "$pwd_before" ] && echo same || echo "changed to $(pwd)"
echo "=== env"; echo "PATH=$PATH"; echo "RANGE=${{ROS_AUTOMATIC_DISCOVERY_RANGE:-}}"
echo "DOMAIN=${{ROS_DOMAIN_ID:-}}"
source "{setup}"
echo "=== again"; echo "PATH=$PATH"; echo "LD=$LD_LIBRARY_PATH"
false
echo "=== alive"; echo "the shell goes on after a failing command"
'''


def test_sourcing_leaves_shell_options_and_directory_unchanged(tmp_path):
    root = _fake_checkout(tmp_path, install_status=0)
    work = tmp_path / 'elsewhere'
    work.mkdir()
    res = _run(PROBE.format(setup=root / 'scripts' / 'setup_env.sh'), cwd=work)
    s = _sections(res.stdout)
    assert res.returncode == 0, res.stderr
    assert s['status'].strip() == '0', res.stdout + res.stderr
    assert s['after'] == s['before']          # set -o and shopt: byte for byte
    assert s['pwd'].strip() == 'same'
    env = dict(line.split('=', 1) for line in s['env'].splitlines())
    assert env['PATH'].split(':')[0] == str(root / '.venv' / 'bin')
    assert env['RANGE'] == 'LOCALHOST'
    assert 1 <= int(env['DOMAIN']) <= 232
    again = dict(line.split('=', 1) for line in s['again'].splitlines())
    assert again['PATH'] == env['PATH']       # sourcing twice adds nothing twice
    ld = again['LD'].split(':')
    assert len(ld) == len(set(ld))
    assert 'alive' in s


def test_a_failed_install_returns_instead_of_closing_the_shell(tmp_path):
    root = _fake_checkout(tmp_path, install_status=1)
    script = (f'source "{root}/scripts/setup_env.sh"; status=$?\n'
              'echo "=== status"; echo "$status"\n'
              'echo "=== options"; set -o | grep -E "errexit|nounset|pipefail"\n')
    res = _run(script, cwd=tmp_path)
    s = _sections(res.stdout)
    assert res.returncode == 0, res.stderr
    assert s['status'].strip() == '1'
    assert '[setup] failed' in res.stderr
    assert all(line.split()[-1] == 'off' for line in s['options'].splitlines()), s['options']


def test_run_as_a_program_it_exits_with_the_status(tmp_path):
    root = _fake_checkout(tmp_path, install_status=1)
    res = subprocess.run([BASH, str(root / 'scripts' / 'setup_env.sh')], capture_output=True,
                         text=True, timeout=60)
    assert res.returncode == 1
