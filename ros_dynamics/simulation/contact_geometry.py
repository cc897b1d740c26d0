"""Contact geometry for the rigid-contact simulator: spheres on links, planes, analytic distances.

Produces the :class:`~ros_dynamics.simulation.rigid_contact.Contact` node pairs of Jain et al. (2012),
Sec. 2: for each sphere-plane and sphere-sphere pair whose gap is below ``margin``, the nearest
points (the contact nodes, fixed in their links for the step), the normal from B to A and the
signed gap.
"""

from dataclasses import dataclass

import numpy as np

from ..core.api import link_placement
from ..core.data import Data
from .rigid_contact import Contact


@dataclass
class Sphere:
    """A sphere of ``radius`` centred at ``center`` in the frame of ``link``."""
    link: str
    center: tuple = (0.0, 0.0, 0.0)
    radius: float = 0.05
    name: str = ''


@dataclass
class Plane:
    """The half-space {x : n . (x - point) >= 0} (world frame): a floor, a wall, an incline."""
    point: tuple = (0.0, 0.0, 0.0)
    normal: tuple = (0.0, 0.0, 1.0)
    mu: float = 0.5
    restitution: float = 0.0
    name: str = ''


class SphereWorld:
    """Candidate contacts of ``spheres`` against ``planes`` and against each other.

    ``self_pairs``: 'all' (every pair of spheres on different links that are not parent and
    child), 'none', or an explicit list of index pairs.  ``mu``/``restitution`` of
    sphere-sphere contacts are ``sphere_mu`` / ``sphere_restitution``.
    """

    def __init__(self, model, spheres, planes=(), self_pairs='none', margin=0.01,
                 sphere_mu=0.5, sphere_restitution=0.0):
        self.model = model
        self._data = Data(model)
        self.spheres = list(spheres)
        self.planes = list(planes)
        for s in self.spheres:
            if s.link not in model.link_frames:
                raise ValueError(f'sphere on unknown link {s.link!r}')
            if not s.radius > 0:
                raise ValueError('sphere radius must be positive')
        for p in self.planes:
            n = np.asarray(p.normal, dtype=float)
            if not np.isfinite(n).all() or np.linalg.norm(n) == 0:
                raise ValueError('plane normal must be a finite non-zero vector')
        if self_pairs == 'all':
            self.pairs = [(i, j) for i in range(len(self.spheres)) for j in range(i + 1, len(self.spheres))
                          if not self._adjacent(self.spheres[i].link, self.spheres[j].link)]
        elif self_pairs == 'none':
            self.pairs = []
        else:
            self.pairs = [tuple(p) for p in self_pairs]
        self.margin = float(margin)
        self.sphere_mu, self.sphere_restitution = float(sphere_mu), float(sphere_restitution)

    def _adjacent(self, a, b):
        ba, bb = self.model.link_frames[a][0], self.model.link_frames[b][0]
        par = self.model.parent
        return ba == bb or (bb >= 0 and par[bb] == ba) or (ba >= 0 and par[ba] == bb)

    def poses(self, q):
        """World centres (k, 3) of the spheres and the link rotations/origins used."""
        out = np.empty((len(self.spheres), 3))
        # one O(N) kinematics pass; it leaves every body's placement in data.R, data.pos
        if self.model.nbodies:
            link_placement(self.model, q, self.model.body_names[0], data=self._data)
        Rb, pb = self._data.R, self._data.pos
        frames = {}
        for k, s in enumerate(self.spheres):
            if s.link not in frames:
                body, Rl, pl = self.model.link_frames[s.link]
                frames[s.link] = (Rl, pl) if body < 0 else (Rb[body] @ Rl, Rb[body] @ pl + pb[body])
            R, p = frames[s.link]
            out[k] = p + R @ np.asarray(s.center, dtype=float)
        return out, frames

    def __call__(self, q):
        centres, frames = self.poses(q)
        contacts = []

        def local(link, x):
            R, p = frames[link]
            return R.T @ (x - p)

        for k, s in enumerate(self.spheres):
            for pl in self.planes:
                n = np.asarray(pl.normal, dtype=float)
                n = n / np.linalg.norm(n)
                gap = float(n @ (centres[k] - np.asarray(pl.point, dtype=float))) - s.radius
                if gap < self.margin:
                    x = centres[k] - s.radius * n                    # nearest point of the sphere
                    contacts.append(Contact(s.link, local(s.link, x), None, x - gap * n, n, gap,
                                            pl.mu, pl.restitution, f'{s.name or s.link}|{pl.name}'))
        for i, j in self.pairs:
            a, b = self.spheres[i], self.spheres[j]
            d = centres[i] - centres[j]
            dist = float(np.linalg.norm(d))
            gap = dist - a.radius - b.radius
            if gap < self.margin and dist > 0:
                n = d / dist                                         # from B (j) towards A (i)
                xa, xb = centres[i] - a.radius * n, centres[j] + b.radius * n
                contacts.append(Contact(a.link, local(a.link, xa), b.link, local(b.link, xb), n, gap,
                                        self.sphere_mu, self.sphere_restitution,
                                        f'{a.name or a.link}|{b.name or b.link}'))
        return contacts
