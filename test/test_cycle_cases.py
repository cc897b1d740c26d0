"""The node's one cycle (JointStateCycle: the compiled step, then what follows it) on a stream
that carries every case the input policy names, each verdict and reason checked against what
the policy says, each cycle's numbers against the core called directly.

The stream is physical (the torques are the model's inverse dynamics of the motion, plus
noise) and carries: a NaN, a velocity beyond its bound, a stamp going back, the same stamp
again, a stamp ahead of the clock, a non-normalized stamp, another name order, a partial
source, a message without efforts, a short velocity, a contact, a gap (bridged), a source
reset, a clock reset and a reset request.  Per message: the verdict and its reason or notes;
per cycle: the terms written where they belong in the output buffers equal the core's
``rd.dynamics`` at the state, the residual equals a standalone ``rd.MomentumObserver`` fed the
same samples (its restarts where the cycle restarts, with the reasons the policy gives), the
contact isolated on the joint that feels it.
"""
import numpy as np
import pytest

import ros_dynamics as rd
from ros_dynamics import testing
from ros_dynamics.estimation.cycle_state import ObserverSettings
from ros_dynamics.estimation.cycle_kernel import (BRIDGED, INCOMPLETE, NO_EFFORT, OK,
                                                 REJECTED_BOUNDS, REJECTED_LAYOUT,
                                                 REJECTED_STAMP, RESTARTED, STATE)
from ros_dynamics.estimation.joint_input import InputBounds, JointStateAssembler
from ros_dynamics.estimation.cycle_state import CycleState
from ros_dynamics.estimation.cycle import JointStateCycle

pytestmark = pytest.mark.core
NS = 10**9


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
    """(messages (names, pos, vel, eff, sec, nanosec, now_ns) at 1 kHz with every case, what
    the policy says of each: None for a cycle, else the refusal's or the note's kind)."""
    names = tuple(model.joint_names)
    n = len(names)
    nb = model.nv - n
    w, t_ns, msgs, expect = 2.0, 100 * NS, [], []
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
        kind = {50: 'nonfinite', 60: 'velocity', 70: 'backwards', 100: 'future',
                200: 'gap', 260: 'source_reset', 300: 'held', 320: 'no_effort',
                330: 'velocities', 360: 'nanosec'}.get(k)
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
        expect.append(kind)
        if k == 80:
            msgs.append(msgs[-1])                              # the same stamp again
            expect.append('same')
    return msgs, expect


def _stepper(model, base, outputs=None, coordinates='joint', effort_source='joint_state',
             **settings):
    cycle = CycleState(model, coordinates,
                       ObserverSettings(model, **settings) if settings else None)
    asm = JointStateAssembler(model.joint_names, InputBounds(model), cycle.coords.joint_map)
    q, v, tau = np.zeros(model.nq), np.zeros(model.nv), np.zeros(model.nv)
    q[:len(base[0])], v[:len(base[1])] = base
    return JointStateCycle(asm, cycle, q, v, tau, outputs, effort_source, commanded_timeout=0.5)


def _kind(out):
    """The verdict's kind: the refusal's, the first note's, 'held' or None (a plain cycle)."""
    if out.verdict == 'refused':
        return out.refusal[0]
    if out.notes:
        return out.notes[0][0]
    return None if out.verdict == 'cycle' else out.verdict


