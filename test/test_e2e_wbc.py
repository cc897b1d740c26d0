"""End to end over real processes and loopback DDS: the floating-base quadruped in the simulator
(rigid feet, odom, a push) + dynamics node (~/dynamics, ~/task_space with the four feet) +
wbc_controller, through scripts/closed_loop.py --robot quadruped, for a short run (stand, the
first CoM segments and a 30 N push on the trunk).  Claims: the summary line has the documented
form; no fall; CoM rms within 5.8 mm (3x the 1.92 mm measured; the outside target is 1 cm);
every QP solved and every joint state answered (lock-step); the plot is written."""
import json
import os
import re
import subprocess
import sys

import pytest

pytestmark = pytest.mark.system

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, 'scripts', 'closed_loop.py')
LINE = re.compile(r'quadruped closed loop: CoM rms ([\d.]+) m, max tilt ([\d.]+) deg, falls '
                  r'(\d+), QP solved ([\d.]+) %, joint states answered ([\d.]+) %$')


@pytest.fixture(scope='module')
def result(tmp_path_factory, ros_env):
    tmp = tmp_path_factory.mktemp('wbc')
    out_json, out_png = tmp / 'q.json', tmp / 'q.png'
    env = dict(ros_env, _ROS_DYNAMICS_DEMO_ENV='1')
    proc = subprocess.run([sys.executable, SCRIPT, '--robot', 'quadruped', '--duration', '1.5',
                           '--push-time', '1.0', '--json', str(out_json), '--out', str(out_png),
                           '--timeout', '240'],
                          env=env, capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    with open(out_json) as f:
        return json.load(f), proc.stdout, out_png


def test_summary_line_and_targets(result):
    res, out, png = result
    m = LINE.match(out.strip().splitlines()[-1])
    assert m, out[-2000:]
    rms, tilt, falls, solved, answered = (float(x) for x in m.groups())
    assert falls == 0 and res['falls'] == 0, out
    # measured 2026-11-28, this run (1.5 s, 30 N push at 1 s) three times: CoM rms 1.92 mm and
    # max tilt 0.61 deg each time (lock-step: deterministic); asserted at 3x (the outside
    # target is 1 cm)
    assert rms <= 0.0058 and res['com_rms_m'] <= 0.0058, out
    assert res['com_rms_true_state_m'] <= 0.0058, out   # the simulator's own CoM, not the stream's
    assert res['com_max_after_push_m'] > 2e-3, out   # the push moved it (~0.1 mm without)
    assert tilt < 1.8, out
    assert solved >= 99.9 and res['qp_solved_fraction'] >= 0.999, out
    assert answered >= 99.9, out
    assert res['samples'] >= 1400 and res['joint_states_published'] >= 1400, out
    assert os.path.getsize(png) > 10_000
