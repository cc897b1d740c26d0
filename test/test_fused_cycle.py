"""The compiled call against the Python pipeline: the choice JointStateCycle makes changes
nothing but the cost.

Two identical JointStateCycles get the same joint-state messages: one without output buffers
(the Python pipeline only: the reference), one with them (the compiled call first, the
pipeline when it declines).
The stream is physical (the torques are the model's inverse dynamics of the motion, plus
noise) and carries every case the input policy names: a NaN, a velocity beyond its bound, a
stamp going back, the same stamp again, a stamp ahead of the clock, a non-normalized stamp,
another name order, a partial source, a message without efforts, a short velocity, a contact,
a gap (bridged), a source reset, a clock reset and a reset request.  Per message: the same
verdict, the same terms (the compiled cycle runs the same kernel: equal to the last bit) and
residual (to rounding: the friction term is evaluated in compiled code), the same contact
state and observer restarts, the outputs written where they belong; and most messages take the
compiled path, each kind of decline at least once.
"""
import numpy as np
import pytest

import ros_dynamics as rd
from ros_dynamics import testing
from ros_dynamics.estimation.cycle import Cycle, ObserverSettings
from ros_dynamics.estimation.fused_cycle import (BRIDGED, DECLINED, INCOMPLETE, OK,
                                                 REJECTED_BOUNDS, REJECTED_LAYOUT, REJECTED_STAMP, RESTARTED,
                                                 STATE)
from ros_dynamics.estimation.joint_input import InputBounds, JointStateAssembler
from ros_dynamics.estimation.joint_state_cycle import JointStateCycle

pytestmark = pytest.mark.core
NS = 10**9


def _pipeline(model, coordinates='joint', **observer):
    asm = JointStateAssembler(model.joint_names, InputBounds(model))
    settings = ObserverSettings(model, **observer) if observer else None
    return asm, Cycle(model, coordinates, settings)


class Outputs:
    """Output buffers laid out as a serialized message would be: a word between arrays."""

    def __init__(self, nv):
        m2 = nv * nv
        self.offsets = np.array([3, 4 + m2, 5 + 2 * m2, 6 + 3 * m2, 2, 1], dtype=np.int64)
        self.dyn, self.grav, self.ext = np.full(7 + 3 * m2 + nv, 7.0), np.zeros(nv + 3), np.zeros(nv + 2)

    def terms(self, nv):
        o = self.offsets
        M, C, Mdot = (self.dyn[o[k]:o[k] + nv * nv].reshape(nv, nv) for k in range(3))
        return M, C, Mdot, self.dyn[o[3]:o[3] + nv]


def _stream(model, rng, n_msgs=700):
    """Messages (names, pos, vel, eff, sec, nanosec, now_ns) at 1 kHz with every case."""
    names = tuple(model.joint_names)
    n = len(names)
    nb = model.nv - n
    w, t_ns, msgs = 2.0, 100 * NS, []
    for k in range(n_msgs):
        t_ns += 30 * 10**6 if k == 200 else 10**6              # a 30 ms gap
        if k == 260:
            t_ns -= 2 * NS                                     # source reset (stamps back 2 s)
        ph = w * t_ns / NS + np.arange(n)
        pos, vel, acc = 0.4 * np.sin(ph), 0.4 * w * np.cos(ph), -0.4 * w * w * np.sin(ph)
        qf = np.concatenate([[0.1, 0.0, 0.5, 0.0, 0.0, 0.0, 1.0], pos]) if nb else pos
        vf = np.concatenate([np.zeros(6), vel]) if nb else vel
        af = np.concatenate([np.zeros(6), acc]) if nb else acc
        eff = rd.inverse_dynamics(model, qf, vf, af)[nb:] + rng.normal(0, 0.2, n)
        if 120 <= k < 150:
            eff[2] -= 25.0                                     # a contact: tau_ext = +25 N m
        sec, nanosec, now = t_ns // NS, t_ns % NS, t_ns + 2 * 10**5
        m_names, m_pos, m_vel, m_eff = names, pos, vel, eff
        if k == 50:
            m_pos = pos.copy(); m_pos[1] = np.nan
        if k == 60:
            m_vel = vel.copy(); m_vel[0] = 1e3
        if k == 70:
            sec, nanosec = divmod(t_ns - 15 * 10**5, NS)        # before the last stamp
        if k == 100:
            now = t_ns - 3 * NS                                # 3 s ahead of the clock
        if k == 360:
            nanosec += NS                                      # not normalized
        if k == 320:
            m_eff = np.zeros(0)                                # no efforts
        if k == 330:
            m_vel = vel[:-1]                                   # a velocity short
        if 90 <= k < 96:                                       # another name order
            order = np.arange(n)[::-1]
            m_names = tuple(names[i] for i in order)
            m_pos, m_vel, m_eff = pos[order], vel[order], eff[order]
        if k == 300:                                           # a partial source
            m_names, m_pos, m_vel, m_eff = names[:2], pos[:2], vel[:2], eff[:2]
        msgs.append((m_names, m_pos, m_vel, m_eff, int(sec), int(nanosec), int(now)))
        if k == 80:
            msgs.append(msgs[-1])                              # the same stamp again
    return msgs


