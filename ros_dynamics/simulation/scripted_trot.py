"""A trot scripted in joint space on MuJoCo's own state: a controller that is not the project's,
to judge the node's contact state on a walking robot without the project's whole-body
controller.

The diagonal pairs (left front with right hind, right front with left hind) alternate every
half ``period``.  A swing leg flexes its knee by ``lift`` × a profile of the half period and its
hip by half that the other way, so that on a leg of equal thigh and shank the foot rises and
falls straight below the hip (two-link geometry: the foot's horizontal offset is
``L (sin h + sin(h + k))``, unchanged when ``h`` grows by δ/2 as ``h + k`` shrinks by δ/2);
``stride`` [rad of hip flexion] sweeps the swing feet forward and the stance feet back (0: in
place).  Profiles of the swing over its half period ``s`` ∈ [0, 1]: ``'sine'``, sin(π s) (the
foot leaves and meets the ground at speed, as the open-loop trot of the rigid simulator), and
``'smooth'``, ½(1 − cos 2π s) (it leaves and lands at rest).  The amplitude is ramped in over
``ramp`` s after ``start`` s of standing.

:class:`ScriptedTrot` turns the targets into joint torques with a PD on MuJoCo's joint state
plus MuJoCo's own bias forces (gravity and Coriolis of the plant, ``qfrc_bias``): nothing of the
project's models or controllers takes part.  :meth:`ScriptedTrot.swinging` is the schedule
(which feet the script lifts), for the evidence only: the estimate never sees it.
"""
import numpy as np

__all__ = ['JointTrot', 'ScriptedTrot', 'PROFILES', 'diagonal_pairs']

PROFILES = {'sine': lambda s: np.sin(np.pi * s),
            'smooth': lambda s: 0.5 - 0.5 * np.cos(2.0 * np.pi * s)}


def _leg(joint):
    """(leg name, joint kind) of a joint named '<leg>_<kind>' ('FL_KFE', 'LF_HFE')."""
    parts = joint.split('_')
    return parts[0], parts[-1]


def diagonal_pairs(legs):
    """For each leg name ('FL', 'LF', 'HR', 'RH', ...) 0 when it is the left front or the right
    hind (the first diagonal pair), 1 otherwise."""
    out = []
    for leg in legs:
        left, front = 'L' in leg, 'F' in leg
        out.append(0 if left == front else 1)
    return out


class JointTrot:
    """The joint targets of the trot (module docstring) for the joints ``names`` around the
    standing joint angles ``pose`` (array in that order)."""

    def __init__(self, names, pose, period=0.4, lift=0.4, stride=0.0, start=0.5, ramp=1.0,
                 profile='sine'):
        if profile not in PROFILES:
            raise ValueError(f'profile must be one of {sorted(PROFILES)}, got {profile!r}')
        self.q0 = np.asarray(pose, dtype=float).copy()
        self.period, self.lift, self.stride = float(period), float(lift), float(stride)
        self.start, self.ramp = float(start), float(ramp)
        self.profile = PROFILES[profile]
        legs = [_leg(n) for n in names]
        self.legs = sorted({leg for leg, _ in legs}, key=[leg for leg, _ in legs].index)
        self._pair = np.array(diagonal_pairs([leg for leg, _ in legs]))
        self._kind = [kind for _, kind in legs]
        knee = {leg: np.sign(self.q0[i]) for i, (leg, kind) in enumerate(legs) if kind == 'KFE'}
        self._knee = np.array([knee.get(leg, 1.0) for leg, _ in legs])
        self._leg_pair = np.array(diagonal_pairs(self.legs))

    def phase(self, t):
        """(ramp share, the swinging pair 0/1, s in [0, 1) within the half period) at t."""
        ramp = min(1.0, max(0.0, (t - self.start) / self.ramp))
        phase = ((t - self.start) % self.period) / self.period
        return ramp, int(phase >= 0.5), (phase % 0.5) * 2.0

    def swinging(self, t):
        """Per leg (:attr:`legs` order) whether the script lifts it at t (the schedule)."""
        if t < self.start:
            return np.zeros(len(self.legs), dtype=bool)
        _, pair, _ = self.phase(t)
        return self._leg_pair == pair

    def targets(self, t):
        """The joint angles at t."""
        q = self.q0.copy()
        if t < self.start:
            return q
        ramp, pair, s = self.phase(t)
        up = ramp * self.lift * self.profile(s)
        sweep = ramp * self.stride * np.cos(np.pi * s)
        for i, kind in enumerate(self._kind):
            swing = self._pair[i] == pair
            if kind == 'KFE' and swing:
                q[i] += self._knee[i] * up
            elif kind == 'HFE':
                q[i] += (sweep - 0.5 * self._knee[i] * up) if swing else -sweep
        return q

    def __call__(self, t, h=1e-4):
        """(joint angles, joint rates) at t (the rates by central differences)."""
        return self.targets(t), (self.targets(t + h) - self.targets(t - h)) / (2.0 * h)