def _run(model, msgs, expect, events=None, observer=True, bases=None, coordinates='joint',
         commands=None, **more_settings):
    """Every message through one cycle; each verdict against ``expect``, each cycle against
    the core and a standalone observer (module text).  Returns (the cycle, [cycles in contact,
    those with the contact isolated on joint 3])."""
    nb = model.nv - len(model.joint_names)
    base = ((np.array([0.1, 0.0, 0.5, 0.0, 0.0, 0.0, 1.0]), np.zeros(6)) if nb
            else (np.zeros(0), np.zeros(0)))
    # a floating base held in place: its residual is the support wrench, not a contact
    threshold = np.r_[np.full(nb, 1e6), np.full(model.nv - nb, 8.0)]
    settings = dict(gain=40.0, threshold=threshold, friction_viscous=0.3,
                    friction_coulomb=0.4, torque_offset=0.25, **more_settings) if observer else {}
    out = Outputs(model.nv)
    source = 'joint_state' if commands is None else 'commanded_torque'
    js = _stepper(model, base, (out.dyn, out.grav, out.ext, out.offsets), coordinates, source,
                  **settings)
    st = js.cycle.settings      # (per coordinate: no friction on a floating base's entries)
    ref = rd.MomentumObserver(model, gain=st.gain, friction_viscous=st.friction_viscous,
                              friction_coulomb=st.friction_coulomb,
                              torque_offset=st.torque_offset) if observer else None
    oc = rd.output_coordinates(model, coordinates)
    odom = base if nb else None
    contact, last_t = [0, 0], None
    for k, msg in enumerate(msgs):
        for what in (events or {}).get(k, ()):
            what(js.assembler, js.cycle)
        b = (bases or {}).get(k, odom)
        cmd = commands(k) if commands is not None else None
        got = js.step(*msg, base=b, command=cmd, christoffel=k % 10 == 0)
        if expect is not None and expect[k] != 'any':
            assert _kind(got) == (expect[k] if expect[k] != 'same' else None), (
                k, got.verdict, got.refusal, got.notes)
        if got.verdict != 'cycle':
            continue
        res = got.result
        q, v = js.q.copy(), js.v.copy()
        d = rd.dynamics(model, q, v)
        if got.written:            # the compiled step wrote the outputs where they belong
            # (the same kernel: equal to the last bit, as measured over three seeds)
            for a, x in zip(out.terms(model.nv), (d.M, d.C, d.Mdot, d.g)):
                np.testing.assert_array_equal(a, x)
            np.testing.assert_array_equal(out.grav[2:2 + model.nv], d.g)
        if coordinates == 'joint':
            np.testing.assert_array_equal(res.out.d.M, d.M)
        else:                      # the published coordinates, made after the compiled step
            want = oc.dynamics(q, v)
            for f in ('M', 'C', 'Mdot', 'g'):
                np.testing.assert_array_equal(getattr(res.out.d, f), getattr(want, f))
        if k % 10 == 0:
            np.testing.assert_array_equal(res.out.gamma, oc.christoffel(q))
        else:
            assert res.out.gamma is None
        t = got.t_ns
        if ref is None or res.observer is None:
            assert res.residual is None
            continue
        if res.observer == 'reset':
            ref.reset(q, v, got.tau)
            assert res.residual is None
        else:
            r = ref.update(q, v, got.tau, (t - last_t) / NS, bridge=res.observer == 'bridge')
            # rounding only (the friction term evaluated in compiled code): worst 2.7e-13 N m
            # over three seeds on the arm and the quadruped, tolerance 3x
            np.testing.assert_allclose(res.residual, r, rtol=0, atol=8e-13)
            if got.written:
                np.testing.assert_array_equal(out.ext[1:1 + model.nv], res.residual)
            if res.contact.in_contact:
                contact[0] += 1
                contact[1] += res.contact.links == [js.cycle.detector.joint_links[nb + 2]]
        last_t = t
    return js, contact


def test_every_case_of_the_input_policy():
    arm = rd.load_urdf(rd.bundled_urdf('arm7'))
    msgs, expect = _stream(arm, np.random.default_rng(3))
    events = {400: [lambda a, c: a.clock_reset()],
              450: [lambda a, c: c.reset('requested')],
              500: [lambda a, c: a.clock_reset()]}      # and stamps that do not go back
    # after the clock reset, a stamp 3 ms back is a 'clock_reset' restart
    n, s, ns, now = msgs[401][0], msgs[401][4], msgs[401][5], msgs[401][6]
    msgs[401] = msgs[401][:4] + ((s * NS + ns - 3 * 10**6) // NS, (s * NS + ns - 3 * 10**6) % NS,
                                 now)
    expect[401] = 'clock_reset'
    js, contact = _run(arm, msgs, expect, events)
    assert js.outcome.result is not None
    assert contact[0] >= 10 and contact[1] == contact[0], contact    # isolated on joint 3
    assert js.counts[OK] >= 0.8 * len(msgs), js.counts
    # restarts: the first sample, the source reset, the clock reset, the request
    assert js.counts[RESTARTED] == 4, js.counts
    assert js.counts[REJECTED_STAMP] == 3, js.counts         # back (70), ahead (100), 360
    assert js.counts[REJECTED_LAYOUT] == 1, js.counts        # the short velocity (330)
    assert js.counts[REJECTED_BOUNDS] == 2, js.counts        # the NaN (50), the velocity (60)
    assert js.counts[BRIDGED] == 1 and js.cycle.bridged == 1  # the 30 ms gap