def _stepper(model, base, outputs=None, coordinates='joint', effort_source='joint_state',
             **settings):
    asm, cycle = _pipeline(model, coordinates, **settings)
    q, v, tau = np.zeros(model.nq), np.zeros(model.nv), np.zeros(model.nv)
    q[:len(base[0])], v[:len(base[1])] = base
    js = JointStateCycle(asm, cycle, q, v, tau, outputs, effort_source, commanded_timeout=0.5)
    if outputs is not None:      # (the reference is never compiled: the pipeline alone)
        js.compile()
    return js


def _compare(model, msgs, events=None, observer=True, bases=None, coordinates='joint',
             commands=None, **more_settings):
    nb = model.nv - len(model.joint_names)
    base = ((np.array([0.1, 0.0, 0.5, 0.0, 0.0, 0.0, 1.0]), np.zeros(6)) if nb
            else (np.zeros(0), np.zeros(0)))
    # a floating base held in place: its residual is the support wrench, not a contact
    threshold = np.r_[np.full(nb, 1e6), np.full(model.nv - nb, 8.0)]
    settings = dict(gain=40.0, threshold=threshold, friction_viscous=0.3,
                    friction_coulomb=0.4, torque_offset=0.25, **more_settings) if observer else {}
    out = Outputs(model.nv)
    source = 'joint_state' if commands is None else 'commanded_torque'
    ref_js = _stepper(model, base, None, coordinates, source, **settings)
    js = _stepper(model, base, (out.dyn, out.grav, out.ext, out.offsets), coordinates, source,
                  **settings)
    odom = base if nb else None
    seen_contact = [0, 0]      # cycles in contact: all, and those the compiled call made
    for k, msg in enumerate(msgs):
        for what in (events or {}).get(k, ()):
            what(ref_js.assembler, ref_js.cycle), what(js.assembler, js.cycle)
        gamma = k % 10 == 0
        before = js.fast_cycles
        b = (bases or {}).get(k, odom)
        cmd = commands(k) if commands is not None else None
        ref = ref_js.step(*msg, base=b, command=cmd, christoffel=gamma)
        got = js.step(*msg, base=b, command=cmd, christoffel=gamma)
        assert got.verdict == ref.verdict and got.refusal == ref.refusal, (k, got.verdict,
                                                                           ref.refusal)
        assert got.notes == ref.notes and got.t_ns == ref.t_ns, k
        made = js.fast_cycles - before            # the compiled call made this cycle
        assert made in (0, 1) and (made or not got.written)
        assert js.assembler.reason == ref_js.assembler.reason or made
        if got.written:
            M, C, Mdot, g = out.terms(model.nv)
            r = ref.result
            for a, b in ((M, r.terms.M), (C, r.terms.C), (Mdot, r.terms.Mdot), (g, r.terms.g)):
                np.testing.assert_array_equal(a, b)
            np.testing.assert_array_equal(out.grav[2:2 + model.nv], r.terms.g)
            np.testing.assert_array_equal(js.q, r.out.q)
            np.testing.assert_array_equal(js.v, r.out.v)
            if r.residual is not None:
                np.testing.assert_allclose(out.ext[1:1 + model.nv], r.residual, rtol=0,
                                           atol=1e-12)
        if ref.verdict != 'cycle':
            continue
        res, ref = got.result, ref.result
        assert res.error == ref.error
        assert res.observer == ref.observer and res.reset_reason == ref.reset_reason, k
        np.testing.assert_array_equal(res.terms.M, ref.terms.M)
        for a, b in ((res.out.q, ref.out.q), (res.out.v, ref.out.v), (res.out.d.M, ref.out.d.M),
                     (res.out.d.C, ref.out.d.C), (res.out.d.g, ref.out.d.g)):
            np.testing.assert_array_equal(a, b)    # the published coordinates
        if ref.residual is None:
            assert res.residual is None
        else:
            np.testing.assert_allclose(res.residual, ref.residual, rtol=0, atol=1e-12)
            assert res.contact.in_contact == ref.contact.in_contact
            assert res.contact.links == ref.contact.links
            if ref.forces is not None:
                np.testing.assert_allclose(res.forces.wrenches, ref.forces.wrenches, rtol=0,
                                           atol=1e-9)
                np.testing.assert_array_equal(res.forces.in_contact, ref.forces.in_contact)
                seen_contact[0] += ref.forces.in_contact.any()
                seen_contact[1] += ref.forces.in_contact.any() and made
            seen_contact[0] += ref.contact.in_contact
            seen_contact[1] += ref.contact.in_contact and made
        if ref.out.gamma is None:
            assert res.out.gamma is None
        else:
            np.testing.assert_allclose(res.out.gamma, ref.out.gamma, rtol=0, atol=1e-12)
    assert js.cycle.bridged == ref_js.cycle.bridged
    return js, seen_contact


