"""dynamics_node under abuse: thousands of randomized joint states, most of them malformed.

One node process (bundled 7-DoF arm, observer on). The test publishes FUZZ_MESSAGES (default
3000) joint states in batches, waits after each batch until the node has answered every valid
one so far (the batches are far smaller than the node's input queue, so nothing is dropped), and
checks:

* the node never dies and logs no traceback;
* the ~/dynamics messages are exactly the answers to the valid joint states, in order: no output
  for any invalid input, one for every valid one;
* every answer carries its joint state's stamp and the core library's M, C, dM/dt, g at that
  state (computed here; any joint order, extra names ignored);
* every ~/external_torque and ~/contact_estimate belongs to a valid joint state with efforts and
  is finite; every ~/christoffel belongs to a valid one;
* every rejection kind of the node's input policy appears in its log (one throttle per kind).

Input policy checked (README "Input policy"): stamps must be normalized (nanosec < 1e9), not
zero once the source sends stamps, not more than ``stamp_max_lead`` (1 s) ahead of the node
clock, and not earlier than the last accepted one unless they jump back by more than
``stamp_reset_jump`` (1 s), which is a source reset (accepted; the observer re-initializes);
positions within ``max_abs_position``, velocities and efforts within ``input_limit_factor``
times the URDF limits; finite; every required joint exactly once; array lengths consistent.

The counts per kind are printed (``pytest -s`` or the report of a failure).
"""
import collections
import math
import os
import sys
import time

import numpy as np
import pytest

import ros_dynamics as rd

from test_node_support import ARM7, dynamics_arrays, next_stamp, read, running_node

pytestmark = pytest.mark.ros


N_MESSAGES = int(os.environ.get('FUZZ_MESSAGES', '10000'))
BATCH = 60
SEED = int(os.environ.get('FUZZ_SEED', '20261122'))
LIMIT_FACTOR = 2.0       # input_limit_factor (node default)
HUGE = (1e300, -1e300, sys.float_info.max, 1e20, -1e12)
NONFINITE = (math.nan, math.inf, -math.inf)
SKIP = set(filter(None, os.environ.get('FUZZ_SKIP', '').split(',')))

# relative frequencies; valid kinds first
KINDS = {
    'valid': 20, 'valid_permuted_extra': 8, 'valid_no_effort': 4, 'valid_same_stamp': 2,
    'valid_huge_extra_name': 1, 'valid_nonfinite_in_extra': 2, 'source_reset': 1,
    'nonfinite_position': 3, 'nonfinite_velocity': 3, 'nonfinite_effort': 3,
    'huge_position': 2, 'huge_velocity': 3, 'huge_effort': 3,
    'over_velocity_limit': 2, 'over_effort_limit': 2,
    'short_position': 2, 'long_position': 1, 'bad_velocity_length': 2, 'bad_effort_length': 2,
    'empty_velocity': 2, 'empty_arrays': 2, 'no_names': 2, 'unknown_names_only': 2,
    'missing_joint': 2, 'duplicate_joint': 2, 'huge_name_instead_of_joint': 1,
    'stamp_backwards': 3, 'stamp_zero': 2, 'stamp_far_future': 2, 'stamp_ahead_of_clock': 1,
    'nanosec_unnormalized': 2,
}
KINDS = {k: w for k, w in KINDS.items() if k not in SKIP}
VALID_KINDS = {k for k in KINDS if k.startswith('valid') or k == 'source_reset'}

# a fragment of every rejection reason the node must have logged (each kind has its own
# throttle, so each appears at least once)
LOG_TEXTS = {'nonfinite_position': 'NaN or inf', 'short_position': 'positions for',
             'bad_velocity_length': 'velocities for', 'bad_effort_length': 'efforts for',
             'missing_joint': 'missing required joint', 'duplicate_joint': 'named more than once',
             'stamp_backwards': 'earlier than the last', 'stamp_zero': 'zero stamp',
             'stamp_far_future': 'ahead of the node clock', 'nanosec_unnormalized': 'nanosec',
             'over_velocity_limit': 'velocity limit', 'over_effort_limit': 'effort limit',
             'huge_position': 'position bound', 'source_reset': 'source reset'}


