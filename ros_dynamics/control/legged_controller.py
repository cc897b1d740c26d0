"""The legged whole-body controller as ``wbc_controller`` runs it, without ROS (plain numpy and
proxsuite): from the first stream state it builds the gait (``stand_step``:
:class:`~ros_dynamics.control.stand_step.StandStepSchedule`; ``trot``:
:class:`~ros_dynamics.control.trot.TrotGait`) and the QP
(:class:`~ros_dynamics.control.wbc.TaskSpaceInverseDynamics`, its force bounds in units of the
robot's weight from the stream), then answers each state with joint torques.

What the robot is comes from the stream: its weight (the base force rows of g), its feet (task
frames) and their layout, its standing height.  A user names the feet and the gait.  The
torques are bounded by the URDF's effort limits and by :data:`EFFORT_CAP` times the weight
times the standing height (the CoM above the feet), where lower: a torque no joint of a robot
that size needs (the moment of its whole weight at a lever as long as its leg, twice), and one
a URDF's placeholder limits let through (example-robot-data's Solo12 says 1000 N m; its
actuators give about 2.7, Grimminger et al. 2020): a QP on a state gone wrong asked for 784 N m
there, and MuJoCo's plant blew up.  Trotting in MuJoCo (the plan of benchmarks/trot_mujoco.py,
a hidden 1 kg load, seed 1) the joints needed at most 0.32 of the cap (9.66 N m) for Solo12 and
0.50 (of 47.53 N m) for the quadruped.
:meth:`LeggedController.command` takes the state, the velocity command (``cmd_vel``, trot) and
the dynamics node's contact estimate (``in_contact`` per foot and the feet's forces, or None):
the trot ends swings and unloads lost feet by it
(:mod:`~ros_dynamics.control.touchdown`); the stand-step schedule corrects its CoM target by
the offset the feet's centre of pressure gives (:mod:`~ros_dynamics.control.com_offset`).
A cycle whose QP is not solved repeats the last solved torques.
"""
import numpy as np

from .prediction import predicted
from .stand_step import StandStepSchedule
from .trot import TrotGait
from .wbc import TaskSpaceInverseDynamics

__all__ = ['EFFORT_CAP', 'GAITS', 'LeggedController']

GAITS = ('stand_step', 'trot')
#: the torque bound per joint in units of the weight times the standing height (module text)
EFFORT_CAP = 2.0


class LeggedController:
    """``feet`` (task frames), ``effort_limit`` (|τ| per actuated joint, stream order; may be
    set after construction, before the first state),
    ``gait`` one of :data:`GAITS`; ``step_height`` [m] (0: the gait's own);
    ``normal_force_range``: each stance foot's normal force bounds in units of the weight;
    ``qp``: the other options of :class:`TaskSpaceInverseDynamics` (friction, gains);
    ``stand_step``: the :class:`StandStepSchedule` options (lift, amplitude, the phase
    durations); ``com_offset``: a :class:`~ros_dynamics.control.com_offset.CoMOffset`
    (stand_step, with measured forces) or None."""

    def __init__(self, feet, effort_limit, gait='stand_step', step_height=0.0,
                 normal_force_range=(0.0125, 2.5), qp=None, stand_step=None, com_offset=None):
        if gait not in GAITS:
            raise ValueError(f'unknown gait {gait!r}: one of {GAITS}')
        if len(feet) != 4:
            raise ValueError(f'four feet are needed, not {len(feet)}: {list(feet)}')
        self.feet, self.gait_name = list(feet), gait
        self.effort_limit, self.force_range = effort_limit, tuple(normal_force_range)
        self.qp_options = dict(qp or {})
        self.step_height, self.stand_step = float(step_height), dict(stand_step or {})
        self.offset = com_offset
        self.wbc = self.gait = self.t0 = self.tau = None
        self._forces_t = None
        self.counts = dict(solved=0, unsolved=0)

    def start(self, stamp_ns, state):
        """The gait from the first state (ValueError: feet not in the stream, not a
        quadruped's layout)."""
        missing = [f for f in self.feet if f not in state.frames]
        if missing:
            raise ValueError(f'feet {missing} are not among the stream\'s task frames '
                             f'{list(state.frames)}')
        weight = float(np.linalg.norm(state.g[:3]))          # the base force rows of g: m |g|
        P = state.positions[[list(state.frames).index(f) for f in self.feet]]
        height = float(state.com[2] - P[:, 2].mean())
        if height > 0:
            self.effort_limit = np.minimum(np.asarray(self.effort_limit, dtype=float),
                                           EFFORT_CAP * weight * height)
        self.wbc = TaskSpaceInverseDynamics(
            self.feet, self.effort_limit, normal_force=tuple(weight * x for x in self.force_range),
            **self.qp_options)
        if self.gait_name == 'trot':
            self.gait = TrotGait(self.feet, state, 0.0, step_height=self.step_height or None)
        else:
            options = dict(self.stand_step)
            if self.step_height:
                options['step_height'] = self.step_height
            self.gait = StandStepSchedule(self.feet, state.com, P, f_max=self.wbc.f_max,
                                          unload_from=weight / len(self.feet), **options)
        self.t0 = stamp_ns

    def reference(self, stamp_ns, state, command=(0.0, 0.0, 0.0), contact=None):
        """The gait's :class:`~ros_dynamics.control.wbc.WBCReference` at ``stamp_ns``
        (``contact``: {foot: in_contact} of the estimate, or None)."""
        if self.gait is None:
            self.start(stamp_ns, state)
        t = (stamp_ns - self.t0) * 1e-9
        if self.gait_name == 'trot':
            return self.gait(t, state, command, contact)
        return self.gait(t)

    def command(self, stamp_ns, state, command=(0.0, 0.0, 0.0), contact=None, forces=None,
                ahead=0.0):
        """(τ or None before a first solved QP, the reference, the QP's solution) for ``state``
        at ``stamp_ns``; ``forces``: (stamp ns, (4, 3) the feet's measured forces) or None;
        ``ahead`` [s]: the delay until the torques act, over which the state is carried
        forward (:func:`~ros_dynamics.control.prediction.predicted`) and the gait's time
        too."""
        if ahead > 0:
            state = predicted(state, ahead)
            stamp_ns += int(round(ahead * 1e9))
        ref = self.reference(stamp_ns, state, command, contact)
        target = ref
        if self.offset is not None and self.gait_name == 'stand_step':
            target = self._corrected(ref, state, forces)
        sol = self.wbc.solve(state, target)
        if sol.solved and np.all(np.isfinite(sol.tau)):
            self.counts['solved'] += 1
            self.tau = sol.tau
        else:
            self.counts['unsolved'] += 1
        return self.tau, ref, sol

    def _corrected(self, ref, state, forces):
        """``ref`` shifted by the CoM offset, updated first by newer measured forces."""
        if forces is not None and forces[0] != self._forces_t:
            t, f = forces
            dt = 0.0 if self._forces_t is None else (t - self._forces_t) * 1e-9
            self._forces_t = t
            P = state.positions[[list(state.frames).index(x) for x in self.feet]]
            self.offset.update(dt, P, f, state.com, ref.com_acceleration,
                               np.linalg.norm(state.g[:3]), ref.com_velocity)
        return self.offset.reference(ref)