def test_the_compiled_cycle_is_the_pipeline_on_every_case():
    arm = rd.load_urdf(rd.bundled_urdf('arm7'))
    msgs = _stream(arm, np.random.default_rng(3))
    events = {400: [lambda a, c: a.clock_reset()],
              450: [lambda a, c: c.reset('requested')],
              500: [lambda a, c: a.clock_reset()]}      # and stamps that do not go back
    # after the clock reset, a stamp 1 ms back is a 'clock_reset' restart
    n, s, ns, now = msgs[401][0], msgs[401][4], msgs[401][5], msgs[401][6]
    msgs[401] = msgs[401][:4] + ((s * NS + ns - 3 * 10**6) // NS, (s * NS + ns - 3 * 10**6) % NS,
                                 now)
    js, contact = _compare(arm, msgs, events)
    kinds = dict(zip(('ok',) + DECLINED, list(js.counts)))
    assert contact[0] >= 10                    # the contact was seen (and isolated alike)
    assert contact[1] >= contact[0] - 2        # ... in the compiled call (not: its onset
    #                                            after a restart, made by the pipeline)
    assert kinds['ok'] >= 0.8 * len(msgs), kinds
    assert kinds['stamp'] >= 1, kinds       # a source or clock reset
    # the observer restarted in the compiled call (after the request at 450), as the pipeline
    # restarts it (the same reason, a zero residual: compared above)
    assert js.counts[RESTARTED] >= 1, js.counts
    # the stamps going back (70), ahead of the clock (100), not normalized (360): rejected by
    # the compiled call with the pipeline's reasons (compared above)
    assert js.counts[REJECTED_STAMP] == 3, js.counts
    assert js.counts[REJECTED_LAYOUT] == 1, js.counts         # the short velocity (330)
    assert js.counts[REJECTED_BOUNDS] == 2, js.counts         # the NaN (50), the velocity (60)
    assert js.counts[BRIDGED] == 1 and js.cycle.bridged == 1   # the 30 ms gap


def test_the_compiled_cycle_without_observer_and_on_a_floating_base():
    quad = rd.load_urdf(rd.bundled_urdf('quadruped'), floating_base=True)
    msgs = _stream(quad, np.random.default_rng(4), n_msgs=120)
    bad = (np.array([0.1, 0.0, 0.5, 0.0, 0.0, 0.6, 1.0]), np.zeros(6))   # |quaternion| != 1
    js, _ = _compare(quad, msgs, bases={40: bad})
    assert js.counts[OK] >= 90, js.counts
    assert js.counts[STATE] == 1, js.counts          # refused in the compiled call
    arm = rd.load_urdf(rd.bundled_urdf('arm7'))
    js, _ = _compare(arm, _stream(arm, np.random.default_rng(5), n_msgs=120), observer=False)
    assert js.counts[OK] >= 100, js.counts


