"""How a MuJoCo legged plant differs from the URDF the estimator and the controller use: one
vocabulary for both plants (:mod:`.mujoco_quadruped`, :mod:`.mujoco_legged`) and the
``sim_mujoco`` node's parameters of the same names.

* ``hidden_load`` [kg] on the root link at ``load_offset`` (its frame [m]): a solid sphere of
  radius :data:`LOAD_RADIUS` (a body the URDF lacks);
* ``link_error``: every link's mass and principal inertias (the root's too, not the hidden
  load) scaled by 1 ± a uniform draw in [0.8, 1.2] × it (sign random, each its own draw) and
  its centre of mass moved by that fraction of max(|CoM offset|, 2 cm) in a random direction
  (0.25: the 20-30 % of a robot as shipped);
* ``joint_viscous`` [N m s/rad], ``joint_coulomb`` [N m] and ``rotor_inertia`` [kg m²] on
  every joint (MuJoCo's damping, frictionloss, armature);
* ``seed`` draws the link errors.

All zero by default: the plant then has the URDF's inertias, no friction, no rotor inertia.
"""
from dataclasses import dataclass

import numpy as np

__all__ = ['LOAD_RADIUS', 'PlantOptions', 'add_hidden_load', 'apply_model_error']

#: the hidden load's radius [m] (1 kg: about the density of a battery pack)
LOAD_RADIUS = 0.05


@dataclass
class PlantOptions:
    """The plant's departures from the URDF (module docstring)."""
    hidden_load: float = 0.0
    load_offset: tuple = (0.0, 0.0, 0.0)
    link_error: float = 0.0
    joint_viscous: float = 0.0
    joint_coulomb: float = 0.0
    rotor_inertia: float = 0.0
    seed: int = 0


def add_hidden_load(root, options):
    """The hidden load as a child body ``hidden_load`` of ``root`` (an MjSpec body), if any."""
    if options.hidden_load > 0:
        load = root.add_body()
        m = options.hidden_load
        load.name, load.pos, load.mass = 'hidden_load', list(options.load_offset), m
        # its centre of mass at its origin (given: add_body(pos=...) leaves the inertial frame's
        # position undefined)
        load.ipos, load.inertia = [0.0, 0.0, 0.0], [0.4 * m * LOAD_RADIUS ** 2] * 3
        load.explicitinertial = True


def apply_model_error(m, options, dofs):
    """The link errors and the joint terms of ``options`` on the compiled model ``m``
    (``dofs``: the joints' velocity addresses)."""
    o = options
    if o.link_error > 0:
        rng = np.random.default_rng(o.seed)
        load = m.body('hidden_load').id if o.hidden_load > 0 else -1
        for b in range(1, m.nbody):
            if b == load or m.body_mass[b] <= 0:
                continue

            def factor(size=None):
                e = o.link_error * rng.uniform(0.8, 1.2, size)
                return 1.0 + e * rng.choice((-1.0, 1.0), size)
            m.body_mass[b] *= factor()
            m.body_inertia[b] *= factor(3)
            u = rng.standard_normal(3)
            scale = max(np.linalg.norm(m.body_ipos[b]), 0.02)
            m.body_ipos[b] += o.link_error * rng.uniform(0.8, 1.2) * scale * u / np.linalg.norm(u)
    m.dof_damping[dofs] = o.joint_viscous
    m.dof_frictionloss[dofs] = o.joint_coulomb
    m.dof_armature[dofs] = o.rotor_inertia
