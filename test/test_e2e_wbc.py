"""End to end over real processes and loopback DDS, judged on a plant that is not the model:
MuJoCo plays the robot (``sim_mujoco``: soft contacts, a 1 kg load on the trunk that the URDF
does not know, joint velocity noise 0.05 rad/s, odometry 200 Hz, 10 ms late, 0.03 m/s noise on
the linear twist; commands applied as they arrive, 2-5 ms late, no lock-step), the dynamics
node computes the stream and ``wbc_controller`` closes the loop, through
``scripts/closed_loop_quadruped.py --plant mujoco`` with a short schedule (stand, CoM
trajectory, weight shift, lift a foot 5 cm and put it down, shift back) and a lateral push of
20 % of the weight.  On two robots of different size, by parameters only (feet, lift foot,
pose): the bundled 8.3 kg quadruped (+1 kg: 30 % of its trunk) and example-robot-data's
2.5 kg Solo12 (+1 kg: 40 % of the robot).

Every claim is MuJoCo's truth (its CoM, feet and base from the plant's record), never the
stream's: the CoM the stream carries is itself off by millimetres (the load it does not know),
which the test checks too.  Tolerances: at most 3x the worst of four runs on this machine
(2026-11-28, load average 10-18), capped by the targets (CoM 1 cm rms, lift >= 2 cm, slide
<= 2 cm, QP solved >= 99.9 %); the measurements are in the comments."""
import json
import os
import re
import subprocess
import sys

import pytest

pytestmark = pytest.mark.system

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, 'scripts', 'closed_loop_quadruped.py')
LINE = re.compile(r'(\w+) on MuJoCo \(hidden load ([\d.]+) kg, noisy sensing\): CoM rms ([\d.]+) '
                  r'm, falls (\d+), lifted foot ([\d.]+) m, stance slide ([\d.]+) m, QP solved '
                  r'([\d.]+) %$')
SCHEDULE = ['0.2', '0.25', '0.5', '0.1', '0.4', '0.5']     # 3.55 s; swing 2.05-2.45 s


@pytest.fixture(scope='module', params=['quadruped', 'solo12'])
def result(request, tmp_path_factory, ros_env):
    robot = request.param
    tmp = tmp_path_factory.mktemp(f'wbc_{robot}')
    out_json, out_png = tmp / 'q.json', tmp / 'q.png'
    env = dict(ros_env, _ROS_DYNAMICS_DEMO_ENV='1')
    proc = subprocess.run([sys.executable, SCRIPT, '--plant', 'mujoco', '--robot', robot,
                           '--hidden-load', '1.0', '--sensing', 'noisy', '--schedule', *SCHEDULE,
                           '--push-time', '3.1', '--json', str(out_json), '--out', str(out_png),
                           '--timeout', '300'],
                          env=env, capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    with open(out_json) as f:
        return robot, json.load(f), proc.stdout, out_png


def test_summary_line_and_targets_on_the_plants_truth(result):
    robot, res, out, png = result
    print('\nRESULT', robot, {k: v for k, v in res.items()
                              if k not in ('args', 'sensing', 'summary')})
    m = LINE.match(out.strip().splitlines()[-1])
    assert m and m.group(1) == robot, out[-2000:]
    # measured in four runs each (2026-11-28, load average 10-18): quadruped / Solo12
    assert res['falls'] == 0 and res['max_tilt_deg'] < 1.6, out   # 0.50-0.55 / 0.39-0.41 deg
    # MuJoCo's CoM against the reference: 2.59-2.66 mm / 4.75-4.81 mm rms (Solo12: its mass
    # 40 % off, the CoM task sags); 3x, capped by the target 1 cm
    assert res['com_rms_m'] <= {'quadruped': 0.0079, 'solo12': 0.01}[robot], out
    # the lifted foot against its step height 5 cm: 5.02-5.04 / 5.08-5.13 cm
    assert abs(res['lift_foot_height_m'] - 0.05) <= 0.0039, out
    assert res['lift_foot_max_normal_force_mid_swing_N'] < 0.05, out    # in the air: 0 N
    # the feet that stay down: 4.4-4.7 / 6.4 mm (noise, push and the soft contacts' creep)
    assert res['stance_slide_max_m'] <= 0.019, out
    # the controller answers at 500 Hz (1775 periods in 3.55 s), the newest state when the
    # plant ran ahead of it (up to 5 ms): 1594 answers measured (2026-12-01, load average 8),
    # 1383 in a clean-clone run (2026-12-02, load 1.9-2.1). How many depends on the CPU the
    # shared cores give it (the plant never waits), and the figures above judge the control on
    # MuJoCo's truth; this asks only that it answered through the run, every QP solved
    assert res['qp_solved_fraction'] >= 0.999 and res['cycles_served'] >= 900, out  # 100 %
    # the push (20 % of the weight, 0.1 s) moved MuJoCo's CoM sideways: 4.1-4.4 / 5.0-5.4 mm
    assert res['com_push_response_m'] > 1.4e-3, out
    # the stream's CoM is not the plant's (the load it does not know, late noisy odometry):
    # 2.3-2.4 / 6.8 mm rms; so the judge above is not the stream
    assert res['stream_com_vs_plant_rms_m'] > 0.8e-3, out
    # transport delay within the plant's bounds [2, 5] ms, commands flowing (2 hold steps)
    d = res['transport_delay_ms_p50_p99']
    assert 2.0 <= d[0] <= d[1] <= 5.0 and res['plant_steps_commands_hold'][2] <= 5, out
    assert os.path.getsize(png) > 10_000


def test_solo12_off_centre_load_links_off_com_corrected(tmp_path, ros_env):
    """Solo12 with 1 kg 36 mm off-centre and every link's inertials off by 16-24 %
    (PlantOptions.link_error 0.2), noisy sensing, the full schedule: the controller's model
    puts the true CoM 12.78 mm rms from the reference (benchmarks/results/
    closed_loop_quadruped_mujoco_solo12.md); with the CoM offset from the feet's centre of
    pressure (--com-correction on, control/com_offset.py) MuJoCo's CoM within the 1 cm target.
    Measured 8.45-8.51 mm in three runs (2026-11-28, load average 6-9); 3x that is over the
    target, so the target is the bound.  The estimate itself is in the controller's log."""
    out_json, out_png = tmp_path / 'c.json', tmp_path / 'c.png'
    env = dict(ros_env, _ROS_DYNAMICS_DEMO_ENV='1')
    proc = subprocess.run([sys.executable, SCRIPT, '--plant', 'mujoco', '--robot', 'solo12',
                           '--hidden-load', '1.0', '--load-offset', '0.03', '0.02', '0.02',
                           '--link-error', '0.2', '--sensing', 'noisy', '--com-correction',
                           'on', '--json', str(out_json), '--out', str(out_png),
                           '--timeout', '300'],
                          env=env, capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    with open(out_json) as f:
        res = json.load(f)
    out = proc.stdout[-2000:]
    assert res['falls'] == 0 and res['qp_solved_fraction'] >= 0.999, out
    assert res['com_rms_m'] <= 0.01, out
    # the offset is horizontal: the mean error left there (x, y) measured 6.5-6.6, 4.0-4.1 mm
    # (the estimate converges over the run) against 10.4, 7.0 mm without it; bound 9 mm, under
    # what no correction leaves
    assert max(abs(x) for x in res['com_error_mean_xyz_m'][:2]) <= 0.009, out