def test_the_compiled_cycle_with_contact_frames():
    """The quadruped with its four feet as contact frames: the forces at them (the same
    estimator, on the residual the compiled call left) equal the pipeline's, in one compiled
    call per cycle."""
    quad = rd.load_urdf(rd.bundled_urdf('quadruped'), floating_base=True)
    msgs = _stream(quad, np.random.default_rng(8), n_msgs=200)
    js, loaded = _compare(quad, msgs, contact_frames=('LF_foot', 'RF_foot', 'LH_foot',
                                                      'RH_foot'), contact_force_threshold=5.0)
    assert loaded[0] >= 50 and loaded[1] >= loaded[0] - 2, loaded
    assert js.fast_cycles >= 0.8 * len(msgs), js.counts


def test_the_compiled_cycle_in_other_published_coordinates():
    """Centre-of-mass coordinates on the quadruped: the compiled call makes the cycle in the
    model's coordinates (into buffers of its own, not the messages: not ``written``) and the
    published ones are made after it, equal to the pipeline's."""
    quad = rd.load_urdf(rd.bundled_urdf('quadruped'), floating_base=True)
    msgs = _stream(quad, np.random.default_rng(9), n_msgs=150)
    js, _ = _compare(quad, msgs, coordinates='center_of_mass')
    assert js.fast_cycles >= 0.8 * len(msgs), js.counts
    assert not js.outcome.written


def test_the_compiled_cycle_with_the_commanded_torque():
    """effort_source 'commanded_torque': the observer's torque is the latest command (none yet,
    then one, then a stale one: no observer update, noted), in one compiled call, as the
    pipeline does; the messages' own efforts are still checked against their bounds."""
    import time
    arm = rd.load_urdf(rd.bundled_urdf('arm7'))
    msgs = _stream(arm, np.random.default_rng(10), n_msgs=300)
    command = np.linspace(-3.0, 3.0, 7)

    def commands(k):
        if k < 20:
            return None                                        # no command yet
        stale = 150 <= k < 170                                 # received 2 s ago (> 0.5 s)
        return (command + 0.01 * k, time.monotonic_ns() - (2 * NS if stale else 0))
    js, _ = _compare(arm, msgs, commands=commands)
    assert js.fast_cycles >= 0.8 * len(msgs), js.counts


def test_a_declined_message_changes_nothing():
    """A message whose state the compiled call refuses at its terms (here: a floating base
    whose quaternion is not a unit one) leaves the observer and the outputs as they were and
    is refused with the core's reason."""
    quad = rd.load_urdf(rd.bundled_urdf('quadruped'), floating_base=True)
    out = Outputs(quad.nv)
    base = (np.array([0.1, 0.0, 0.5, 0.0, 0.0, 0.0, 1.0]), np.zeros(6))
    js = _stepper(quad, base, (out.dyn, out.grav, out.ext, out.offsets), gain=40.0,
                  threshold=np.r_[np.full(6, 1e6), np.full(12, 8.0)])
    msgs = _stream(quad, np.random.default_rng(6), n_msgs=45)
    for msg in msgs[:40]:
        js.step(*msg, base=base)
    state = js.cycle.observer.state.copy()
    dyn, ext = out.dyn.copy(), out.ext.copy()
    before = js.counts.copy()
    bad = (np.array([0.1, 0.0, 0.5, 0.0, 0.0, 0.6, 1.0]), np.zeros(6))
    got = js.step(*msgs[40], base=bad)
    assert js.counts[STATE] == before[STATE] + 1
    assert got.verdict == 'refused' and 'quaternion' in got.refusal[1], got.refusal
    np.testing.assert_array_equal(out.dyn, dyn)
    np.testing.assert_array_equal(out.ext, ext)
    np.testing.assert_array_equal(js.cycle.observer.state, state)


