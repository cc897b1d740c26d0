"""The trot end to end over real processes and loopback DDS, judged on a plant that is not the
model: ``scripts/closed_loop_trot.py`` runs MuJoCo's Solo12 (``sim_mujoco``: soft contacts, a
1 kg trunk load the URDF does not know, a legged robot's sensing: odometry 200 Hz, 10 ms late,
0.03 m/s noise; joint noise), the dynamics node (the feet as task and contact frames) and
``wbc_controller`` (``gait: trot``, touch-downs from the node's ``~/contact_forces``), and plays
``cmd_vel``: trot in place 2 s, then forward 0.3 m/s for 5 s.  The plant does not step while the
newest command answers a state more than 5 ms old and the node answers every joint state in
turn (``catch_up`` off): the result does not depend on the machine's load; the real-time runs
are benchmarks/trot_dds.py's.

Every claim is MuJoCo's truth (its base pose and twist) or the controller's own log, never the
stream.  The script runs until the simulator's end (by count: the simulated duration), with a
generous wall-clock limit.  Tolerances: 3x the worst of three seeds measured (in the
comments); the node's contact state at the issue's targets."""
import json
import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.system

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, 'scripts', 'closed_loop_trot.py')


def test_solo12_trots_forward_on_cmd_vel_over_dds(tmp_path, ros_env):
    out_json, out_png = tmp_path / 't.json', tmp_path / 't.png'
    env = dict(ros_env, _ROS_DYNAMICS_DEMO_ENV='1')
    proc = subprocess.run([sys.executable, SCRIPT, '--robot', 'solo12', '--plan', 'forward',
                           '--hidden-load', '1.0', '--sensing', 'noisy', '--seed', '1',
                           '--json', str(out_json), '--out', str(out_png), '--timeout', '900'],
                          env=env, capture_output=True, text=True, timeout=1200, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    with open(out_json) as f:
        res = json.load(f)
    out = proc.stdout[-3000:]
    print('\nRESULT', {k: v for k, v in res.items() if k not in ('args',)})
    assert res['falls'] == 0, out
    (still, forward) = res['segments']
    assert forward['command'] == [0.3, 0.0, 0.0]
    # the base's mean velocity over the last 2 s of each command against it: seeds 1-3 (2026-12-
    # 01, load average 8) at most 0.0010, 0.0017, 0.0011 m/s and 0.0002, 0.0002, 0.0003 rad/s
    for s in (still, forward):
        assert max(abs(x) for x in s['error'][:2]) <= 0.0051, s
        assert abs(s['error'][2]) <= 0.0009, s
    c = res['controller']
    # touch-downs from the node's estimate (at the swing's end or probing until it sees a foot
    # down), none given up and none from the schedule: 86 seen (seed 1, 2026-12-02)
    seen = sum(c['touchdowns'][k] for k in ('early', 'on_time', 'late'))
    assert seen >= 60, c
    # the node's contact state against MuJoCo's while trotting, the targets: seed 1
    # agreed in 98.3 % of the samples, touch-downs seen 2 ms (p90 4 ms) after MuJoCo's
    assert res['contact_agreement'] >= 0.95, res
    assert res['touchdown_delay_s'][0] <= 0.010 and res['touchdown_delay_s'][1] <= 0.025, res
    assert res['touchdowns_reported_above_1cm'] == 0, res
    assert c['touchdowns']['given_up'] == 0 and c['touchdowns']['planned'] == 0, c
    assert c['qp_solved'] == c['qp_tried'] and c['rejected'] == 0, c
    assert os.path.getsize(out_png) > 10_000
