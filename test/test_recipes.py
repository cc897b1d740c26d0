"""The recipes of docs/architecture.md, followed: a rule and an output added in a copy of the
package, each in the three places the recipe names, and nothing else; then both take effect in
the copy's node.

The rule: a message of more names than 4 x the model's joints + 64 is refused, as a service
request is (``rules.py``: the rule and its answer; ``cycle_kernel.py``: its call;
docs/input_policy.md: its row).  The output: ``~/kinetic_energy`` (std_msgs/Float64, 1/2 v^T M v
of every cycle; ``output_table.py``: its row and its builder; docs/ros_interface.md: its line).
Checked in a process on the copy: the page's row is the answer (test_cycle_cases' reading of
the page), the copy's cycle refuses such a message as the row says, and its node publishes
~/kinetic_energy equal to Pinocchio's 1/2 v^T M v at each state and counts the refusal under
the new kind.  The copy keeps the compiled kernels' cache of the sources it did
not change (their files copied with their times), so only the kernels that call the edited
rules compile again.
"""
import os
import shutil
import subprocess
import sys

import pytest

pytestmark = pytest.mark.system

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

RULE = '''

# -- an example rule (docs/architecture.md, "How to add a rule") --
TOO_MANY_NAMES = ANSWERS.add('too_many_names', REFUSED, 'warning', "{n} names: at most 4 x the "
                             "model's joints + 64", 'joint_states rejected')


@njit(**_FLAGS)
def names_verdict(n, joints):
    """At most 4 x the model's joints + 64 names in a message (as in a service request)."""
    return TOO_MANY_NAMES if n > 4 * joints + 64 else PASS
'''
CALL = '''    code = _rules.names_verdict(fields[M_NAMES], model.nj)
    if code != PASS:
        return code
'''
ROW = ("| more than 4 x the model's joints + 64 names | `TOO_MANY_NAMES` | refused | "
       "too_many_names | warning | joint_states rejected: `<n>` names: at most 4 x the model's "
       "joints + 64 |\n")
BUILDER = '''def _kinetic_energy(messages, out, stamp):
    from std_msgs.msg import Float64
    o = out.result.out
    return Float64(data=float(0.5 * o.v @ o.d.M @ o.v))


'''
OUTPUT_ROW = ("    Output('kinetic_energy', 'std_msgs.msg.Float64', 'every cycle', "
              "_kinetic_energy),\n")
LINE = '| `~/kinetic_energy` | std_msgs/Float64 | every cycle: 1/2 vᵀ M v |\n'


def _insert(path, anchor, text, after=True):
    with open(path) as f:
        s = f.read()
    assert s.count(anchor) == 1, (path, anchor)
    s = s.replace(anchor, anchor + text if after else text + anchor)
    with open(path, 'w') as f:
        f.write(s)


def _add_row(path, marker, row):
    """``row`` as the line after the one holding ``marker`` (a table's row)."""
    with open(path) as f:
        lines = f.readlines()
    at, = [k for k, line in enumerate(lines) if marker in line]
    lines.insert(at + 1, row)
    with open(path, 'w') as f:
        f.writelines(lines)


def _copy(tmp):
    """The package (its compiled kernels' cache too, the files' times kept), its bundled
    robots and the two pages in ``tmp``."""
    shutil.copytree(os.path.join(ROOT, 'ros_dynamics'), tmp / 'ros_dynamics')
    shutil.copytree(os.path.join(ROOT, 'urdf'), tmp / 'urdf')       # (the bundled robots)
    (tmp / 'docs').mkdir()
    for page in ('input_policy.md', 'ros_interface.md'):
        shutil.copy2(os.path.join(ROOT, 'docs', page), tmp / 'docs' / page)
    return tmp