def test_the_cycle_without_observer_and_on_a_floating_base():
    quad = rd.load_urdf(rd.bundled_urdf('quadruped'), floating_base=True)
    msgs, expect = _stream(quad, np.random.default_rng(4), n_msgs=120)
    bad = (np.array([0.1, 0.0, 0.5, 0.0, 0.0, 0.6, 1.0]), np.zeros(6))   # |quaternion| != 1
    expect[40] = 'output'
    js, _ = _run(quad, msgs, expect, bases={40: bad})
    assert js.counts[OK] >= 90, js.counts
    assert js.counts[STATE] == 1, js.counts
    arm = rd.load_urdf(rd.bundled_urdf('arm7'))
    msgs, expect = _stream(arm, np.random.default_rng(5), n_msgs=120)
    js, _ = _run(arm, msgs, [None if e == 'same' else e for e in expect], observer=False)
    assert js.counts[OK] >= 100, js.counts


def test_no_odom_yet_is_refused():
    quad = rd.load_urdf(rd.bundled_urdf('quadruped'), floating_base=True)
    js = _stepper(quad, (np.zeros(0), np.zeros(0)), gain=40.0)
    msgs, _ = _stream(quad, np.random.default_rng(4), n_msgs=2)
    got = js.step(*msgs[0])
    assert got.verdict == 'refused' and got.refusal[0] == 'no_odom', got.refusal


def test_the_cycle_with_contact_frames():
    """The quadruped with its four feet as contact frames: the forces at them are estimated at
    every cycle that updates the observer (the feet carry the held base's weight)."""
    quad = rd.load_urdf(rd.bundled_urdf('quadruped'), floating_base=True)
    msgs, expect = _stream(quad, np.random.default_rng(8), n_msgs=200)
    js, _ = _run(quad, msgs, ['any'] * len(msgs), contact_frames=(
        'LF_foot', 'RF_foot', 'LH_foot', 'RH_foot'), contact_force_threshold=5.0)
    assert js.fast_cycles >= 0.8 * len(msgs), js.counts
    assert js.outcome.result.forces is not None


def test_the_cycle_in_other_published_coordinates():
    """Centre-of-mass coordinates on the quadruped: the compiled step makes the cycle in the
    model's coordinates (into buffers of its own, not the messages: not ``written``) and the
    published ones are made after it, equal to rd.output_coordinates' (checked in _run)."""
    quad = rd.load_urdf(rd.bundled_urdf('quadruped'), floating_base=True)
    msgs, expect = _stream(quad, np.random.default_rng(9), n_msgs=150)
    js, _ = _run(quad, msgs, expect, coordinates='center_of_mass')
    assert js.fast_cycles >= 0.8 * len(msgs), js.counts
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
        got = js.step(tuple(INDEPENDENT), qbar, np.zeros(3), np.zeros(3), 10, k * 10**6, 0)
        assert got.verdict == 'cycle', got.refusal
    np.testing.assert_allclose(got.result.out.q, qbar, rtol=0, atol=1e-12)
    assert len(js.q) == model.nq == 5        # the followers made from the mimic relation
    np.testing.assert_allclose(oc.state(js.q, np.zeros(5))[0], qbar, rtol=0, atol=1e-12)
    np.testing.assert_allclose(got.result.out.d.M, oc.dynamics(js.q, np.zeros(5)).M, rtol=0,
                               atol=1e-12)
    got = js.step(tuple(INDEPENDENT) + ('finger_left',), np.r_[qbar, 0.0], np.zeros(4),
                  np.zeros(4), 10, 5 * 10**6, 0)
    assert got.refusal[0] == 'duplicate', got.refusal


def test_the_cycle_with_the_commanded_torque():
    """effort_source 'commanded_torque': the observer's torque is the latest command (none yet,
    then one, then a stale one: no observer update, noted); the messages' own efforts are
    still checked against their bounds."""
    import time
    arm = rd.load_urdf(rd.bundled_urdf('arm7'))
    msgs, expect = _stream(arm, np.random.default_rng(10), n_msgs=300)
    command = np.linspace(-3.0, 3.0, 7)

    def commands(k):
        if k < 20:
            return None                                        # no command yet
        stale = 150 <= k < 170                                 # received 2 s ago (> 0.5 s)
        return (command + 0.01 * k, time.monotonic_ns() - (2 * NS if stale else 0))
    for k in range(len(msgs)):
        if expect[k] in (None, 'same', 'no_effort'):       # (the commands' torque, not efforts)
            expect[k] = 'no_cmd' if k < 20 else 'stale_cmd' if 150 <= k < 170 else None
    expect[170] = 'gap'             # no observer update for 20 ms: the observer bridges it
    js, _ = _run(arm, msgs, expect, commands=commands)
    assert js.fast_cycles >= 0.8 * len(msgs), js.counts
    assert js.counts[NO_EFFORT] >= 35, js.counts


