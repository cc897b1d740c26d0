"""When a foot is on the ground (plain Python, no ROS): the gait's plan, corrected by a contact
estimate when there is one (the dynamics node's per-foot ``in_contact``).

Per foot, one of four modes:

* ``stance``: on the ground, loaded by the QP (its acceleration zero, its force in the cone);
* ``swing``: in the air along the swing reference, from lift-off until touch-down;
* ``probe``: the swing's time is over and the estimate has not seen the foot land.  The foot
  joins the stance set with its normal force held at ``probe`` N: on the ground this small,
  known load makes the landing visible to a force-based estimate; in the air (lower ground
  than expected) the same force moves the foot down until it meets the ground.  It ends when
  the estimate reports the foot on the ground, or after ``reach_time`` s (then the foot is
  taken as on the ground: the gait cannot wait for ever);
* ``lost``: a stance foot the estimate has reported off the ground for ``debounce`` s (not in
  its first ``settle`` s of stance): it is probed the same way, loaded only by the probe's
  force, until the estimate sees it on the ground again.

Without an estimate (``contact`` None) a swing ends at its planned time, as a schedule alone
would have it, and the foot is loaded at once.  With one, a swing ends when the estimate
reports the foot on the ground: from ``arm`` of the swing on (an early touch-down, on higher
ground, is stance at once) and only once it has reported the foot off the ground since
lift-off (an estimate that is still late on the lift-off is not taken for a touch-down).  The
height at which a foot landed is kept: the ground under it for its next swing and for the
trunk's height.
"""

__all__ = ['FootState', 'MODES', 'TOUCHDOWNS']

MODES = ('stance', 'swing', 'probe', 'lost')
#: how a foot came to stance: at the planned time without an estimate; seen by the estimate
#: before the planned time, at it, while probing; taken as landed after ``reach_time`` s of
#: probing; a lost foot seen again
TOUCHDOWNS = ('planned', 'early', 'on_time', 'late', 'given_up', 'regained')


class FootState:
    """The mode of one foot and what its swing needs (module docstring)."""

    def __init__(self, position, t=0.0):
        self.mode = 'stance'
        self.ground = float(position[2])        # the height where it last landed
        self.t_lift = self.t_change = t
        self.p_lift = None                      # where the swing started
        self.p_target = None                    # the swing's horizontal foothold
        self.seen_off = False                   # the estimate saw it off since lift-off
        self.off_since = None                   # stance: the estimate has reported it off since
        self.touchdowns = dict.fromkeys(TOUCHDOWNS, 0)
        self.lost = 0

    def lift(self, t, position):
        self.mode, self.t_lift, self.t_change = 'swing', t, t
        self.p_lift = position.copy()
        self.p_target = self.p_lift[:2].copy()
        self.seen_off, self.off_since = False, None

    def land(self, t, position, kind):
        self.mode, self.t_change, self.off_since = 'stance', t, None
        self.ground = float(position[2])
        self.touchdowns[kind] += 1

    def update(self, t, s, position, contact, settings):
        """Advance the mode at ``t``: ``s`` the swing's phase (t − t_lift) / T_sw, ``position``
        the foot's measured position, ``contact`` the estimate's (True / False / None),
        ``settings`` the gait's (arm, reach_time, debounce, settle)."""
        if self.mode == 'swing':
            self.seen_off |= contact is False
            if contact is None:
                if s >= 1.0:
                    self.land(t, position, 'planned')
            elif contact and (self.seen_off or s >= 1.0) and s >= settings.arm:
                # (an estimate that never saw the lift-off and sees the foot down at the
                # planned time: on time)
                self.land(t, position, 'early' if s < 1.0 else 'on_time')
            elif s >= 1.0:
                self.mode, self.t_change = 'probe', t
        elif self.mode in ('probe', 'lost'):
            if contact:
                self.land(t, position, 'late' if self.mode == 'probe' else 'regained')
            elif contact is None or t - self.t_change >= settings.reach_time:
                self.land(t, position, 'given_up')
        elif self.mode == 'stance':
            self._watch(t, contact, settings)

    def _watch(self, t, contact, settings):
        """A stance foot the estimate reports off the ground for ``debounce`` s (after
        ``settle`` s of stance) is lost."""
        if contact is not False or t - self.t_change < settings.settle:
            self.off_since = None
            return
        if self.off_since is None:
            self.off_since = t
        if t - self.off_since >= settings.debounce:
            self.mode, self.t_change, self.off_since = 'lost', t, None
            self.lost += 1