class Fuzzer:
    """Generates (kind, JointState, expected (q, v, has_effort) or None for invalid)."""

    def __init__(self, model, seed):
        self.rng = np.random.default_rng(seed)
        self.names = list(model.joint_names)
        self.n = len(self.names)
        lim = joint_limits(model)
        self.vmax = np.array([lim[j]['velocity'] for j in self.names])
        self.emax = np.array([lim[j]['effort'] for j in self.names])
        self.t = time.time_ns() - 200 * 1_000_000_000   # stamps in the node clock's past
        self.last = None   # stamp of the last valid (accepted) joint state

    def state(self):
        r = self.rng
        return (r.uniform(-2.0, 2.0, self.n), r.uniform(-1, 1, self.n) * self.vmax,
                r.uniform(-1, 1, self.n) * self.emax)

    def next_stamp(self):
        self.t += int(self.rng.integers(200_000, 2_000_000))   # 0.2..2 ms
        return self.t

    @staticmethod
    def msg(names, q, v, e, stamp_ns=None, sec=None, nanosec=None):
        from sensor_msgs.msg import JointState
        m = JointState()
        if stamp_ns is not None:
            sec, nanosec = divmod(int(stamp_ns), 1_000_000_000)
        m.header.stamp.sec, m.header.stamp.nanosec = int(sec), int(nanosec)
        m.name = list(names)
        m.position = [float(x) for x in q]
        m.velocity = [float(x) for x in v]
        m.effort = [float(x) for x in e]
        return m

    def make(self, kind):
        r, names, n = self.rng, self.names, self.n
        q, v, e = self.state()
        i = int(r.integers(n))
        stamp = self.next_stamp()
        expected = (q, v, True)

        def bad_value(arr, pool):
            arr = arr.copy()
            arr[i] = pool[int(r.integers(len(pool)))] * (1 if r.random() < 0.5 else -1)
            return arr

        if kind == 'valid':
            m = self.msg(names, q, v, e, stamp)
        elif kind in ('valid_permuted_extra', 'valid_huge_extra_name', 'valid_nonfinite_in_extra'):
            perm = r.permutation(n)
            extra = ['gripper_finger', 'gripper_finger', f'extra_{int(r.integers(1000))}']
            if kind == 'valid_huge_extra_name':
                extra.append('x' * int(r.integers(10_000, 100_000)))
            k = len(extra)
            bad = NONFINITE + HUGE if kind == 'valid_nonfinite_in_extra' else (0.5,)
            fill = [bad[int(r.integers(len(bad)))] for _ in range(k)]
            m = self.msg([names[j] for j in perm] + extra, np.r_[q[perm], fill],
                         np.r_[v[perm], fill], np.r_[e[perm], fill], stamp)
        elif kind == 'valid_no_effort':
            m = self.msg(names, q, v, [], stamp)
            expected = (q, v, False)
        elif kind == 'valid_same_stamp':
            stamp = self.last if self.last is not None else stamp
            m = self.msg(names, q, v, e, stamp)
        elif kind == 'source_reset':
            stamp = self.t = self.t - int(r.integers(5, 60)) * 1_000_000_000
            m = self.msg(names, q, v, e, stamp)
        elif kind == 'nonfinite_position':
            m = self.msg(names, bad_value(q, NONFINITE), v, e, stamp)
        elif kind == 'nonfinite_velocity':
            m = self.msg(names, q, bad_value(v, NONFINITE), e, stamp)
        elif kind == 'nonfinite_effort':
            m = self.msg(names, q, v, bad_value(e, NONFINITE), stamp)
        elif kind == 'huge_position':
            m = self.msg(names, bad_value(q, HUGE), v, e, stamp)
        elif kind == 'huge_velocity':
            m = self.msg(names, q, bad_value(v, HUGE), e, stamp)
        elif kind == 'huge_effort':
            m = self.msg(names, q, v, bad_value(e, HUGE), stamp)
        elif kind == 'over_velocity_limit':
            v = v.copy()
            v[i] = math.copysign(LIMIT_FACTOR * self.vmax[i] * r.uniform(1.01, 3), r.normal())
            m = self.msg(names, q, v, e, stamp)
        elif kind == 'over_effort_limit':
            e = e.copy()
            e[i] = math.copysign(LIMIT_FACTOR * self.emax[i] * r.uniform(1.01, 3), r.normal())
            m = self.msg(names, q, v, e, stamp)
        elif kind == 'short_position':
            m = self.msg(names, q[:int(r.integers(1, n))], v, e, stamp)
        elif kind == 'long_position':
            m = self.msg(names, np.r_[q, 0.0, 1.0], v, e, stamp)
        elif kind == 'bad_velocity_length':
            m = self.msg(names, q, v[:int(r.integers(1, n))] if r.random() < 0.5
                         else np.r_[v, 0.0], e, stamp)
        elif kind == 'bad_effort_length':
            m = self.msg(names, q, v, e[:int(r.integers(1, n))] if r.random() < 0.5
                         else np.r_[e, 0.0], stamp)
        elif kind == 'empty_velocity':
            m = self.msg(names, q, [], e, stamp)
        elif kind == 'empty_arrays':
            m = self.msg(names, [], [], [], stamp)
        elif kind == 'no_names':
            m = self.msg([], [], [], [], stamp)
        elif kind == 'unknown_names_only':
            k = int(r.integers(1, 10))
            m = self.msg([f'nobody_{j}' for j in range(k)], np.zeros(k), np.zeros(k),
                         np.zeros(k), stamp)
        elif kind == 'missing_joint':
            keep = [j for j in range(n) if j != i]
            m = self.msg([names[j] for j in keep], q[keep], v[keep], e[keep], stamp)
        elif kind == 'duplicate_joint':
            m = self.msg(names + [names[i]], np.r_[q, q[i]], np.r_[v, v[i]], np.r_[e, e[i]],
                         stamp)
        elif kind == 'huge_name_instead_of_joint':
            bad_names = list(names)
            bad_names[i] = names[i] * int(r.integers(2000, 20000))
            m = self.msg(bad_names, q, v, e, stamp)
        elif kind == 'stamp_backwards':
            if self.last is None:
                return self.make('valid')
            # less than stamp_reset_jump (1 s) before the last accepted stamp: out of order
            m = self.msg(names, q, v, e, self.last - int(r.integers(1, 900_000_000)))
        elif kind == 'stamp_zero':
            if self.last is None:
                return self.make('valid')
            m = self.msg(names, q, v, e, sec=0, nanosec=0)
        elif kind == 'stamp_far_future':
            m = self.msg(names, q, v, e, sec=2147483647, nanosec=int(r.integers(1_000_000_000)))
        elif kind == 'stamp_ahead_of_clock':
            m = self.msg(names, q, v, e, time.time_ns() + int(r.integers(5, 10**6)) * 10**9)
        elif kind == 'nanosec_unnormalized':
            m = self.msg(names, q, v, e, sec=stamp // 1_000_000_000,
                         nanosec=(4294967295 if r.random() < 0.5
                                  else int(r.integers(1_000_000_000, 4294967295))))
        else:
            raise AssertionError(kind)
        if kind not in VALID_KINDS:
            return kind, m, None
        s = m.header.stamp
        self.last = s.sec * 1_000_000_000 + s.nanosec
        return kind, m, expected


