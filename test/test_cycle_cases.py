"""The node's one cycle (JointStateCycle: the compiled step, then what follows it) on streams that
carry every case the input policy names, each outcome checked against what docs/input_policy.md
says, each cycle's numbers against Pinocchio.

The table "Verdicts and reasons" of docs/input_policy.md is read here: every answer of the code
is a row of it with the same verdict, kind and log level and the same text (the code's
placeholders are the page's ``<name>``), and every outcome of the streams is compared with its
row in full: the verdict, the kind, the level and the whole text, each ``<name>`` in it read
back and compared with the value the case itself gives (the joint pushed beyond its bound, the
URDF's limit read here from the XML, the stamps sent, the gap).

The streams are physical (the torques are the model's inverse dynamics of the motion, plus
noise) and carry: a NaN, a velocity, a position and an effort beyond their bounds, a stamp going
back, the same stamp again, a stamp ahead of the clock, a non-normalized stamp, a zero stamp,
another name order, a joint named twice, a partial source, a message without efforts, too few
positions, velocities, efforts, no velocities, a contact, a gap (bridged), a source reset, a
clock reset and a reset request; on a floating base no odometry, old odometry and a
non-unit quaternion; split sources; a commanded torque missing and stale.  Per cycle: M, C,
dM/dt, g written where they belong in the output buffer (and q, v, the stamps) equal
Pinocchio's at the state, the residual equals the observer's equation (De Luca et al. 2006: one
exact zero-order-hold step per sample) evaluated here with numpy on Pinocchio's p = M v, C^T v
and g, restarted and bridged where the policy says, and the contact isolated on the joint that
feels it.
"""
import os
import re
import xml.etree.ElementTree as ET

import numpy as np
import pytest

import ros_dynamics as rd
from ros_dynamics import testing
from ros_dynamics.estimation import cycle_state, joint_input, rules
from ros_dynamics.estimation.answers import ANSWERS
from ros_dynamics.estimation.cycle import JointStateCycle, node_cycle, replay
from ros_dynamics.estimation.cycle_data import OutputLayout
from ros_dynamics.estimation.cycle_kernel import (SLOT_C, SLOT_G, SLOT_GRAVITY, SLOT_M, SLOT_MDOT,
                                                 SLOT_Q, SLOT_RESIDUAL, SLOT_V)
from ros_dynamics.estimation.cycle_state import ObserverSettings
from _oracle import PinocchioOracle, rel_err

pytestmark = pytest.mark.core
NS = 10**9
MS = 10**6
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# -- the page ------------------------------------------------------------------------------------
def _policy(root=ROOT):
    """{answer name: (verdict, kind, level, text)} of docs/input_policy.md's table ('' for
    '—'; the text with ``<name>`` placeholders, no backticks)."""
    text = open(os.path.join(root, 'docs', 'input_policy.md')).read()
    table = text.split('## Verdicts and reasons', 1)[1].split('\n## ', 1)[0]
    rows = {}
    for line in table.splitlines():
        cells = [c.strip() for c in line.strip().strip('|').split('|')]
        if len(cells) != 6 or not cells[1].startswith('`'):
            continue
        name = cells[1].strip('`')
        verdict, kind, level, says = (c.replace('`', '') for c in cells[2:])
        rows[name] = (verdict, kind, '' if level == '—' else level,
                      '' if says == '—' else says)
    return rows


POLICY = _policy()
MODULES = (rules, joint_input, cycle_state)


def _code(name):
    return next(getattr(m, name) for m in MODULES if hasattr(m, name))


def test_the_page_states_every_answer_as_the_code_does():
    """Each answer of the code is a row of the page, with its verdict, kind, level and text
    (the code's ``{name...}`` are the page's ``<name>``), and each row is an answer."""
    codes = {_code(name): name for name in POLICY}
    assert sorted(codes) == sorted(a.code for a in ANSWERS), (
        'answers without a row: ' + str([a.kind for a in ANSWERS if a.code not in codes]))
    for code, name in codes.items():
        a = ANSWERS[code]
        line = f'{a.about}: {a.text}' if a.about else a.text
        said = re.sub(r'\{(\w+)[^}]*\}', r'<\1>', line) if a.text else ''
        assert POLICY[name] == (a.verdict, a.kind, a.level, said), name


def _says(name, text, values):
    """``text`` is the page's row ``name`` in full: its literal words, each ``<x>`` the value
    ``values[x]``: a string exactly, a number as printed (to half a unit of its last printed
    digit), None: any."""
    def placeholder(m):
        want = values.get(m.group(1))
        return re.escape(want) if isinstance(want, str) else f'(?P<{m.group(1)}>.*?)'
    pattern = re.sub(r'<(\w+)>', placeholder, re.escape(POLICY[name][3]))
    m = re.fullmatch(pattern, text)
    assert m is not None, (name, text, POLICY[name][3])
    for key, got in m.groupdict().items():
        if values.get(key) is not None:
            assert abs(float(got) - values[key]) <= _last_digit(got), (name, key, got,
                                                                        values[key])