CHECK = r'''
import os, sys, time
import numpy as np
sys.path.insert(1, sys.argv[2])                  # the repository's test/ (after the copy)
import ros_dynamics as rd
assert rd.__file__.startswith(sys.argv[1]), rd.__file__
import test_cycle_cases as T
from _oracle import PinocchioOracle
from ros_dynamics.estimation import rules
# the page's row is the answer
T.POLICY = T._policy(sys.argv[1])
T.MODULES = (rules,) + T.MODULES[1:]
T.test_the_page_states_every_answer_as_the_code_does()
# the cycle refuses a message of too many names as the row says
arm = rd.load_urdf(T.ARM)
js = T.node_cycle(arm)
many = tuple(arm.joint_names) + tuple(f'extra_{k}' for k in range(100))
z = np.zeros(len(many))
T._check(js.step(many, z, z, z, 1, 0, 0), ('TOO_MANY_NAMES', {'n': float(len(many))}))
assert js.step(many[:60], z[:60], z[:60], z[:60], 1, 10**6, 0).verdict == 'cycle'
# the node: ~/kinetic_energy every cycle, the refusal counted under its kind
import rclpy
from rclpy.executors import SingleThreadedExecutor
from rclpy.parameter import Parameter
from rclpy.qos import QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64
from ros_dynamics.ros.dynamics_node.node import DynamicsNode
rclpy.init()
node = DynamicsNode(namespace='recipe', parameter_overrides=[
    Parameter('robot_description', value=open(T.ARM).read())])
peer = rclpy.create_node('recipe_peer', namespace='recipe')
qos = QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE)
pub = peer.create_publisher(JointState, 'joint_states', qos)
got = []
peer.create_subscription(Float64, 'dynamics/kinetic_energy', got.append, qos)
ex = SingleThreadedExecutor()
ex.add_node(node)
ex.add_node(peer)
def spin_until(predicate, timeout=120.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end and not predicate():
        ex.spin_once(timeout_sec=0.01)
    return predicate()
assert spin_until(lambda: pub.get_subscription_count() >= 1
                  and node.count_subscribers('/recipe/dynamics/kinetic_energy') >= 1)
oracle = PinocchioOracle(T.ARM, arm)
rng = np.random.default_rng(4)
for k in range(5):
    q, v = rng.uniform(-1, 1, 7), rng.uniform(-1, 1, 7)
    msg = JointState()
    msg.header.stamp.sec, msg.header.stamp.nanosec = 100, (k + 1) * 10**6
    msg.name, msg.position, msg.velocity = list(arm.joint_names), q, v
    pub.publish(msg)
    assert spin_until(lambda: len(got) > k), k        # (one answer each: sent in lock-step)
    want = 0.5 * v @ oracle.mass_matrix(q) @ v
    assert abs(got[k].data - want) <= 1e-12 * max(1.0, abs(want)), (got[k].data, want)
msg.name = list(many)
msg.position = msg.velocity = np.zeros(len(many))
msg.header.stamp.nanosec = 9 * 10**6
pub.publish(msg)
assert spin_until(lambda: node.refused.get('too_many_names') == 1), node.refused
ex.shutdown()
node.destroy_node()
peer.destroy_node()
rclpy.try_shutdown()
print('recipes followed', flush=True)
'''


def test_a_rule_and_an_output_added_as_the_recipes_say(tmp_path, ros_env):
    copy = _copy(tmp_path)
    pkg = copy / 'ros_dynamics'
    # the rule: three places
    with open(pkg / 'estimation' / 'rules.py', 'a') as f:
        f.write(RULE)
    after_layout = (' ' * 26 + 'inputs.allow_missing_velocity)\n    if code != PASS:\n'
                    '        return code\n')
    _insert(pkg / 'estimation' / 'cycle_kernel.py', after_layout, CALL)
    _add_row(copy / 'docs' / 'input_policy.md', '`FOLLOW_UP`', ROW)
    # the output: three places (the row and its builder in one file)
    _insert(pkg / 'ros' / 'dynamics_node' / 'output_table.py', '_DYNAMICS = (', BUILDER,
            after=False)
    _insert(pkg / 'ros' / 'dynamics_node' / 'output_table.py', '\n)\n\n\ndef row(name):',
            OUTPUT_ROW.rstrip('\n'), after=False)
    _add_row(copy / 'docs' / 'ros_interface.md', '| `~/contact_forces` |', LINE)
    env = dict(ros_env, PYTHONPATH=os.pathsep.join([str(copy), ros_env.get('PYTHONPATH', '')]))
    p = subprocess.run([sys.executable, '-c', CHECK, str(copy), os.path.join(ROOT, 'test')],
                       cwd=str(copy), env=env, capture_output=True, text=True, timeout=1800)
    assert p.returncode == 0 and 'recipes followed' in p.stdout, (p.stdout[-3000:],
                                                                 p.stderr[-6000:])
