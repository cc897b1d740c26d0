"""What the dynamics node draws of a contact for RViz: ``~/markers`` and ``~/external_wrench``.

An arrow per estimated contact, the contact link marked, deleted on release; with contact
frames an arrow per loaded frame; the contact wrench about the contact link's origin in its
axes, a zero wrench once on release (rviz_messages.py builds the messages).  Drawn at a
contact onset and release, and at most :data:`DRAW_PERIOD` apart in between, so a 1 kHz cycle
does not draw at 1 kHz.
"""
from __future__ import annotations

import time

import numpy as np

from ...core.api import link_placement
from .rviz_messages import ContactView, contact_markers, external_wrench, released_wrench

_EYE = np.eye(3)
DRAW_PERIOD = 1.0 / 30.0      # s: contacts drawn at most at 30 Hz (and at onset and release)


class ContactDrawing:
    """The contacts of one model's cycles as drawn (module text): :meth:`update` per cycle
    with a contact state; :meth:`markers` and :meth:`wrench` give the messages of the last
    drawing not published yet (None otherwise: a cycle that is not published, fresh when
    behind, leaves its drawing to the next one that is), :meth:`published` after them."""

    def __init__(self, model, frame_id):
        self.model, self.frame_id = model, frame_id
        self.views, self._stamp = None, None      # the last drawing (None: published)
        self._wrench_now = False      # it has a contact wrench
        self._next = 0.0              # monotonic time of the next drawing
        self._shown = 0               # markers shown (ids to delete on release)
        self._wrench_link = None      # link of the last published non-zero wrench
        self._scale = 0.01

    def update(self, res, stamp, force_scale):
        """Draw the contacts of a cycle (its result ``res``, ``stamp()`` its
        builtin_interfaces/Time) if due."""
        contact, feet = res.contact, res.forces
        if contact is None:
            return
        loaded = feet is not None and feet.in_contact.any()
        changed = feet is not None and (feet.onset.any() or feet.release.any())
        if contact.onset or contact.release or changed or (
                (contact.in_contact or loaded) and time.monotonic() >= self._next):
            self._next = time.monotonic() + DRAW_PERIOD
            self.views, self._stamp = self._draw(res, res.q), stamp()
            self._wrench_now, self._scale = res.wrench is not None, force_scale

    def published(self):
        """The last drawing was published (or had nobody to go to)."""
        self.views = None

    def _draw(self, res, q):
        model, views = self.model, []
        if res.contact.in_contact:
            if res.wrench is not None:
                R, p = link_placement(model, q, res.wrench_link)
                views.append(ContactView(res.wrench_link, res.wrench_point, R, p,
                                         res.wrench[:3], res.wrench[3:]))
            for link in res.contact.links:
                if not views or link != views[0].link:
                    R, p = link_placement(model, q, link)
                    views.append(ContactView(link, np.zeros(3), R, p))
        feet = res.forces
        if feet is not None:      # an arrow per loaded contact frame, at its origin
            views += [ContactView(name, np.zeros(3), _EYE, p, w[:3], w[3:]) for name, c, p, w in
                      zip(feet.frames, feet.in_contact, feet.positions, feet.wrenches) if c]
        return views

    def markers(self):
        """~/markers of this cycle's drawing, or None."""
        if self.views is None:
            return None
        msg = contact_markers(self.views, self._stamp, self.frame_id, previous=self._shown,
                              force_scale=self._scale)
        self._shown = len(self.views)
        return msg

    def wrench(self):
        """~/external_wrench of this cycle's drawing (a zero one once on release), or None."""
        views = self.views
        if views is None:
            return None
        if views and views[0].force is not None and self._wrench_now:
            self._wrench_link = views[0].link
            return external_wrench(views[0], self._stamp)
        if self._wrench_link is not None:
            link, self._wrench_link = self._wrench_link, None
            return released_wrench(link, self._stamp)
        return None
