"""dynamics_node without a robot_description parameter: the model comes from the topic, is
rebuilt when a new description arrives, and a bad description keeps the old model."""
import itertools
import time

import numpy as np
import pytest

import ros_dynamics as rd
from ros_dynamics import testing as models

from test_node_support import (ARM7, QUADRUPED, TIMEOUT, assert_dynamics_msg, read,
                               running_node, set_model_params)

pytestmark = pytest.mark.ros


_stamps = itertools.count(3_000_000_000_000, 1_000_000)


@pytest.fixture(scope='module')
def desc(rclpy_context, ros_env, tmp_path_factory):
    tmp = str(tmp_path_factory.mktemp('desc'))
    with running_node(rclpy_context, ros_env, tmp, 'desc', {'log_throttle_sec': 0.0}) as (proc, probe):
        yield proc, probe


def string_msg(text):
    from std_msgs.msg import String
    return String(data=text)


def send_until_answered(probe, names, q, v, e):
    """Send joint states until one is answered by the model of ``names`` (the model swap
    happens asynchronously), by the deadline."""
    end = time.monotonic() + TIMEOUT
    while time.monotonic() < end:
        dyn = probe.send_until_answered(lambda: probe.joint_state(names, q, v, e, next(_stamps)),
                                        timeout=end - time.monotonic())
        if dyn is not None and list(dyn.names) == list(names):
            return dyn
    return None


def check_model(probe, model, seed):
    rng = np.random.default_rng(seed)
    n = model.nv
    q, v, e = rng.uniform(-1, 1, n), rng.uniform(-1, 1, n), rng.uniform(-1, 1, n)
    assert send_until_answered(probe, model.joint_names, q, v, e) is not None
    dyn = probe.send_and_wait(probe.joint_state(model.joint_names, q, v, e, next(_stamps)))
    assert dyn is not None
    assert_dynamics_msg(dyn, model, q, v)


def test_description_from_topic_and_changes(desc):
    proc, probe = desc
    arm = rd.load_urdf(ARM7)
    # no model yet: joint states are ignored
    probe.js_pub.publish(probe.joint_state(arm.joint_names, np.zeros(7), np.zeros(7), None,
                                           next(_stamps)))
    assert probe.spin_until(lambda: 'no robot model yet' in proc.log())
    assert probe.counts()['dynamics'] == 0

    probe.desc_pub.publish(string_msg(read(ARM7)))
    check_model(probe, arm, 1)

    # a broken description is logged and the arm model is kept
    probe.desc_pub.publish(string_msg('<robot name="broken"><link name="a"/><joint '))
    assert probe.spin_until(lambda: 'keeping the previous model' in proc.log())
    assert proc.alive()
    check_model(probe, arm, 2)

    # a new description is picked up
    chain_xml = models.chain(5, seed=3)
    probe.desc_pub.publish(string_msg(chain_xml))
    chain = rd.load_urdf(chain_xml)
    check_model(probe, chain, 3)
    # arm joint states are now an error (missing joints) and answered by nothing
    before = probe.counts()['dynamics']
    probe.js_pub.publish(probe.joint_state(arm.joint_names, np.zeros(7), np.zeros(7), None,
                                           next(_stamps)))
    probe.spin_for(0.3)
    assert probe.counts()['dynamics'] == before


def test_model_installed_without_joint_states(desc):
    """A model built while no joint state arrives is installed by the node's timer, which runs
    only while a build is pending: started again by every build (log, then its answers)."""
    proc, probe = desc

    def installs():
        return proc.log().count('model built and kernels ready')
    for k, n in enumerate((4, 3)):
        before = installs()
        probe.desc_pub.publish(string_msg(models.chain(n, seed=5 + k)))
        assert probe.spin_until(lambda: installs() > before)
    chain = rd.load_urdf(models.chain(3, seed=6))
    check_model(probe, chain, 6)


def test_description_parameter_overrides_topic(desc):
    proc, probe = desc
    res = probe.set_params(robot_description=read(QUADRUPED))
    assert res.successful, res.reason
    quad = rd.load_urdf(QUADRUPED)
    check_model(probe, quad, 4)
    # while the parameter is set, the topic is ignored
    probe.desc_pub.publish(string_msg(read(ARM7)))
    probe.spin_for(0.5)
    check_model(probe, quad, 5)
    # floating_base change rebuilds the model (then nothing is published without odom)
    res = set_model_params(proc, probe, floating_base=True)
    assert res.successful, res.reason
    before = probe.counts()['dynamics']
    probe.js_pub.publish(probe.joint_state(quad.joint_names, np.zeros(quad.nv),
                                           np.zeros(quad.nv), None, next(_stamps)))
    probe.spin_for(0.3)
    assert probe.counts()['dynamics'] == before
    assert set_model_params(proc, probe, floating_base=False).successful
    # clearing the parameter goes back to the latest description on the topic (the arm)
    assert probe.set_params(robot_description='').successful
    check_model(probe, rd.load_urdf(ARM7), 6)