class ScriptedTrot:
    """The trot's joint torques on a :class:`~.mujoco_legged.MujocoLegged` plant, from
    MuJoCo's own state: ``τ = kp (q_d − q) + kd (v_d − v) + b(q, v)``, ``b`` MuJoCo's bias
    forces (``qfrc_bias``) on the joints; ``gains`` (kp, kd) per kg of the robot's mass.

    Foot placement (Raibert 1986): a swing foot lands ``placement`` [s] × the trunk's
    horizontal velocity (MuJoCo's, in the trunk's heading frame) away from its nominal spot,
    by its hip angles (HAA for sideways, HFE for forward: a displacement over the leg's
    standing height), blended in over the swing with ½(1 − cos π s) and held through the
    stance that follows: a pushed trunk is caught instead of carried off."""

    def __init__(self, plant, trot, gains=(8.0, 0.12), placement=0.3):
        m = plant.m
        self.plant, self.trot, self.placement = plant, trot, float(placement)
        self._qadr = np.array([m.joint(n).qposadr[0] for n in plant.joints])
        self._vadr = np.array([m.joint(n).dofadr[0] for n in plant.joints])
        self.kp, self.kd = (g * plant.mass for g in gains)
        legs = [_leg(n) for n in plant.joints]
        self._leg = np.array([trot.legs.index(leg) for leg, _ in legs])
        self._haa = np.array([kind == 'HAA' for _, kind in legs])
        self._hfe = np.array([kind == 'HFE' for _, kind in legs])
        self._height = float(plant.d.qpos[2])            # the standing trunk height [m]
        self._held = np.zeros(len(legs))                 # the placement of the last swing
        self._start = np.zeros(len(legs))                # ... and of the one before
        self._swinging = np.zeros(len(legs), dtype=bool)

    def _offsets(self, t, vx, vy):
        """The hip-angle offsets of the placement at t for the trunk's horizontal velocity
        (vx, vy) in its heading frame (class docstring)."""
        target = self.placement * (vy * self._haa - vx * self._hfe) / self._height
        swinging = self.trot.swinging(t)[self._leg]
        self._start[swinging & ~self._swinging] = self._held[swinging & ~self._swinging]
        self._swinging = swinging
        _, _, phase = self.trot.phase(t)
        blend = 0.5 - 0.5 * np.cos(np.pi * phase)
        self._held[swinging] = (self._start + blend * (target - self._start))[swinging]
        return self._held

    def torques(self, t, q, v, bias=0.0, velocity=(0.0, 0.0)):
        """The joint torques at t for the joint angles ``q`` and rates ``v`` (plant joint
        order), plus ``bias``; ``velocity``: the trunk's horizontal velocity in its heading
        frame (the placement's)."""
        qd, vd = self.trot(t)
        qd = qd + self._offsets(t, *velocity)
        return self.kp * (qd - q) + self.kd * (vd - v) + bias

    def __call__(self):
        """The joint torques for the plant's state now (plant joint order), MuJoCo's bias
        forces and the trunk's velocity included."""
        d = self.plant.d
        w, x, y, z = d.qpos[3:7]
        yaw = np.arctan2(2.0 * (w * z + x * y), 1.0 - 2.0 * (y * y + z * z))
        c, s = np.cos(yaw), np.sin(yaw)
        velocity = (c * d.qvel[0] + s * d.qvel[1], -s * d.qvel[0] + c * d.qvel[1])
        return self.torques(self.plant.t, d.qpos[self._qadr], d.qvel[self._vadr],
                            d.qfrc_bias[self._vadr], velocity)