def _last_digit(printed):
    """Half a unit of the last digit of a printed number (and its float's rounding)."""
    mantissa, _, exponent = printed.lower().partition('e')
    decimals = len(mantissa.split('.')[1]) if '.' in mantissa else 0
    return 0.5 * 10.0 ** (int(exponent or 0) - decimals) + 1e-12 * abs(float(printed))


def _check(out, expected):
    """The outcome against the page: ``expected`` = (answer name, values) or None (a cycle
    with no note).  Its verdict, kind, level and text; the note's for a note."""
    if expected is None:
        assert out.verdict == 'cycle' and not out.notes, (out.verdict, out.refusal, out.notes)
        return
    name, values = expected
    verdict, kind, level, _ = POLICY[name]
    if verdict == 'refused':
        assert out.verdict == 'refused' and out.refusal[0] == kind, (name, out.refusal)
        assert out.refusal[2] == level, (name, out.refusal)
        _says(name, out.refusal[1], values)
        return
    if verdict in ('cycle', 'held'):
        assert out.verdict == verdict and out.answer == _code(name), (name, out.verdict,
                                                                      out.answer)
    if level:
        notes = [n for n in out.notes if n[0] == kind]
        assert len(notes) == 1 and notes[0][2] == level, (name, out.notes)
        _says(name, notes[0][1], values)


# -- the streams ---------------------------------------------------------------------------------
def _urdf_limit(path, joint, key):
    """A joint's URDF limit, read from the XML here."""
    for j in ET.parse(path).getroot().iter('joint'):
        if j.get('name') == joint:
            return float(j.find('limit').get(key))
    raise KeyError(joint)


def _stream(model, rng, n_msgs=700, path=None):
    """(messages (names, pos, vel, eff, sec, nanosec, now_ns) at 1 kHz with every case, what
    the page says of each: None for a cycle without a note, else (answer, values))."""
    names = tuple(model.joint_names)
    n = len(names)
    nb = model.nv - n
    w, t_ns, msgs, expect = 2.0, 100 * NS, [], []
    sent = []                         # the stamps accepted so far (the source's last)
    for k in range(n_msgs):
        t_ns += 30 * MS if k == 200 else MS                      # a 30 ms gap
        if k == 260:
            t_ns -= 2 * NS                                      # source reset (stamps back 2 s)
        ph = w * t_ns / NS + np.arange(n)
        pos, vel, acc = 0.4 * np.sin(ph), 0.4 * w * np.cos(ph), -0.4 * w * w * np.sin(ph)
        qf = np.concatenate([[0.1, 0.0, 0.5, 0.0, 0.0, 0.0, 1.0], pos]) if nb else pos
        vf = np.concatenate([np.zeros(6), vel]) if nb else vel
        af = np.concatenate([np.zeros(6), acc]) if nb else acc
        eff = rd.inverse_dynamics(model, qf, vf, af)[nb:] + rng.normal(0, 0.2, n)
        if 120 <= k < 150:
            eff[2] -= 25.0                                      # a contact: tau_ext = +25 N m
        sec, nanosec, now = t_ns // NS, t_ns % NS, t_ns + 2 * 10**5
        m_names, m_pos, m_vel, m_eff = names, pos, vel, eff
        exp, accepted = None, True
        last = sent[-1] if sent else None
        if k == 50:
            m_pos = pos.copy(); m_pos[1] = np.nan
            exp = ('BOUNDS_NONFINITE', {})
        elif k == 60:
            m_vel = vel.copy(); m_vel[0] = 1e3
            exp = ('BOUNDS_VELOCITY', {'value': 1e3, 'joint': repr(names[0]), 'bound': 2.0 * (
                _urdf_limit(path, names[0], 'velocity') if path else 100.0)})
        elif k == 65:
            m_pos = pos.copy(); m_pos[3] = 2e6                  # beyond max_abs_position 1e6
            exp = ('BOUNDS_POSITION', {'value': 2e6, 'joint': repr(names[3]), 'bound': 1e6})
        elif k == 68:
            m_eff = eff.copy(); m_eff[5] = -1e5
            exp = ('BOUNDS_EFFORT', {'value': -1e5, 'joint': repr(names[5]), 'bound': 2.0 * (
                _urdf_limit(path, names[5], 'effort') if path else 1e4)})
        elif k == 70:
            s = t_ns - 15 * 10**5                               # before the last stamp
            sec, nanosec = divmod(s, NS)
            exp = ('STAMP_BACKWARDS', {'sec': float(sec), 'nanosec': float(nanosec),
                                       'last': last / NS})
        elif k == 100:
            now = t_ns - 3 * NS                                 # 3 s ahead of the clock
            exp = ('STAMP_FUTURE', {'sec': float(sec), 'nanosec': float(nanosec), 'lead': 3.0,
                                    'max_lead': 1.0})
        elif k == 200:
            exp = ('BRIDGED', {'dt': (t_ns - last) / NS, 'gap_limit': 0.005})
        elif k == 260:
            exp = ('SOURCE_RESET', {'back': (last - t_ns) / NS, 'reset_jump': 1.0})
        elif k == 300:                                          # a partial source
            m_names, m_pos, m_vel, m_eff = names[:2], pos[:2], vel[:2], eff[:2]
            exp = ('HELD_FIRST', {'count': 2.0, 'joints': float(n), 'driving': float(n),
                                  'missing': str(list(names[2:]))})
        elif k == 320:
            m_eff = np.zeros(0)                                 # no efforts
            exp = ('NO_EFFORT', {})
        elif k == 330:
            m_vel = vel[:-1]                                    # a velocity short
            exp = ('LAYOUT_VELOCITIES', {'n_velocity': float(n - 1), 'n': float(n)})
        elif k == 335:
            m_pos = pos[:-2]
            exp = ('LAYOUT_POSITIONS', {'n_position': float(n - 2), 'n': float(n)})
        elif k == 338:
            m_vel = np.zeros(0)
            exp = ('LAYOUT_NO_VELOCITY', {'n': float(n)})
        elif k == 341:
            m_eff = eff[:3]
            exp = ('LAYOUT_EFFORTS', {'n_effort': 3.0, 'n': float(n)})
        elif k == 345:
            m_names = names + (names[4],)                       # a joint named twice
            m_pos, m_vel, m_eff = (np.r_[x, x[4]] for x in (pos, vel, eff))
            exp = ('DUPLICATE', {'joints': str([names[4]])})
        elif k == 350:
            sec, nanosec = 0, 0                                 # a zero stamp
            exp = ('STAMP_ZERO', {})
        elif k == 360:
            nanosec += NS                                       # not normalized
            exp = ('STAMP_NANOSEC', {'nanosec': float(nanosec)})
        if exp is not None and POLICY[exp[0]][0] == 'refused':
            accepted = False
        if 90 <= k < 96:                                        # another name order
            order = np.arange(n)[::-1]
            m_names = tuple(names[i] for i in order)
            m_pos, m_vel, m_eff = pos[order], vel[order], eff[order]
        msgs.append((m_names, m_pos, m_vel, m_eff, int(sec), int(nanosec), int(now)))
        expect.append(exp)
        if accepted:
            sent.append(int(sec) * NS + int(nanosec))
        if k == 80:
            msgs.append(msgs[-1])                               # the same stamp again
            expect.append(None)
    return msgs, expect


