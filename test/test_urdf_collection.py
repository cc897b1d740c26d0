"""Every URDF of example-robot-data that Pinocchio loads also loads here, with the same nv and
the same M(q) and g(q) at random configurations (joints mapped by name), fixed and floating base.

The files are listed from the installed package itself (no hard-coded names); Pinocchio (its
URDF parser is urdfdom) decides which ones count.  The summary line gives the count.
"""

import glob
import importlib.metadata
import os
import warnings

import numpy as np
import pytest

import ros_dynamics as rd

pytestmark = pytest.mark.core
import pinocchio as pin  # a test dependency: missing means failing, not skipping

TOLERANCE = 1e-9            # relative to max(1, max |reference|); the core agrees to ~1e-14


def collection_urdfs():
    """All .urdf files of the installed example-robot-data package."""
    try:
        # wheels that ship the Python module know their model directory
        from example_robot_data.path import EXAMPLE_ROBOT_DATA_MODEL_DIR as root
        return sorted(glob.glob(os.path.join(root, '**', '*.urdf'), recursive=True))
    except ImportError:
        pass
    dist = importlib.metadata.distribution('example-robot-data')   # missing: fails here
    return sorted(str(dist.locate_file(f)) for f in dist.files or () if str(f).endswith('.urdf'))


URDFS = collection_urdfs()


class PinocchioModel:
    """Pinocchio's model of a URDF and the map from our (q, v) layout to Pinocchio's, by joint
    name (Pinocchio orders branches differently and gives continuous joints two coordinates,
    cos and sin of the angle)."""

    def __init__(self, path, model):
        self.pm = (pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer()) if model.floating_base
                   else pin.buildModelFromUrdf(path))
        self.pd = self.pm.createData()
        first = 2 if model.floating_base else 1             # 'universe' (and 'root_joint')
        self.names = list(self.pm.names)[first:]
        self.model = model
        base = 6 if model.floating_base else 0
        self.v_index = np.array(list(range(base)) + [self.pm.idx_vs[self.pm.getJointId(n)]
                                                     for n in model.joint_names], dtype=int)
        self.q_slots = [(self.pm.idx_qs[self.pm.getJointId(n)], self.pm.nqs[self.pm.getJointId(n)])
                        for n in model.joint_names]

    def q(self, q):
        out = np.zeros(self.pm.nq)
        k = 0
        if self.model.floating_base:
            out[:7], k = q[:7], 7
        for (iq, nq), angle in zip(self.q_slots, q[k:]):
            if nq == 2:                                      # unbounded revolute: (cos, sin)
                out[iq:iq + 2] = np.cos(angle), np.sin(angle)
            else:
                out[iq] = angle
        return out

    def mass_matrix(self, q):
        M = pin.crba(self.pm, self.pd, self.q(q))
        M = np.triu(M) + np.triu(M, 1).T
        return M[np.ix_(self.v_index, self.v_index)]

    def gravity(self, q):
        return np.asarray(pin.computeGeneralizedGravity(self.pm, self.pd, self.q(q)))[self.v_index]


def random_configuration(model, rng):
    q = rng.uniform(-np.pi, np.pi, model.nq)
    if model.floating_base:
        q[:3] = rng.uniform(-1, 1, 3)
        q[3:7] = rng.normal(size=4)
        q[3:7] /= np.linalg.norm(q[3:7])
    return q


def relative(a, b):
    if a.size == 0:
        return 0.0
    return float(np.abs(a - b).max() / max(1.0, np.abs(b).max()))


def pinocchio_loads(path, floating_base):
    try:
        if floating_base:
            pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer())
        else:
            pin.buildModelFromUrdf(path)
        return True
    except Exception:                                        # urdfdom refuses the file
        return False


def test_every_pinocchio_loadable_urdf_loads_and_agrees(record_property):
    assert URDFS, 'example-robot-data is installed but lists no .urdf file'
    rng = np.random.default_rng(11)
    loadable, loaded, failures = 0, 0, []
    worst = {'M': (0.0, ''), 'g': (0.0, '')}
    for path in URDFS:
        short = path.split('robots' + os.sep, 1)[-1]
        for floating_base in (False, True):
            if not pinocchio_loads(path, floating_base):
                continue
            loadable += 1
            label = f'{short} ({"floating" if floating_base else "fixed"} base)'
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter('ignore', rd.URDFWarning)
                    model = rd.load_urdf(path, floating_base=floating_base)
            except ValueError as exc:
                failures.append(f'{label}: {exc}')
                continue
            ref = PinocchioModel(path, model)
            if model.nv != ref.pm.nv or sorted(model.joint_names) != sorted(ref.names):
                failures.append(f'{label}: nv {model.nv} vs Pinocchio {ref.pm.nv}')
                continue
            errors = {'M': 0.0, 'g': 0.0}
            for _ in range(3):
                q = random_configuration(model, rng)
                errors['M'] = max(errors['M'], relative(rd.mass_matrix(model, q), ref.mass_matrix(q)))
                errors['g'] = max(errors['g'], relative(rd.gravity(model, q), ref.gravity(q)))
            for key, err in errors.items():
                worst[key] = max(worst[key], (err, label))
            if max(errors.values()) > TOLERANCE:
                failures.append(f'{label}: M error {errors["M"]:.2e}, g error {errors["g"]:.2e}')
                continue
            loaded += 1
    record_property('loaded', loaded)
    record_property('pinocchio_loadable', loadable)
    print(f'\nexample-robot-data: {loaded} / {loadable} Pinocchio-loadable (URDF, base) pairs load '
          f'and agree ({len(URDFS)} URDF files); worst M error {worst["M"][0]:.1e} ({worst["M"][1]}), '
          f'worst g error {worst["g"][0]:.1e} ({worst["g"][1]})')
    assert loadable > 0
    assert not failures, '\n'.join(failures)
