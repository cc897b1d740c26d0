"""The quadrupeds the legged evidence runs on, by parameters only: the URDF, the feet, the foot
that is lifted, the standing pose and the foot spheres' radius.

* ``quadruped``: the bundled robot (8.33 kg, urdf/quadruped.urdf);
* ``solo12``: Open Dynamic Robot Initiative's Solo12 (2.5 kg) as example-robot-data ships it
  (the cmeel wheel Pinocchio depends on, requirements-dev.txt); its hind legs mirrored (HFE
  −0.8, KFE 1.6 rad against the front legs' 0.8, −1.6).

Used by the MuJoCo closed loop (scripts/closed_loop_mujoco.py) and the contact-force runs
(:mod:`.contact_force_runs`).
"""
import glob
import os
import sys

__all__ = ['ROBOTS', 'example_robot_data', 'robot_urdf', 'stance_pose']

#: robots by parameters only: URDF, feet, lifted foot, standing pose, foot sphere radius
ROBOTS = {
    'quadruped': dict(urdf=('bundled', 'quadruped'),
                      feet=['LF_foot', 'RF_foot', 'LH_foot', 'RH_foot'], lift='LF_foot',
                      pose={f'{leg}_{j}': a for leg in ('LF', 'RF', 'LH', 'RH')
                            for j, a in (('HFE', 0.7), ('KFE', -1.4))}, foot_radius=0.02),
    'solo12': dict(urdf=('example-robot-data', 'solo_description/robots/solo12.urdf'),
                   feet=['FL_FOOT', 'FR_FOOT', 'HL_FOOT', 'HR_FOOT'], lift='FL_FOOT',
                   pose={**{f'{leg}_{j}': a for leg in ('FL', 'FR')
                            for j, a in (('HFE', 0.8), ('KFE', -1.6))},
                         **{f'{leg}_{j}': a for leg in ('HL', 'HR')
                            for j, a in (('HFE', -0.8), ('KFE', 1.6))}}, foot_radius=0.016,
                   # its actuators' torque (Grimminger et al. 2020; the URDF says 1000 N m):
                   # the real-time plant's saturation (trot.launch.py, closed_loop_trot.py)
                   actuator_torque=2.7),
}


def example_robot_data(relative):
    """Path of a URDF example-robot-data ships, e.g. 'solo_description/robots/solo12.urdf' (the
    one finder: the cmeel wheel Pinocchio depends on puts it under
    ``site-packages/cmeel.prefix/share``; other installs are searched below the prefix)."""
    roots = [sys.prefix] + [p for p in sys.path if p.endswith('site-packages')]
    patterns = ('lib/python*/site-packages/cmeel.prefix/share/example-robot-data/robots',
                'cmeel.prefix/share/example-robot-data/robots', 'share/example-robot-data/robots')
    for root in roots:
        for pattern in patterns:
            for d in glob.glob(os.path.join(root, pattern)):
                if os.path.exists(os.path.join(d, relative)):
                    return os.path.join(d, relative)
    for root in roots:
        for path in glob.glob(os.path.join(root, '**', 'example-robot-data', 'robots',
                                           relative), recursive=True):
            return path
    raise FileNotFoundError(f'example-robot-data\'s {relative} not found (pip install '
                            'example-robot-data: requirements-dev.txt)')


def robot_urdf(name):
    """(path, XML) of a robot of :data:`ROBOTS`."""
    kind, rel = ROBOTS[name]['urdf']
    if kind == 'bundled':
        from ..core import bundled_urdf
        path = bundled_urdf(rel)
    else:
        path = example_robot_data(rel)
    with open(path) as f:
        return path, f.read()


def stance_pose(name, joints, abduction=0.0):
    """The standing pose {joint: rad} of robot ``name`` for its ``joints``, every HAA abducted
    by ``abduction`` [rad] outward (+ on the left legs, − on the right ones: a leg whose name
    has an 'R')."""
    pose = dict(ROBOTS[name]['pose'])
    for j in joints:
        leg, kind = j.split('_')[0], j.split('_')[-1]
        if kind == 'HAA':
            pose[j] = -abduction if 'R' in leg else abduction
    return {j: float(pose.get(j, 0.0)) for j in joints}