class Outputs:
    """An output buffer laid out as the node's serialized messages are: words between the
    arrays, a stamp word before each group (cycle_data.OutputLayout)."""

    def __init__(self, nq, nv):
        m2 = nv * nv
        sizes = [nq, nv, m2, m2, m2, nv, nv, nv]    # SLOTS: q, v, M, C, dM/dt, g, gravity, r
        order = [SLOT_Q, SLOT_V, SLOT_M, SLOT_C, SLOT_MDOT, SLOT_G, SLOT_GRAVITY, SLOT_RESIDUAL]
        slots, at, self.stamps = np.zeros(8, dtype=np.int64), 1, []
        for k, slot in enumerate(order):
            if slot in (SLOT_Q, SLOT_GRAVITY, SLOT_RESIDUAL):  # a message's header first
                self.stamps.append(at)
                at += 2
            slots[slot] = at
            at += sizes[slot] + 1
        self.buffer = np.full(at, 7.0)
        self.layout = OutputLayout(slots, np.array(self.stamps, dtype=np.int64))
        self.nq, self.nv = nq, nv

    def slot(self, k, shape):
        size = int(np.prod(shape))
        return self.buffer[self.layout.slots[k]:self.layout.slots[k] + size].reshape(shape)

    def stamp(self, k):
        return tuple(int(x) for x in self.buffer[self.stamps[k]:self.stamps[k] + 1].view(
            np.int32))


class ReferenceObserver:
    """The observer's equation (De Luca et al. 2006), here with numpy on Pinocchio's terms:
    r_k = e^{-K dt} r_{k-1} + (1 - e^{-K dt}) ((p_k - p_{k-1})/dt - tau_k - (beta_k +
    beta_{k-1})/2), p = M v, beta = C^T v - g - (F_v v + F_c tanh(v / eps) + b); restarted at
    r = 0; across a gap the residual kept and p, beta re-anchored."""

    def __init__(self, oracle, gain, fv, fc, fo):
        self.oracle, self.K, self.f = oracle, gain, (fv, fc, fo)
        self.r = None

    def _terms(self, q, v):
        o, (fv, fc, fo) = self.oracle, self.f
        M, C, g = o.mass_matrix(q), o.coriolis(q, v), o.gravity(q)
        return M @ v, C.T @ v - g - (fv * v + fc * np.tanh(v / rules.FRICTION_EPS) + fo)

    def reset(self, q, v):
        self.p, self.beta = self._terms(q, v)
        self.r = np.zeros(len(v))

    def update(self, q, v, tau, dt, bridge):
        p, beta = self._terms(q, v)
        if not bridge:
            a = np.exp(-self.K * dt)
            self.r = a * self.r + (1 - a) * ((p - self.p) / dt - tau - 0.5 * (beta + self.beta))
        self.p, self.beta = p, beta
        return self.r


def _stepper(model, base, outputs=None, coordinates='joint', effort_source='joint_state',
             odom_max_age=0.0, **settings):
    js = JointStateCycle(model, coordinates, ObserverSettings(model, **settings)
                         if settings else None, outputs=outputs, effort_source=effort_source,
                         commanded_timeout=0.5, odom_max_age=odom_max_age)
    if len(base[0]):
        js.odometry(*base)
    return js