def test_a_contact_onset_in_one_compiled_call():
    """A sudden external torque: the compiled call makes the cycle (outputs written, the
    residual in ~/external_torque's buffer) and the detector judges its residual as the
    pipeline does (onset, the joint's child link isolated)."""
    arm = rd.load_urdf(rd.bundled_urdf('arm7'))
    out = Outputs(7)
    js = _stepper(arm, ((), ()), (out.dyn, out.grav, out.ext, out.offsets), gain=40.0,
                  threshold=8.0)
    msgs = _stream(arm, np.random.default_rng(6), n_msgs=50)    # (a NaN at 50: not here)
    for msg in msgs[:15]:
        js.step(*msg)
    names, pos, vel, eff = msgs[15][:4]      # 280 N m on joint 3 at once: K dt 280 > 8 N m
    made = js.fast_cycles
    got = js.step(names, pos, vel, eff - np.eye(7)[2] * 280.0, *msgs[15][4:])
    assert js.fast_cycles == made + 1 and got.written
    c = got.result.contact
    assert got.verdict == 'cycle' and c.onset and c.in_contact, c
    r = out.ext[1:8]
    assert abs(r[2]) > 8.0 and np.all(np.abs(np.delete(r, 2)) < 8.0), r
    assert c.link == js.cycle.detector.joint_links[2] and list(np.flatnonzero(c.joints)) == [2]
    # released once the torque is gone and r decays below half the threshold (hysteresis)
    states = [js.step(*m).result.contact for m in msgs[16:50]]
    assert any(s.release for s in states) and not states[-1].in_contact
    assert js.fast_cycles == made + 35