def test_a_declined_message_changes_nothing():
    """A message whose state the compiled call refuses at its terms (here: a floating base
    whose quaternion is not a unit one) leaves the observer and the outputs as they were and
    is refused with the core's reason."""
    quad = rd.load_urdf(rd.bundled_urdf('quadruped'), floating_base=True)
    out = Outputs(quad.nv)
    base = (np.array([0.1, 0.0, 0.5, 0.0, 0.0, 0.0, 1.0]), np.zeros(6))
    js = _stepper(quad, base, (out.dyn, out.grav, out.ext, out.offsets), gain=40.0,
                  threshold=np.r_[np.full(6, 1e6), np.full(12, 8.0)])
    msgs, _ = _stream(quad, np.random.default_rng(6), n_msgs=45)
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
    msgs, _ = _stream(arm, np.random.default_rng(6), n_msgs=50)    # (a NaN at 50: not here)
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
    full, _ = _stream(model, np.random.default_rng(7), n_msgs=500)
    msgs = []
    for k, (_, pos, vel, eff, sec, nanosec, now) in enumerate(full):
        if k % 10 == 3 and not 300 <= k < 420:             # the gripper, 2 ms behind
            t = sec * NS + nanosec - 2 * 10**6
            e = eff[7:] if not 150 <= k < 200 else np.zeros(0)
            msgs.append((names[7:], pos[7:], vel[7:], e, t // NS, t % NS, now))
        msgs.append((names[:7], pos[:7], vel[:7], eff[:7], sec, nanosec, now))
    js, _ = _run(model, msgs, None)
    assert js.fast_cycles >= 0.75 * 500, js.summary()
    assert js.counts[NO_EFFORT] >= 30, js.counts              # no efforts
    assert js.counts[INCOMPLETE] >= 1, js.counts              # expired: incomplete


def test_replay_runs_the_node_cycle_and_finds_the_plant_torque():
    """Recorded samples replayed through the node's own cycle (node_cycle + replay, what
    calibration uses): a plant whose joint 3 feels a constant external torque from t = 0.2 s
    (its torques the model's inverse dynamics minus that torque, so M a + C v + g = tau +
    tau_ext holds exactly); the residual converges to the plant's torque with K/(s + K), the
    usual samples take the compiled call, and a sample beyond the input bounds is refused with
    its reason and changes nothing."""
    from ros_dynamics.estimation.cycle import node_cycle, replay
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
    msgs, expect = _stream(arm, np.random.default_rng(3), n_msgs=300)
    _, seen = _run(arm, msgs, expect, threshold_velocity=1.0, threshold_torque=0.05)
    assert seen[0] >= 10 and seen[1] == seen[0], seen
    _, hidden = _run(arm, msgs, expect, threshold_velocity=1.0, threshold_torque=2.0)
    assert hidden[0] < seen[0] - 10, (hidden, seen)


def test_two_drivers_restart_the_observer_in_the_compiled_call():
    """Two sources of 7 of 9 joints each (both drive), the second's stamps 0.5 ms behind the
    first's: each of its messages takes the observer's time back, a restart (its reason the
    step back, residual zero) that the compiled call makes as the pipeline does."""
    model = rd.load_urdf_string(testing.chain(9, seed=3))
    names = tuple(model.joint_names)
    msgs = []
    for _, pos, vel, eff, sec, nanosec, now in _stream(model, np.random.default_rng(11),
                                                       n_msgs=45)[0]:
        t = sec * NS + nanosec - 5 * 10**5
        msgs.append((names[:7], pos[:7], vel[:7], eff[:7], sec, nanosec, now))
        msgs.append((names[2:], pos[2:], vel[2:], eff[2:], t // NS, t % NS, now))
    js, _ = _run(model, msgs, None)
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
    from ros_dynamics.estimation.cycle import node_cycle
    arm = rd.load_urdf(rd.bundled_urdf('arm7'))
    gain, fv, fc, fo = 40.0, 0.3, 0.4, 0.25
    js = node_cycle(arm, ObserverSettings(arm, gain=gain, friction_viscous=fv,
                                          friction_coulomb=fc, torque_offset=fo, threshold=1e6))
    msgs, _ = _stream(arm, np.random.default_rng(12), n_msgs=12)
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