def _run(model, path, msgs, expect, events=None, observer=True, bases=None,
         coordinates='joint', commands=None, **more_settings):
    """Every message through one cycle; each outcome against the page (``expect``; None: not
    checked), each cycle against Pinocchio and the reference observer (module text).  Returns
    (the cycle, [cycles in contact, those with the contact isolated on joint 3])."""
    nb = model.nv - len(model.joint_names)
    base = ((np.array([0.1, 0.0, 0.5, 0.0, 0.0, 0.0, 1.0]), np.zeros(6)) if nb
            else (np.zeros(0), np.zeros(0)))
    # a floating base held in place: its residual is the support wrench, not a contact
    threshold = np.r_[np.full(nb, 1e6), np.full(model.nv - nb, 8.0)]
    settings = dict(gain=40.0, threshold=threshold, friction_viscous=0.3,
                    friction_coulomb=0.4, torque_offset=0.25, **more_settings) if observer else {}
    out = Outputs(model.nq, model.nv)
    source = 'joint_state' if commands is None else 'commanded_torque'
    js = _stepper(model, base, (out.buffer, out.layout), coordinates, source, **settings)
    oracle = PinocchioOracle(path, model)
    st = js.state.settings
    ref = ReferenceObserver(oracle, st.gain, st.friction_viscous, st.friction_coulomb,
                            st.torque_offset) if observer else None
    oc = rd.output_coordinates(model, coordinates)
    contact, last_t = [0, 0], None
    for k, msg in enumerate(msgs):
        for what in (events or {}).get(k, ()):
            what(js)
        b = (bases or {}).get(k)
        if b is not None:
            js.odometry(*b)
        cmd = commands(k) if commands is not None else None
        got = js.step(*msg, command=cmd, christoffel=k % 10 == 0)
        if expect is not None and expect[k] != 'any':
            _check(got, expect[k])
        if got.verdict != 'cycle':
            continue
        res = got.result
        q, v = js.data.state.q.copy(), js.data.state.v.copy()
        M, C, g = oracle.mass_matrix(q), oracle.coriolis(q, v), oracle.gravity(q)
        sec, nanosec = msg[4:6]
        if got.written:            # the compiled step wrote the outputs where they belong
            n = model.nv
            for slot, want in ((SLOT_M, M), (SLOT_C, C), (SLOT_MDOT, C + C.T)):
                # Pinocchio's rounding: worst 3.4e-15 (relative to max(1, |X|)) over three
                # seeds on the arm and the quadruped, 1.5e-15 for g; tolerance 3x
                assert rel_err(out.slot(slot, (n, n)), want) < 1e-14, slot
            for slot in (SLOT_G, SLOT_GRAVITY):
                assert rel_err(out.slot(slot, (n,)), g) < 5e-15, slot
            np.testing.assert_array_equal(out.slot(SLOT_Q, (model.nq,)), q)
            np.testing.assert_array_equal(out.slot(SLOT_V, (n,)), v)
            assert all(out.stamp(i) == (sec, nanosec) for i in range(3))
        if coordinates == 'joint':
            assert rel_err(res.out.d.M, M) < 1e-14
        else:                      # the published coordinates, made after the compiled step
            want = oc.dynamics(q, v)
            for f in ('M', 'C', 'Mdot', 'g'):
                np.testing.assert_array_equal(getattr(res.out.d, f), getattr(want, f))
        if k % 10 == 0:
            np.testing.assert_array_equal(res.out.gamma, oc.christoffel(q))
            if coordinates == 'joint':     # (worst 2.1e-15 over the seeds above: 3x)
                assert rel_err(res.out.gamma, oracle.christoffel(q)) < 7e-15
        else:
            assert res.out.gamma is None
        t = got.t_ns
        if ref is None or res.observer is None:
            assert res.residual is None
            continue
        if res.observer == 'reset':
            ref.reset(q, v)
            assert res.residual is None
        else:
            r = ref.update(q, v, got.tau, (t - last_t) / NS, res.observer == 'bridge')
            # Pinocchio's terms and numpy against the compiled step: worst 3.0e-13 N m over
            # three seeds on the arm and the quadruped (|r| up to 25 N m), tolerance 3x
            np.testing.assert_allclose(res.residual, r, rtol=0, atol=9e-13)
            if got.written:
                np.testing.assert_array_equal(out.slot(SLOT_RESIDUAL, (model.nv,)),
                                              res.residual)
            if res.contact.in_contact:
                contact[0] += 1
                contact[1] += res.contact.links == [js.state.detector.joint_links[nb + 2]]
        last_t = t
    return js, contact


def _counts(js, *names):
    return sum(int(js.counts[_code(n)]) for n in names)


ARM = rd.bundled_urdf('arm7')
QUAD = rd.bundled_urdf('quadruped')


