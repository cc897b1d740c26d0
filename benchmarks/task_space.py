"""Task space (task frames and centroidal momentum) per call: rd.task_space vs Pinocchio.

    python benchmarks/task_space.py            # writes out/benchmarks/task_space.md
    python benchmarks/task_space.py --quick    # fewer timing blocks

Robots: the bundled quadruped on a floating base with its four feet, and Talos (example-robot-
data, talos_reduced, floating base) with its two soles and two gripper bases.  Per robot it
first checks that both give the same numbers, then times, interleaved in one process, at the
Python-call level, CPU time of this thread (time.thread_time; the 2-core machine is shared):

* ours fresh:   rd.task_space(model, q, v, frames, data=data): one compiled call (validation,
                kinematics pass, the frames' poses, Jacobians and dJ/dt v, mass, CoM, CoM
                velocity, A_G and dA_G/dt v), frames resolved once (rd.task_frames)
* ours in cycle: what the task space adds to a control cycle that computes M, C, dM/dt, g
                anyway: rd.compute_all_terms + rd.task_space_after_terms, minus
                rd.compute_all_terms alone (both timed here)
* pinocchio:    the calls a Pinocchio user makes for the same quantities:
                forwardKinematics(q, v, 0), computeJointJacobians, updateFramePlacements, per
                frame getFrameJacobian(LOCAL_WORLD_ALIGNED) and
                getFrameClassicalAcceleration(LOCAL_WORLD_ALIGNED), then
                computeCentroidalMapTimeVariation(q, v) (A_G, dA_G/dt, CoM) and dA_G @ v; the
                CoM velocity is A_G's linear rows times v over the total mass (computed once)
* pin dccrba:   computeCentroidalMapTimeVariation(q, v) alone, one call (a kinematics pass and
                the centroidal terms in C++, no frames): for scale, how much of the sequence
                above is Python-call overhead
* message:      (when ros_dynamics_msgs with TaskSpace is importable) what the node adds per
                joint state to publish them: TaskSpaceStream.write, the terms into the
                preallocated serialized ~/task_space (ros_dynamics.ros.dynamics_node.task_space_output)

Ratios are formed from numbers measured in the same run.
"""

MEASURES = ('ros_dynamics/core', 'ros_dynamics/ros/dynamics_node/task_space_output.py')

import argparse
import sys
import time

import numpy as np

from common import add_out_dir, example_robot_data_urdf, interleaved, log, output, report, us

import ros_dynamics as rd  # noqa: E402  (common puts the checkout on sys.path)

ROBOTS = [  # (label, URDF thunk, frames)
    ('quadruped, 4 feet', lambda: rd.bundled_urdf('quadruped'),
     ['LF_foot', 'RF_foot', 'LH_foot', 'RH_foot']),
    ('Talos, 2 feet + 2 hands', lambda: example_robot_data_urdf(
        'talos_data/robots/talos_reduced.urdf'),
     ['left_sole_link', 'right_sole_link', 'gripper_left_base_link', 'gripper_right_base_link']),
]