def joint_limits(model):
    """{joint: {'velocity': ..., 'effort': ...}} from the model (or the URDF text)."""
    lim = getattr(model, 'joint_limits', None)
    if lim:
        return lim
    import xml.etree.ElementTree as ET
    out = {}
    for j in ET.fromstring(read(ARM7)).iter('joint'):
        el = j.find('limit')
        if el is not None:
            out[j.get('name')] = {k: float(el.get(k)) for k in ('velocity', 'effort')}
    return out


def stamp_of(msg):
    return msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec


@pytest.fixture(scope='module')
def fuzz_node(rclpy_context, ros_env, tmp_path_factory):
    tmp = str(tmp_path_factory.mktemp('fuzz'))
    params = {'robot_description': read(ARM7), 'log_throttle_sec': 1.0, 'catch_up': False,
              'christoffel_decimation': 7}
    with running_node(rclpy_context, ros_env, tmp, 'fuzz', params) as (proc, probe):
        # a first answer, sent until it arrives (the node's writer may match our reader after
        # ours matched it); stamps an hour in the past, before the fuzzer's
        q = np.zeros(7)
        names = rd.load_urdf(ARM7).joint_names
        assert probe.send_until_answered(lambda: probe.joint_state(names, q, q, q, next_stamp()))
        probe.spin_for(0.5)
        for received in probe.received.values():      # the test judges its own inputs' answers
            received.clear()
        yield proc, probe