def test_every_case_of_the_input_policy():
    arm = rd.load_urdf(ARM)
    msgs, expect = _stream(arm, np.random.default_rng(3), path=ARM)
    events = {400: [lambda js: js.clock_reset()],
              450: [lambda js: js.reset('requested')],
              500: [lambda js: js.clock_reset()]}      # and stamps that do not go back
    # after the clock reset, a stamp 3 ms back is a 'clock_reset' restart
    s, ns, now = msgs[401][4], msgs[401][5], msgs[401][6]
    back = s * NS + ns - 3 * MS
    msgs[401] = msgs[401][:4] + (back // NS, back % NS, now)
    expect[401] = ('CLOCK_RESET', {'back': (s * NS + ns - back) / NS - 1e-3})
    js, contact = _run(arm, ARM, msgs, expect, events)
    assert js.outcome.result is not None
    assert contact[0] >= 10 and contact[1] == contact[0], contact    # isolated on joint 3
    assert _counts(js, 'OK', 'FREE') >= 0.75 * len(msgs), js.summary()
    # restarts: the first sample, the source reset, the clock reset, the request
    assert _counts(js, 'RESTARTED') == 4, js.summary()
    assert _counts(js, 'BRIDGED') == 1 and js.state.bridged == 1  # the 30 ms gap
    assert _counts(js, 'ABOVE') >= 10, js.summary()


def test_the_cycle_without_observer_and_on_a_floating_base():
    """A floating base: no odometry yet, odometry older than odom_max_age, a quaternion that is
    not a unit one (the core's reason); the arm without an observer."""
    quad = rd.load_urdf(QUAD, floating_base=True)
    msgs, expect = _stream(quad, np.random.default_rng(4), n_msgs=120, path=QUAD)
    bad = (np.array([0.1, 0.0, 0.5, 0.0, 0.0, 0.6, 1.0]), np.zeros(6))   # |quaternion| != 1
    good = (np.array([0.1, 0.0, 0.5, 0.0, 0.0, 0.0, 1.0]), np.zeros(6))
    expect[40] = ('STATE', {'error': None})
    js, _ = _run(quad, QUAD, msgs, expect, bases={40: bad, 41: good})
    assert _counts(js, 'OK', 'FREE') >= 90, js.summary()
    assert _counts(js, 'STATE') == 1, js.summary()
    # no odometry yet; then odometry 80 ms older than the joint state (odom_max_age 50 ms)
    js = _stepper(quad, (np.zeros(0), np.zeros(0)), odom_max_age=0.05, gain=40.0)
    _check(js.step(*msgs[0]), ('NO_ODOM', {}))
    stamp = msgs[1][4] * NS + msgs[1][5]
    js.odometry(*good, stamp - 80 * MS)
    _check(js.step(*msgs[1]), ('STALE_ODOM', {'odom_age': 0.08, 'odom_max_age': 0.05}))
    js.odometry(*good, stamp - 10 * MS)
    assert js.step(*msgs[1]).verdict == 'cycle'
    arm = rd.load_urdf(ARM)
    msgs, expect = _stream(arm, np.random.default_rng(5), n_msgs=120, path=ARM)
    expect = [None if e is not None and e[0] in ('NO_EFFORT', 'BRIDGED') else e for e in expect]
    js, _ = _run(arm, ARM, msgs, expect, observer=False)
    assert _counts(js, 'OK', 'FREE') >= 100, js.summary()


def test_the_cycle_with_contact_frames():
    """The quadruped with its four feet as contact frames: the forces at them are estimated at
    every cycle that updates the observer (the feet carry the held base's weight)."""
    quad = rd.load_urdf(QUAD, floating_base=True)
    msgs, expect = _stream(quad, np.random.default_rng(8), n_msgs=200, path=QUAD)
    js, _ = _run(quad, QUAD, msgs, ['any'] * len(msgs), contact_frames=(
        'LF_foot', 'RF_foot', 'LH_foot', 'RH_foot'), contact_force_threshold=5.0)
    assert js.fast_cycles >= 0.8 * len(msgs), js.summary()
    assert js.outcome.result.forces is not None


def test_the_cycle_in_other_published_coordinates():
    """Centre-of-mass coordinates on the quadruped: the compiled step makes the cycle in the
    model's coordinates (into a buffer of its own, not the messages: not ``written``) and the
    published ones are made after it, equal to rd.output_coordinates' (checked in _run)."""
    quad = rd.load_urdf(QUAD, floating_base=True)
    msgs, expect = _stream(quad, np.random.default_rng(9), n_msgs=150, path=QUAD)
    js, _ = _run(quad, QUAD, msgs, expect, coordinates='center_of_mass')
    assert js.fast_cycles >= 0.8 * len(msgs), js.summary()
    assert not js.outcome.written


def test_mimic_joints_may_be_left_out():
    """mimic_reduced coordinates: a layout of the independent joints alone is expanded (the
    followers from the mimic relation) and takes the same compiled step; a joint named twice is
    refused."""
    from test_node_coordinates import GRIPPER, INDEPENDENT
    model = rd.load_urdf(GRIPPER)
    js = _stepper(model, ((), ()), None, 'mimic_reduced', gain=40.0)
    oc = rd.output_coordinates(model, 'mimic_reduced')
    qbar = np.array([0.1, -0.2, 0.01])
    for k in range(3):
        got = js.step(tuple(INDEPENDENT), qbar, np.zeros(3), np.zeros(3), 10, k * MS, 0)
        assert got.verdict == 'cycle', got.refusal
    np.testing.assert_allclose(got.result.out.q, qbar, rtol=0, atol=1e-12)
    q = js.data.state.q
    assert len(q) == model.nq == 5        # the followers made from the mimic relation
    np.testing.assert_allclose(oc.state(q, np.zeros(5))[0], qbar, rtol=0, atol=1e-12)
    np.testing.assert_allclose(got.result.out.d.M, oc.dynamics(q, np.zeros(5)).M, rtol=0,
                               atol=1e-12)
    got = js.step(tuple(INDEPENDENT) + ('finger_left',), np.r_[qbar, 0.0], np.zeros(4),
                  np.zeros(4), 10, 5 * MS, 0)
    _check(got, ('DUPLICATE', {'joints': str(['finger_left'])}))


def test_the_cycle_with_the_commanded_torque():
    """effort_source 'commanded_torque': the observer's torque is the latest command (none yet,
    then one, then a stale one: no observer update, noted); the messages' own efforts are
    still checked against their bounds."""
    import time
    arm = rd.load_urdf(ARM)
    msgs, expect = _stream(arm, np.random.default_rng(10), n_msgs=300, path=ARM)
    command = np.linspace(-3.0, 3.0, 7)

    def commands(k):
        if k < 20:
            return None                                        # no command yet
        stale = 150 <= k < 170                                 # received 2 s ago (> 0.5 s)
        return (command + 0.01 * k, time.monotonic_ns() - (2 * NS if stale else 0))
    for k in range(len(msgs)):
        if expect[k] is None or expect[k][0] == 'NO_EFFORT':   # (the commands' torque)
            expect[k] = (('NO_COMMAND', {}) if k < 20 else ('STALE_COMMAND', {})
                         if 150 <= k < 170 else None)
    expect[170] = ('BRIDGED', {'dt': 0.021, 'gap_limit': 0.005})   # 20 ms without an update
    js, _ = _run(arm, ARM, msgs, expect, commands=commands)
    assert js.fast_cycles >= 0.8 * len(msgs), js.summary()
    assert _counts(js, 'NO_EFFORT') >= 35, js.summary()


def test_a_declined_message_changes_nothing():
    """A message whose state the compiled call refuses at its terms (here: a floating base
    whose quaternion is not a unit one) leaves the observer and the outputs as they were and
    is refused with the core's reason."""
    quad = rd.load_urdf(QUAD, floating_base=True)
    out = Outputs(quad.nq, quad.nv)
    base = (np.array([0.1, 0.0, 0.5, 0.0, 0.0, 0.0, 1.0]), np.zeros(6))
    js = _stepper(quad, base, (out.buffer, out.layout), gain=40.0,
                  threshold=np.r_[np.full(6, 1e6), np.full(12, 8.0)])
    msgs, _ = _stream(quad, np.random.default_rng(6), n_msgs=45, path=QUAD)
    for msg in msgs[:40]:
        js.step(*msg)
    state = np.concatenate(js.data.observer)
    buffer = out.buffer.copy()
    before = _counts(js, 'STATE')
    js.odometry(np.array([0.1, 0.0, 0.5, 0.0, 0.0, 0.6, 1.0]), np.zeros(6))
    got = js.step(*msgs[40])
    assert _counts(js, 'STATE') == before + 1
    assert got.verdict == 'refused' and 'quaternion' in got.refusal[1], got.refusal
    np.testing.assert_array_equal(out.buffer, buffer)
    np.testing.assert_array_equal(np.concatenate(js.data.observer), state)


def test_a_contact_onset_in_one_compiled_call():
    """A sudden external torque: the compiled call makes the cycle (outputs written, the
    residual in its slot) and the detector judges its residual as the pipeline does (onset,
    the joint's child link isolated)."""
    arm = rd.load_urdf(ARM)
    out = Outputs(7, 7)
    js = _stepper(arm, ((), ()), (out.buffer, out.layout), gain=40.0, threshold=8.0)
    msgs, _ = _stream(arm, np.random.default_rng(6), n_msgs=50, path=ARM)   # (NaN at 50)
    for msg in msgs[:15]:
        js.step(*msg)
    names, pos, vel, eff = msgs[15][:4]      # 280 N m on joint 3 at once: K dt 280 > 8 N m
    made = js.fast_cycles
    got = js.step(names, pos, vel, eff - np.eye(7)[2] * 280.0, *msgs[15][4:])
    assert js.fast_cycles == made + 1 and got.written
    assert got.answer == rules.ABOVE
    c = got.result.contact
    assert got.verdict == 'cycle' and c.onset and c.in_contact, c
    r = out.slot(SLOT_RESIDUAL, (7,))
    assert abs(r[2]) > 8.0 and np.all(np.abs(np.delete(r, 2)) < 8.0), r
    assert c.link == js.state.detector.joint_links[2] and list(np.flatnonzero(c.joints)) == [2]
    # released once the torque is gone and r decays below half the threshold (hysteresis)
    states = [js.step(*m).result.contact for m in msgs[16:50]]
    assert any(s.release for s in states) and not states[-1].in_contact
    assert js.fast_cycles == made + 35


def test_the_compiled_cycle_on_split_sources():
    """An arm driver (7 joints, 1 kHz) and a gripper driver (2 joints, 100 Hz, its stamps
    trailing) on one topic, no source with every joint: the arm's messages make the cycles with
    the gripper's held values, in one compiled call; also when the gripper sends no efforts for
    a while (no observer update) and when it stops (its values expire: incomplete, with the
    joints and their last source), and when the order of the two changes."""
    path = '/tmp/_chain9.urdf'
    xml = testing.chain(9, seed=3)
    model = rd.load_urdf_string(xml)
    names = tuple(model.joint_names)
    full, _ = _stream(model, np.random.default_rng(7), n_msgs=500)
    msgs, expect = [], []
    for k, (_, pos, vel, eff, sec, nanosec, now) in enumerate(full):
        if k % 10 == 3 and not 300 <= k < 420:             # the gripper, 2 ms behind
            t = sec * NS + nanosec - 2 * MS
            e = eff[7:] if not 150 <= k < 200 else np.zeros(0)
            msgs.append((names[7:], pos[7:], vel[7:], e, t // NS, t % NS, now))
            expect.append('any' if k > 3 else ('HELD_FIRST', {
                'count': 2.0, 'joints': 9.0, 'driving': 7.0, 'missing': str(list(names[:7]))}))
        msgs.append((names[:7], pos[:7], vel[:7], eff[:7], sec, nanosec, now))
        expect.append('any')
    expect[0] = ('INCOMPLETE', {'lacking': str(list(names[7:])), 'hint': '',
                                'lacking_detail': '; '.join(f'{j}: never received'
                                                            for j in names[7:])})
    with open(path, 'w') as f:
        f.write(xml)
    js, _ = _run(model, path, msgs, expect)
    assert js.fast_cycles >= 0.75 * 500, js.summary()
    assert _counts(js, 'NO_EFFORT') >= 30, js.summary()      # no efforts
    assert _counts(js, 'INCOMPLETE') >= 2, js.summary()      # never received; expired
    assert _counts(js, 'HELD_VALUES') >= 30, js.summary()


def test_replay_runs_the_node_cycle_and_finds_the_plant_torque():
    """Recorded samples replayed through the node's own cycle (node_cycle + replay, what
    calibration uses): a plant whose joint 3 feels a constant external torque from t = 0.2 s
    (its torques the model's inverse dynamics minus that torque, so M a + C v + g = tau +
    tau_ext holds exactly); the residual converges to the plant's torque with K/(s + K), the
    usual samples take the compiled call, and a sample beyond the input bounds is refused with
    its reason and changes nothing."""
    from ros_dynamics.identification.samples import Samples
    arm = rd.load_urdf(ARM)
    t = np.arange(600) * 1e-3
    w, ph = 2.0, np.arange(7)
    q = 0.4 * np.sin(w * t[:, None] + ph)
    v = 0.4 * w * np.cos(w * t[:, None] + ph)
    a = -0.4 * w * w * np.sin(w * t[:, None] + ph)
    ext = np.where(t >= 0.2, 12.0, 0.0)[:, None] * np.eye(7)[2]
    tau = np.array([rd.inverse_dynamics(arm, *x) for x in zip(q, v, a)]) - ext
    v[300, 4] = 1e3                # beyond the velocity bound
    js = node_cycle(arm, ObserverSettings(arm, gain=40.0, threshold=8.0))
    verdicts, r = [], np.full((600, 7), np.nan)
    for k, out in replay(js, Samples(t, q, v, tau, list(arm.joint_names), 5 * NS)):
        verdicts.append(out.verdict)
        if out.verdict == 'cycle' and out.result.residual is not None:
            r[k] = out.result.residual
        if k == 300:
            _check(out, ('BOUNDS_VELOCITY', {'value': 1e3, 'joint': repr(arm.joint_names[4]),
                                             'bound': 2 * _urdf_limit(ARM, arm.joint_names[4],
                                                                      'velocity')}))
    assert verdicts.count('cycle') == 599 and verdicts[300] == 'refused'
    assert js.fast_cycles >= 595, js.summary()
    # K/(s + K) of 12 N m on joint 3, sampled (the torque of a sample acted during the period
    # before it, so the step starts one period before 0.2 s)
    expected = 12.0 * (1.0 - np.exp(-40.0 * np.clip(t - 0.2 + 1e-3, 0.0, None)))
    err = np.abs(r[1:, 2] - expected[1:])
    # worst seen 0.0020 N m on joint 3 and 0.027 N m on the others (the trapezoid of beta over
    # a period, O(dt^2), largest across the 2 ms where the refused sample left a hole): 3x
    assert np.nanmax(err) < 0.006, np.nanmax(err)
    assert np.nanmax(np.abs(np.delete(r[1:], 2, axis=1))) < 0.08
    assert out.result.contact.in_contact and out.result.contact.joints[2]


def test_state_dependent_thresholds_alike():
    """contact_threshold + k_v |v| + k_tau |tau| (rules.threshold_at): the compiled call and the
    pipeline judge alike, and the state terms change the verdicts: a larger torque term hides
    the stream's 25 N m contact on joint 3 while it acts (its threshold rises above it with
    the torque); only the residual's decay after it, at the free motion's torque, is seen."""
    arm = rd.load_urdf(ARM)
    msgs, expect = _stream(arm, np.random.default_rng(3), n_msgs=300, path=ARM)
    _, seen = _run(arm, ARM, msgs, expect, threshold_velocity=1.0, threshold_torque=0.05)
    assert seen[0] >= 10 and seen[1] == seen[0], seen
    _, hidden = _run(arm, ARM, msgs, expect, threshold_velocity=1.0, threshold_torque=2.0)
    assert hidden[0] < seen[0] - 10, (hidden, seen)


def test_two_drivers_restart_the_observer_in_the_compiled_call():
    """Two sources of 7 of 9 joints each (both drive), the second's stamps 0.5 ms behind the
    first's: each of its messages takes the observer's time back, a restart (its reason the
    step back, residual zero) that the compiled call makes as the pipeline does."""
    path = '/tmp/_chain9.urdf'
    xml = testing.chain(9, seed=3)
    model = rd.load_urdf_string(xml)
    with open(path, 'w') as f:
        f.write(xml)
    names = tuple(model.joint_names)
    msgs = []
    for _, pos, vel, eff, sec, nanosec, now in _stream(model, np.random.default_rng(11),
                                                       n_msgs=45)[0]:
        t = sec * NS + nanosec - 5 * 10**5
        msgs.append((names[:7], pos[:7], vel[:7], eff[:7], sec, nanosec, now))
        msgs.append((names[2:], pos[2:], vel[2:], eff[2:], t // NS, t % NS, now))
    js, _ = _run(model, path, msgs, None)
    assert _counts(js, 'RESTARTED') >= 35, js.summary()
    res = js.outcome.result                   # the last message: the second source's
    assert res.observer == 'reset' and res.reset_reason.startswith(
        'the time went back 0.0005 s'), res.reset_reason
    np.testing.assert_array_equal(js.data.observer.r, np.zeros(9))


def test_a_compiled_restart_against_the_observer_equation():
    """Independent of the pipeline: after a requested reset the compiled call (re)starts the
    observer at the next sample (residual zero, the reason kept), and the sample after it gives
    the residual of the observer's equation (De Luca et al. 2006, one zero-order-hold step from
    r = 0) computed here with numpy from Pinocchio's terms at both samples."""
    arm = rd.load_urdf(ARM)
    gain, fv, fc, fo = 40.0, 0.3, 0.4, 0.25
    js = node_cycle(arm, ObserverSettings(arm, gain=gain, friction_viscous=fv,
                                          friction_coulomb=fc, torque_offset=fo, threshold=1e6))
    msgs, _ = _stream(arm, np.random.default_rng(12), n_msgs=12, path=ARM)
    for msg in msgs[:10]:
        assert js.step(*msg).verdict == 'cycle'
    js.reset('requested')
    restarts = _counts(js, 'RESTARTED')
    got = js.step(*msgs[10])
    assert _counts(js, 'RESTARTED') == restarts + 1         # made by the compiled call
    res = got.result
    assert got.verdict == 'cycle' and res.observer == 'reset' and res.reset_reason == 'requested'
    assert res.residual is None
    np.testing.assert_array_equal(js.data.observer.r, np.zeros(7))
    got = js.step(*msgs[11])
    assert got.result.observer == 'update'
    ref = ReferenceObserver(PinocchioOracle(ARM, arm), gain, fv, fc, fo)
    ref.reset(msgs[10][1], msgs[10][2])
    dt = ((msgs[11][4] - msgs[10][4]) * NS + msgs[11][5] - msgs[10][5]) / NS
    r1 = ref.update(msgs[11][1], msgs[11][2], msgs[11][3], dt, False)
    # Pinocchio's terms against the compiled step's (|r1| ~ 0.04 N m, the momentum difference
    # divided by 1 ms): worst 7.0e-14 N m over three seeds, tolerance 3x
    np.testing.assert_allclose(got.result.residual, r1, rtol=0, atol=2.1e-13)


def test_a_nonfinite_result_as_the_page_says():
    """Input bounds wide enough to let a velocity of 1e200 rad/s through: C v overflows, the
    compiled step finds the terms not finite (NONFINITE, as the page says it), and the observer
    restarts at the next cycle."""
    from ros_dynamics.estimation.joint_input import InputBounds
    arm = rd.load_urdf(ARM)
    js = node_cycle(arm, ObserverSettings(arm), bounds=InputBounds(arm, input_limit_factor=1e300))
    msgs, _ = _stream(arm, np.random.default_rng(13), n_msgs=4, path=ARM)
    for msg in msgs[:2]:
        _check(js.step(*msg), None)
    names, q, v, tau, sec, nanosec, now = msgs[2]
    _check(js.step(names, q, np.full(7, 1e200), tau, sec, nanosec, now), ('NONFINITE', {}))
    assert js.step(*msgs[3]).answer == rules.RESTARTED
