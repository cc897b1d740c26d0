"""An identified model drives the node, over DDS: a URDF whose inertials were replaced (what
`calibrate --links all --out-urdf` writes) and the `joint_armature` parameter (what it writes
to the parameter file) give the terms of the plant they describe, checked against MuJoCo's
mass matrix and bias forces of that plant."""
import mujoco
import numpy as np
import pytest

import ros_dynamics as rd
from ros_dynamics.identification.urdf_inertials import replace_inertials
from ros_dynamics.simulation.mujoco_plant import mjcf, perturbed_model
from test_node_support import ARM7, next_stamp, read, running_node

pytestmark = pytest.mark.ros


def test_identified_urdf_and_armature_drive_the_node(rclpy_context, ros_env, tmp_path):
    urdf = rd.load_urdf(ARM7)
    truth = perturbed_model(urdf, seed=6)
    armature = [0.3, 0.3, 0.1, 0.1, 0.03, 0.03, 0.01]
    xml = replace_inertials(read(ARM7), urdf, truth)
    m = mujoco.MjModel.from_xml_string(mjcf(truth, armature=armature))
    d = mujoco.MjData(m)
    params = {'robot_description': xml, 'joint_armature': armature}
    with running_node(rclpy_context, ros_env, str(tmp_path), 'ident', params) as (proc, probe):
        rng = np.random.default_rng(3)
        q, v = rng.uniform(-1, 1, (2, 7))
        # the first answer after the start: sent until one arrives (the node's writer may
        # match our reader a little after ours matched it)
        dyn = probe.send_until_answered(
            lambda: probe.joint_state(urdf.joint_names, q, v, None, next_stamp()))
        d.qpos[:], d.qvel[:] = q, v
        mujoco.mj_forward(m, d)
        H = np.zeros((7, 7))
        for j in range(7):
            e, col = np.zeros(7), np.zeros(7)
            e[j] = 1.0
            mujoco.mj_mulM(m, d, col, e)
            H[:, j] = col
        M = np.asarray(dyn.mass_matrix).reshape(7, 7)
        np.testing.assert_allclose(M, H, atol=1e-10)
        C = np.asarray(dyn.coriolis_matrix).reshape(7, 7)
        np.testing.assert_allclose(C @ v + np.asarray(dyn.gravity), d.qfrc_bias, atol=1e-10)
        res = probe.set_params(joint_armature=[0.1, 0.2])
        assert not res.successful and 'one per joint' in res.reason