def test_fuzzed_joint_states(fuzz_node):
    proc, probe = fuzz_node
    model = rd.load_urdf(ARM7)
    fz = Fuzzer(model, SEED)
    kinds, weights = zip(*KINDS.items())
    p = np.array(weights, dtype=float) / sum(weights)
    sent = []           # (kind, stamp, expected or None)
    counts = collections.Counter()
    n_valid = 0
    t0 = time.monotonic()
    base = probe.counts()['dynamics']
    for start in range(0, N_MESSAGES, BATCH):
        for _ in range(min(BATCH, N_MESSAGES - start)):
            kind, msg, expected = fz.make(kinds[int(fz.rng.choice(len(kinds), p=p))])
            counts[kind] += 1
            probe.js_pub.publish(msg)
            sent.append((kind, msg, expected))
            n_valid += expected is not None
        assert proc.alive(), proc.log()[-3000:]
        if not probe.spin_until(lambda: probe.counts()['dynamics'] - base >= n_valid):
            break   # valid joint states not answered: stop here and report
    probe.spin_for(0.5)
    elapsed = time.monotonic() - t0
    valid = [(kind, msg, exp) for kind, msg, exp in sent if exp is not None]
    invalid = collections.Counter(kind for kind, _, exp in sent if exp is None)
    print(f'\nfuzz: {len(sent)} joint states in {elapsed:.1f} s: {len(valid)} valid, '
          f'{sum(invalid.values())} invalid')
    for kind in KINDS:
        print(f'  {kind:28s} {counts[kind]:5d}  {"valid" if kind in VALID_KINDS else "invalid"}')

    outputs = probe.received['dynamics'][base:]
    by_stamp = collections.defaultdict(list)
    for kind, msg, exp in sent:
        by_stamp[stamp_of(msg)].append(kind)
    # summary by kind (stamps shared by several inputs are left out): invalid ones answered,
    # valid ones not answered
    answered = collections.Counter(stamp_of(m) for m in outputs)
    wrong = collections.Counter()
    for kind, msg, exp in sent:
        st = stamp_of(msg)
        if len(by_stamp[st]) == 1 and bool(answered[st]) != (exp is not None):
            wrong[kind] += 1
    if wrong:
        print('kinds handled wrongly (invalid answered / valid unanswered): ' + ', '.join(
            f'{k} {wrong[k]}/{counts[k]}' for k in KINDS if wrong[k]))
    # the answers are exactly the valid joint states, in order
    for k, out in enumerate(outputs):
        if k >= len(valid) or stamp_of(out) != stamp_of(valid[k][1]):
            culprits = [kd for kd in by_stamp.get(stamp_of(out), []) if kd not in VALID_KINDS]
            raise AssertionError(
                f'output {k} (stamp {stamp_of(out)}) answers no valid joint state in order; '
                f'inputs with that stamp: {by_stamp.get(stamp_of(out))}; invalid kinds among '
                f'them: {culprits}; {len(outputs)} outputs for {len(valid)} valid inputs')
    assert len(outputs) == len(valid), (
        f'{len(valid) - len(outputs)} valid joint states not answered; '
        f'first unanswered kind: {valid[len(outputs)][0]}')
    # every answer holds the core library's terms at its state
    worst = 0.0
    for (kind, msg, (q, v, _)), out in zip(valid, outputs):
        d = rd.dynamics(model, q, v)
        mq, mv, M, C, Mdot, g = dynamics_arrays(out)
        assert np.array_equal(mq, q) and np.array_equal(mv, v), kind
        err = max(float(np.abs(M - d.M).max()), float(np.abs(C - d.C).max()),
                  float(np.abs(Mdot - d.Mdot).max()), float(np.abs(g - d.g).max()))
        assert err <= 1e-12, (kind, err)
        worst = max(worst, err)
    # observer and Christoffel outputs only for valid joint states (with efforts), all finite
    with_effort = {stamp_of(msg) for _, msg, exp in valid if exp[2]}
    valid_stamps = {stamp_of(msg) for _, msg, _ in valid}
    for m in probe.received['external_torque']:
        assert stamp_of(m) in with_effort
        assert np.isfinite(np.asarray(m.effort)).all()
    for m in probe.received['contact_estimate']:
        assert stamp_of(m) in with_effort
        assert np.isfinite(np.asarray(m.external_torque)).all()
        w = m.wrench
        assert all(math.isfinite(x) for x in (w.force.x, w.force.y, w.force.z, w.torque.x,
                                               w.torque.y, w.torque.z))
    for m in probe.received['christoffel']:
        assert stamp_of(m) in valid_stamps
    n_ext = len(probe.received['external_torque'])
    print(f'answers: {len(outputs)} ~/dynamics (max |error| vs core {worst:.1e}), {n_ext} '
          f'~/external_torque, {len(probe.received["contact_estimate"])} ~/contact_estimate')
    assert proc.alive()
    log = proc.log()
    assert 'Traceback' not in log
    missing = [t for k, t in LOG_TEXTS.items() if counts[k] and t not in log]
    assert not missing, f'rejection kinds never logged: {missing}'