def test_the_compiled_cycle_on_split_sources():
    """An arm driver (7 joints, 1 kHz) and a gripper driver (2 joints, 100 Hz, its stamps
    trailing) on one topic, no source with every joint: the arm's messages make the cycles with
    the gripper's held values, in one compiled call, equal to the pipeline; also when the
    gripper sends no efforts for a while (no observer update) and when it stops (its values
    expire: incomplete), and when the order of the two changes."""
    model = rd.load_urdf_string(testing.chain(9, seed=3))
    names = tuple(model.joint_names)
    full = _stream(model, np.random.default_rng(7), n_msgs=500)
    msgs = []
    for k, (_, pos, vel, eff, sec, nanosec, now) in enumerate(full):
        if k % 10 == 3 and not 300 <= k < 420:             # the gripper, 2 ms behind
            t = sec * NS + nanosec - 2 * 10**6
            e = eff[7:] if not 150 <= k < 200 else np.zeros(0)
            msgs.append((names[7:], pos[7:], vel[7:], e, t // NS, t % NS, now))
        msgs.append((names[:7], pos[:7], vel[:7], eff[:7], sec, nanosec, now))
    js, _ = _compare(model, msgs)
    kinds = dict(zip(('ok',) + DECLINED + ('no effort',), list(js.counts)))
    assert js.fast_cycles >= 0.75 * 500, kinds
    assert kinds['no effort'] >= 30, kinds                  # no efforts
    assert js.counts[INCOMPLETE] >= 1, js.counts          # expired: refused in the compiled call


def test_replay_runs_the_node_cycle_and_finds_the_plant_torque():
    """Recorded samples replayed through the node's own cycle (node_cycle + replay, what
    calibration uses): a plant whose joint 3 feels a constant external torque from t = 0.2 s
    (its torques the model's inverse dynamics minus that torque, so M a + C v + g = tau +
    tau_ext holds exactly); the residual converges to the plant's torque with K/(s + K), the
    usual samples take the compiled call, and a sample beyond the input bounds is refused with
    its reason and changes nothing."""
    from ros_dynamics.estimation.joint_state_cycle import node_cycle, replay
    from ros_dynamics.identification.samples import Samples
    arm = rd.load_urdf(rd.bundled_urdf('arm7'))
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
            assert out.refusal[0] == 'velocity' and 'beyond' in out.refusal[1], out.refusal
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
    arm = rd.load_urdf(rd.bundled_urdf('arm7'))
    msgs = _stream(arm, np.random.default_rng(3), n_msgs=300)
    _, seen = _compare(arm, msgs, threshold_velocity=1.0, threshold_torque=0.05)
    assert seen[0] >= 10 and seen[1] >= seen[0] - 2, seen
    _, hidden = _compare(arm, msgs, threshold_velocity=1.0, threshold_torque=2.0)
    assert hidden[0] < seen[0] - 10, (hidden, seen)


def test_two_drivers_restart_the_observer_in_the_compiled_call():
    """Two sources of 7 of 9 joints each (both drive), the second's stamps 0.5 ms behind the
    first's: each of its messages takes the observer's time back, a restart (its reason the
    step back, residual zero) that the compiled call makes as the pipeline does."""
    model = rd.load_urdf_string(testing.chain(9, seed=3))
    names = tuple(model.joint_names)
    msgs = []
    for _, pos, vel, eff, sec, nanosec, now in _stream(model, np.random.default_rng(11),
                                                       n_msgs=45):
        t = sec * NS + nanosec - 5 * 10**5
        msgs.append((names[:7], pos[:7], vel[:7], eff[:7], sec, nanosec, now))
        msgs.append((names[2:], pos[2:], vel[2:], eff[2:], t // NS, t % NS, now))
    js, _ = _compare(model, msgs)
    assert js.counts[RESTARTED] >= 35, js.counts
    res = js.outcome.result                   # the last message: the second source's
    assert res.observer == 'reset' and res.reset_reason.startswith(
        'the time went back 0.0005 s'), res.reset_reason
    np.testing.assert_array_equal(js.cycle.observer.residual, np.zeros(9))


def test_a_compiled_restart_against_the_observer_equation():
    """Independent of the pipeline: after a requested reset the compiled call (re)starts the
    observer at the next sample (residual zero, the reason kept), and the sample after it gives
    the residual of the observer's equation (De Luca et al. 2006, one zero-order-hold step from
    r = 0) computed here with numpy from the core's terms at both samples:
    r1 = (1 - e^{-K dt}) ((p1 - p0)/dt - tau1 - (beta0 + beta1)/2), p = M v,
    beta = C^T v - g - (F_v v + F_c tanh(v / eps) + b)."""
    from ros_dynamics.estimation.joint_state_cycle import node_cycle
    arm = rd.load_urdf(rd.bundled_urdf('arm7'))
    gain, fv, fc, fo = 40.0, 0.3, 0.4, 0.25
    js = node_cycle(arm, ObserverSettings(arm, gain=gain, friction_viscous=fv,
                                          friction_coulomb=fc, torque_offset=fo, threshold=1e6))
    msgs = _stream(arm, np.random.default_rng(12), n_msgs=12)
    for msg in msgs[:10]:
        assert js.step(*msg).verdict == 'cycle'
    js.cycle.reset('requested')
    restarts = js.counts[RESTARTED]
    got = js.step(*msgs[10])
    assert js.counts[RESTARTED] == restarts + 1         # made by the compiled call
    res = got.result
    assert got.verdict == 'cycle' and res.observer == 'reset' and res.reset_reason == 'requested'
    assert res.residual is None
    np.testing.assert_array_equal(js.cycle.observer.residual, np.zeros(7))
    got = js.step(*msgs[11])
    assert got.result.observer == 'update'
    eps = js.cycle.observer.friction_velocity_eps

    def sample(msg):
        _, q, v, tau, sec, nanosec, _ = msg
        d = rd.compute_all_terms(arm, q, v, rd.Data(arm))
        beta = d.C.T @ v - d.g - (fv * v + fc * np.tanh(v / eps) + fo)
        return d.M @ v, beta, tau, sec * NS + nanosec
    p0, beta0, _, t0 = sample(msgs[10])
    p1, beta1, tau1, t1 = sample(msgs[11])
    dt = (t1 - t0) / NS
    r1 = (1.0 - np.exp(-gain * dt)) * ((p1 - p0) / dt - tau1 - 0.5 * (beta0 + beta1))
    # rounding only (|r1| ~ 0.04 N m): worst 8.7e-15 N m over three seeds, tolerance 3x
    np.testing.assert_allclose(got.result.residual, r1, rtol=0, atol=3e-14)