class Case:
    """One robot on a floating base in both libraries, at one random state."""

    def __init__(self, label, path, frames, seed=0):
        import warnings
        import pinocchio as pin
        self.pin, self.label, self.frames = pin, label, frames
        with warnings.catch_warnings():
            warnings.simplefilter('ignore', rd.URDFWarning)
            self.model = m = rd.load_urdf(path, floating_base=True)
        self.pm = pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer())
        self.pd = self.pm.createData()
        self.iq = np.r_[0:7, [self.pm.idx_qs[self.pm.getJointId(n)] for n in m.joint_names]]
        self.iv = np.r_[0:6, [self.pm.idx_vs[self.pm.getJointId(n)] for n in m.joint_names]]
        rng = np.random.default_rng(seed)
        q = rng.uniform(-1.0, 1.0, m.nq)
        q[3:7] = rng.normal(size=4)
        q[3:7] /= np.linalg.norm(q[3:7])
        self.q, self.v = q, rng.uniform(-1.0, 1.0, m.nv)
        self.qp, self.vp = np.empty(m.nq), np.empty(m.nv)
        self.qp[self.iq], self.vp[self.iv] = q, self.v
        self.zero = np.zeros(m.nv)
        self.fids = [self.pm.getFrameId(f, pin.BODY) for f in frames]
        self.pmass = pin.computeTotalMass(self.pm)       # constant: computed once
        self.data = rd.Data(m)
        self.tframes = rd.task_frames(m, frames)
        self.stream = None
        try:
            from geometry_msgs.msg import Pose
            from rclpy.serialization import serialize_message
            from ros_dynamics_msgs.msg import TaskSpace
            from ros_dynamics.ros.dynamics_node.task_space_output import TaskSpaceOutput, TaskSpaceStream
        except ImportError:
            log('ros_dynamics_msgs with TaskSpace not importable: the message column is n/a')
        else:
            out = TaskSpaceOutput(m, rd.output_coordinates(m, 'joint'), frames)
            self.stream = TaskSpaceStream(out, TaskSpace(), serialize_message, Pose, 'world')

    # the timed calls
    def ours(self):
        return rd.task_space(self.model, self.q, self.v, self.tframes, data=self.data)

    def terms(self):
        rd.compute_all_terms(self.model, self.q, self.v, self.data)

    def terms_and_task_space(self):
        rd.compute_all_terms(self.model, self.q, self.v, self.data)
        return rd.task_space_after_terms(self.model, self.data, self.tframes)

    def pin_dccrba(self):
        self.pin.computeCentroidalMapTimeVariation(self.pm, self.pd, self.qp, self.vp)

    def message(self):
        self.stream.write(self.data.task_space)

    def pinocchio(self):
        pin, pm, pd, q, v = self.pin, self.pm, self.pd, self.qp, self.vp
        pin.forwardKinematics(pm, pd, q, v, self.zero)
        pin.computeJointJacobians(pm, pd)
        pin.updateFramePlacements(pm, pd)
        out = []
        for fid in self.fids:
            out.append((pd.oMf[fid], pin.getFrameJacobian(pm, pd, fid, pin.LOCAL_WORLD_ALIGNED),
                        pin.getFrameClassicalAcceleration(pm, pd, fid, pin.LOCAL_WORLD_ALIGNED)))
        dAg = pin.computeCentroidalMapTimeVariation(pm, pd, q, v)
        bias = dAg @ v
        vcom = pd.Ag[:3] @ v / self.pmass
        return out, pd.Ag, bias, pd.com[0], vcom

    def max_rel_diff(self):
        """Largest difference between the two, relative to max(1, the largest |value|)."""
        ts = self.terms_and_task_space()
        frames, Ag, bias, com, vcom = self.pinocchio()
        pairs = [(ts.centroidal_matrix, np.asarray(Ag)[:, self.iv]), (ts.centroidal_bias, bias),
                 (ts.com, com), (ts.com_velocity, vcom)]
        for k, (M, J, a) in enumerate(frames):
            pairs += [(ts.positions[k], M.translation), (ts.rotations[k], M.rotation),
                      (ts.jacobians[k], np.asarray(J)[:, self.iv]),
                      (ts.jacobian_dot_v[k], np.r_[a.linear, a.angular])]
        return max(float(np.abs(a - b).max() / max(1.0, np.abs(b).max())) for a, b in pairs)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--quick', action='store_true')
    add_out_dir(ap)
    args = ap.parse_args()
    rows = []
    for label, path, frames in ROBOTS:
        case = Case(label, path(), frames)
        log(f'{label}: compiling / loading the kernels ...')
        case.ours()
        case.terms_and_task_space()
        err = case.max_rel_diff()
        log(f'{label}: max rel. diff vs Pinocchio {err:.1e}; timing ...')
        funcs = {'ours': case.ours, 'terms': case.terms, 'terms+ts': case.terms_and_task_space,
                 'pin': case.pinocchio, 'dccrba': case.pin_dccrba}
        if case.stream is not None:
            funcs['message'] = case.message
        t = interleaved(funcs,
                        blocks=11 if args.quick else 41, block_s=0.02, clock=time.thread_time)
        rows.append((label, case.model.nv, err, t))
    lines = [
        '# Task space per call: rd.task_space vs Pinocchio', '',
        'Median per-call CPU time (thread_time) over interleaved blocks, Python-call level, same '
        'process. Quantities: per frame pose, LOCAL_WORLD_ALIGNED Jacobian, dJ/dt v (classical '
        'acceleration); mass, CoM, CoM velocity, A_G, dA_G/dt v. "in cycle" = (compute_all_terms '
        '+ task_space_after_terms) - compute_all_terms: what the task space adds to a cycle '
        'that computes M, C, dM/dt, g anyway. Pinocchio: the call sequence in the module text.', '',
        '| robot | nv | max rel. diff vs pin | ours fresh [us] | ours in cycle [us] | '
        'pinocchio [us] | ours fresh / pin | ours in cycle / pin | terms alone [us] | '
        'message [us] | pin dccrba alone [us] |',
        '|---|---|---|---|---|---|---|---|---|---|---|']
    for label, nv, err, t in rows:
        inc = t['terms+ts'] - t['terms']
        lines.append(f'| {label} | {nv} | {err:.1e} | {us(t["ours"])} | {us(inc)} | '
                     f'{us(t["pin"])} | {t["ours"] / t["pin"]:.2f} | {inc / t["pin"]:.2f} | '
                     f'{us(t["terms"])} | {us(t["message"]) if "message" in t else "n/a"} | '
                     f'{us(t["dccrba"])} |')
    report(output(args.out_dir, 'task_space.md'), '\n'.join(lines) + '\n')


if __name__ == '__main__':
    sys.exit(main())
