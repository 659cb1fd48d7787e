"""The distributed protocol (tracker/broadcast.py) under simulated executions.

N workers (1..4) run one dataflow, ``input -> exchange -> concat -> branch -> feedback (+1) -> concat``, with the
branch's other output going to a sink. Each worker holds capabilities and consumes the messages that are queued at
*its* instance of an operator. It produces messages to any worker's instances (the exchange: the count is at the
target port, wherever the message is queued). It downgrades and drops capabilities. It only ever produces at a time
``>=`` a capability it holds, or at ``>= s(t)`` for a message at ``t`` that it consumes in the same action. Each action
is one atomic batch: a consumption together with the capability or messages it yields, a capability change alone, or
messages produced under a held capability. Workers may also hold several actions back and report them later as one
merged batch (like timely's demand mode). Every batch is broadcast to all N replicas, the sender's included, with
random delays. Delivery either reorders freely (even one worker's own batches; the replica holds back a batch until
its predecessors arrive) or uses FIFO channels per (sender, receiver).

Assertions, at every moment:

* no replica's frontier at any port is ahead of the true frontier. The true frontier comes from a tracker that
  applies every batch reported so far, in performance order: for each element ``t`` of the true frontier, the
  replica's frontier has an element ``<= t``;
* the true frontier equals the oracle's frontier from the reported counts. It is never ahead of the oracle's
  frontier from the actual state (reports may lag behind actions);
* when a message at ``(port, t)`` is produced, every replica still considers ``t`` possible at that port;

and once everything is delivered, all replicas agree with each other and with the truth (frontiers and counts). At
the end of the computation everything is empty. Also: vector V5 of timely-reference.md (three delivery orders, one
final state), duplicate delivery refused, and why a replica must not apply one worker's batches out of order.
"""

from __future__ import annotations

import random
from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests import oracle
from tracker.broadcast import Outbox, ProgressBatch, Replica, SenderOrder, consolidate
from tracker.reachability import Builder, Location, Source, Target
from tracker.timestamp import domain

# --- the dataflow -------------------------------------------------------------------------------------------

INPUT, CONCAT, BRANCH, FEEDBACK, SINK = 1, 2, 3, 4, 5


def dataflow(depth: int) -> oracle.Graph:
    """input(1) -> concat(2) -> branch(3) -> feedback(4) -> concat(2), branch(3) -> sink(5)."""
    loop = 1 if depth == 1 else (0, 1)
    g = oracle.Graph(depth)
    g.add_node(0, 0, 0)
    g.add_node(INPUT, 0, 1)
    g.add_node(CONCAT, 2, 1)
    g.add_node(BRANCH, 1, 2)
    g.add_node(FEEDBACK, 1, 1, [[[loop]]])
    g.add_node(SINK, 1, 0)
    g.add_edge(Source(INPUT, 0), Target(CONCAT, 0))
    g.add_edge(Source(CONCAT, 0), Target(BRANCH, 0))
    g.add_edge(Source(BRANCH, 0), Target(FEEDBACK, 0))
    g.add_edge(Source(FEEDBACK, 0), Target(CONCAT, 1))
    g.add_edge(Source(BRANCH, 1), Target(SINK, 0))
    return g


def covers(lower, upper) -> bool:
    """Antichain order: every element of ``upper`` has an element of ``lower`` that is ``<=`` it."""
    return oracle.dominates(lower, upper)


# --- the simulation -----------------------------------------------------------------------------------------


class Simulation:
    """Workers acting on real state, batches in flight to every replica, and the truth."""

    def __init__(self, peers: int, depth: int, rng: random.Random, delivery: str):
        self.rng = rng
        self.peers = peers
        self.depth = depth
        self.delivery = delivery
        self.g = dataflow(depth)
        self.paths = oracle.path_summaries(self.g)
        self.ports = self.g.ports()
        self.zero = oracle.identity(depth)
        self.steps_up = [1, 2] if depth == 1 else [(1, 0), (0, 1)]
        self.bound = 5 if depth == 1 else (3, 4)
        self.edges: dict[Location, list[Location]] = {}
        for s, t in self.g.edges:
            self.edges.setdefault(s, []).append(t)
        initial = [(Source(INPUT, 0), self.zero)]
        self.replicas = [Replica(self.g.builder(), peers, initial, worker=w) for w in range(peers)]
        self.truth = Replica(self.g.builder(), peers, initial)
        self.outboxes = [Outbox(w) for w in range(peers)]
        # actual state, per worker: capabilities held and messages queued at that worker's operator instances
        self.caps = [Counter({(Source(INPUT, 0), self.zero): 1}) for _ in range(peers)]
        self.msgs: list[Counter] = [Counter() for _ in range(peers)]
        self.unreported: list[list] = [[] for _ in range(peers)]  # actions held back by each worker
        self.reported = Counter({(Source(INPUT, 0), self.zero): peers})
        # in flight: per receiver, either a list (any order) or per-sender FIFO queues
        self.inflight: list[list[ProgressBatch]] = [[] for _ in range(peers)]
        self.channels: list[list[list]] = [[[] for _ in range(peers)] for _ in range(peers)]  # [receiver][sender]
        self.finishing = False
        self.batches_sent = 0

    # --- state -------------------------------------------------------------------------------------------

    def actual_counts(self) -> Counter:
        total: Counter = Counter()
        for w in range(self.peers):
            total.update(self.caps[w])
            total.update(self.msgs[w])
        return total

    def within_bound(self, t) -> bool:
        return oracle.le(t, self.bound)

    # --- actions -------------------------------------------------------------------------------------------

    def produce_to(self, src: Location, t) -> list:
        """Messages at time t to every target on src's edges, each queued at a random worker (the exchange)."""
        updates = []
        for tgt in self.edges.get(src, ()):
            w = self.rng.randrange(self.peers)
            for r in self.replicas:
                assert covers(r.frontier(tgt), [t]), f"replica {r.worker} closed {t} at {tgt} before a message at {t}"
            self.msgs[w][(tgt, t)] += 1
            updates.append((tgt, t, 1))
        return updates

    def possible_actions(self, w: int) -> list:
        """(action, weight) pairs: producing and consuming are common, dropping a capability is rare."""
        acts = []
        for (loc, t), c in self.caps[w].items():
            if c > 0:
                acts.append((("drop", loc, t), 1))
                if not self.finishing:
                    acts.append((("downgrade", loc, t), 2))
                    if self.edges.get(loc):
                        acts.append((("produce", loc, t), 6))
        for (loc, t), c in self.msgs[w].items():
            if c > 0:
                acts.append((("consume", loc, t), 4))
        return acts

    def act(self, w: int, action) -> list:
        kind, loc, t = action
        rng = self.rng
        if kind == "drop":
            self.caps[w][(loc, t)] -= 1
            return [(loc, t, -1)]
        if kind == "downgrade":
            new = oracle.add(rng.choice(self.steps_up), t)
            if not self.within_bound(new):
                self.caps[w][(loc, t)] -= 1
                return [(loc, t, -1)]
            self.caps[w][(loc, t)] -= 1
            self.caps[w][(loc, new)] += 1
            return [(loc, t, -1), (loc, new, 1)]
        if kind == "produce":
            u = oracle.add(rng.choice([self.zero] + self.steps_up), t)
            if not self.within_bound(u):
                u = t
            return self.produce_to(loc, u)
        # consume one message at loc (a target); what it yields goes in the same batch
        self.msgs[w][(loc, t)] -= 1
        updates = [(loc, t, -1)]
        inputs, outputs, rows = self.g.nodes[loc.node]
        options = [(o, s) for o in range(outputs) for s in oracle.minimal(rows[loc.port][o])]
        if self.finishing or not options:
            return updates
        o, s = rng.choice(options)
        u = oracle.add(s, t)
        if loc.node == BRANCH:  # the loop's exit condition: iterate while within bound, then leave
            o = rng.choice([0, 1]) if self.within_bound(oracle.add(self.steps_up[-1], u)) else 1
        if not self.within_bound(u):
            return updates
        if rng.random() < 0.3:
            u = oracle.add(rng.choice(self.steps_up), u) if self.within_bound(oracle.add(self.steps_up[-1], u)) else u
        src = Source(loc.node, o)
        choice = rng.choice(["capability", "produce", "both", "nothing"])
        if choice in ("capability", "both"):
            self.caps[w][(src, u)] += 1
            updates.append((src, u, 1))
        if choice in ("produce", "both"):
            updates.extend(self.produce_to(src, u))
        return updates

    # --- reporting and delivery -----------------------------------------------------------------------------

    def report(self, w: int) -> None:
        """Send worker w's held-back actions as one merged, atomic batch."""
        updates = [u for action in self.unreported[w] for u in action]
        self.unreported[w] = []
        batch = self.outboxes[w].batch(updates)
        if batch is None:
            return
        self.batches_sent += 1
        for loc, t, d in batch.updates:
            self.reported[(loc, t)] += d
        self.truth.receive(batch)  # the truth: every batch, in performance order, at once
        for r in range(self.peers):
            if self.delivery == "fifo":
                self.channels[r][w].append(batch)
            else:
                self.inflight[r].append(batch)

    def deliverable(self) -> list[tuple[int, int]]:
        if self.delivery == "fifo":
            return [(r, s) for r in range(self.peers) for s in range(self.peers) if self.channels[r][s]]
        return [(r, k) for r in range(self.peers) for k in range(len(self.inflight[r]))]

    def deliver_one(self) -> bool:
        options = self.deliverable()
        if not options:
            return False
        r, k = self.rng.choice(options)
        batch = self.channels[r][k].pop(0) if self.delivery == "fifo" else self.inflight[r].pop(k)
        self.replicas[r].receive(batch)
        return True

    def deliver_all(self) -> None:
        while self.deliver_one():
            self.check()

    # --- checks --------------------------------------------------------------------------------------------

    def check(self) -> None:
        truth = {p: self.truth.frontier(p) for p in self.ports}
        for r in self.replicas:
            # exact for what the replica has applied (negative counts included), and never ahead of the truth
            counts = {(p, t): c for p in self.ports for t, c in r.pointstamps(p)}
            own = oracle.frontiers(self.g, counts, self.paths)
            for p in self.ports:
                f = r.frontier(p)
                assert f == own[p], f"replica {r.worker} at {p}: {f}, but its own counts give {own[p]}"
                assert covers(f, truth[p]), f"replica {r.worker} is ahead of the truth at {p}: {f} vs {truth[p]}"

    def check_truth(self) -> None:
        reported = oracle.frontiers(self.g, self.reported, self.paths)
        actual = oracle.frontiers(self.g, self.actual_counts(), self.paths)
        for p in self.ports:
            assert self.truth.frontier(p) == reported[p], f"truth at {p}: {self.truth.frontier(p)} vs {reported[p]}"
            assert covers(reported[p], actual[p]), f"reported state ahead of the actual state at {p}"
        if not any(self.unreported):
            # everything done has been reported: the reported counts are the actual state (never negative)
            assert +self.reported == +self.actual_counts() and not -self.reported

    def check_agreement(self) -> None:
        assert all(r.held_back() == 0 for r in self.replicas)
        for r in self.replicas:
            assert r.applied == self.batches_sent
            for p in self.ports:
                assert r.frontier(p) == self.truth.frontier(p), f"replica {r.worker} disagrees at {p}"
                assert r.pointstamps(p) == self.truth.pointstamps(p)

    # --- driver ----------------------------------------------------------------------------------------------

    def run(self, budget: int) -> None:
        rng = self.rng
        self.check()
        steps = 0
        while True:
            steps += 1
            if steps == budget:
                self.finishing = True
            if steps == budget // 2:  # a quiescent moment mid-run: deliver everything, everyone agrees
                for w in range(self.peers):
                    self.report(w)
                self.deliver_all()
                self.check_agreement()
            acting = [(w, a, k) for w in range(self.peers) for a, k in self.possible_actions(w)]
            roll = rng.random()
            if acting and roll < 0.5:
                w, action, _ = rng.choices(acting, weights=[k for _, _, k in acting])[0]
                updates = self.act(w, action)
                self.unreported[w].append(updates)
                if rng.random() < 0.7:  # usually report at once, sometimes hold actions back and merge them
                    self.report(w)
            elif roll < 0.6 and any(self.unreported):
                self.report(rng.choice([w for w in range(self.peers) if self.unreported[w]]))
            elif not self.deliver_one() and not acting:
                if any(self.unreported):
                    for w in range(self.peers):
                        self.report(w)
                    continue
                break
            self.check()
            self.check_truth()
        self.deliver_all()
        self.check_agreement()
        # The computation finished: nothing is held, nothing is in flight, every frontier is empty.
        assert not +self.actual_counts()
        for r in self.replicas + [self.truth]:
            assert all(r.frontier(p) == [] for p in self.ports)
            assert not r.tracking_anything()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    peers=st.integers(1, 4),
    depth=st.sampled_from([1, 2]),
    delivery=st.sampled_from(["any", "fifo"]),
    seed=st.integers(0, 2**32 - 1),
)
def test_replicas_never_ahead_of_truth(peers, depth, delivery, seed):
    sim = Simulation(peers, depth, random.Random(seed), delivery)
    sim.run(budget=120)
    assert sim.batches_sent > 0


@pytest.mark.parametrize("seed", range(6))
def test_long_runs_with_four_workers(seed):
    sim = Simulation(4, 1 + seed % 2, random.Random(1000 + seed), "any")
    sim.run(budget=400)
    assert sim.batches_sent > 50


# --- V5 and protocol details --------------------------------------------------------------------------------


def v3_builder() -> Builder:
    """V3's graph: node 1 input, node 2 map, node 3 sink; S(1,0) -> T(2,0), S(2,0) -> T(3,0)."""
    b = Builder(domain(1), "v3")
    b.add_node(0, 0, 0)
    b.add_node(1, 0, 1)
    b.add_node(2, 1, 1)
    b.add_node(3, 1, 0)
    b.add_edge(Source(1, 0), Target(2, 0))
    b.add_edge(Source(2, 0), Target(3, 0))
    return b


W0 = ProgressBatch(0, 0, ((Target(2, 0), 0, 1), (Source(1, 0), 0, -1), (Source(1, 0), 1, 1)))
W1A = ProgressBatch(1, 0, ((Source(1, 0), 0, -1), (Source(1, 0), 1, 1)))
W1B = ProgressBatch(1, 1, ((Target(2, 0), 0, -1),))
DOWNSTREAM = (Target(2, 0), Source(2, 0), Target(3, 0))


def moves(*locs: Location) -> list[tuple[Location, int, int]]:
    """The frontier changes (sorted, as ``receive`` returns them) that move every one of ``locs`` from time 0 to 1."""
    return sorted([(loc, 0, -1) for loc in locs] + [(loc, 1, 1) for loc in locs])


def v5_replica() -> Replica:
    r = Replica(v3_builder(), peers=2, initial=[(Source(1, 0), 0)])
    assert r.pointstamps(Source(1, 0)) == [(0, 2)]
    for loc in (Source(1, 0),) + DOWNSTREAM:
        assert r.frontier(loc) == [0]
    return r


def final_v5_state(r: Replica) -> None:
    for loc in (Source(1, 0),) + DOWNSTREAM:
        assert r.frontier(loc) == [1]
    assert r.pointstamps(Source(1, 0)) == [(1, 2)]
    assert r.pointstamps(Target(2, 0)) == []


def test_v5_order_w1a_w1b_w0():
    r = v5_replica()
    assert r.receive(W1A) == []
    assert r.receive(W1B) == []
    assert r.pointstamps(Target(2, 0)) == [(0, -1)]
    assert r.tracker.pointstamps_at(Target(2, 0)).frontier() == []  # the negative count is invisible
    assert r.frontier(Target(2, 0)) == [0]  # from upstream
    assert r.receive(W0) == moves(Source(1, 0), *DOWNSTREAM)
    final_v5_state(r)


def test_v5_order_w0_w1a_w1b():
    r = v5_replica()
    assert r.receive(W0) == []
    assert r.tracker.implications_at(Target(2, 0)).count_for(0) == 2  # its own message plus upstream
    assert r.receive(W1A) == moves(Source(1, 0))
    assert r.frontier(Target(2, 0)) == [0]
    assert r.tracker.implications_at(Target(2, 0)).updates() == [(0, 1), (1, 1)]
    assert r.receive(W1B) == moves(*DOWNSTREAM)
    final_v5_state(r)


def test_v5_order_w1b_w0_w1a():
    # W1 consumed W0's message before downgrading, so here W1's batches are numbered in that order.
    w1b, w1a = ProgressBatch(1, 0, W1B.updates), ProgressBatch(1, 1, W1A.updates)
    r = v5_replica()
    assert r.receive(w1b) == []
    assert r.receive(W0) == []
    assert r.receive(w1a) == moves(Source(1, 0), *DOWNSTREAM)
    final_v5_state(r)


def test_v5_every_order_same_final_state():
    import itertools

    for order in itertools.permutations([W0, W1A, W1B]):
        r = v5_replica()
        for b in order:
            r.receive(b)
        final_v5_state(r)


def test_duplicate_batch_is_refused():
    r = v5_replica()
    r.receive(W0)
    with pytest.raises(ValueError, match=r"duplicate progress batch \(worker 0, seq 0\)"):
        r.receive(W0)
    # a held-back batch (its predecessor is missing) is also counted as received
    r.receive(W1B)
    assert r.held_back() == 1
    with pytest.raises(ValueError, match="duplicate"):
        r.receive(W1B)
    # the refused duplicates changed nothing
    r.receive(W1A)
    final_v5_state(r)


def test_bad_batches_are_refused_before_anything_is_applied():
    r = v5_replica()
    with pytest.raises(ValueError, match="worker 2"):
        r.receive(ProgressBatch(2, 0, ()))
    with pytest.raises(ValueError, match="not a port"):
        r.receive(ProgressBatch(0, 0, ((Source(1, 0), 0, -1), (Target(9, 0), 0, 1))))
    assert r.pointstamps(Source(1, 0)) == [(0, 2)]
    assert r.received_through(0) == 0
    with pytest.raises(ValueError):
        Replica(v3_builder(), peers=0)


def test_initial_capabilities_count_every_worker():
    for peers in (1, 2, 3):
        r = Replica(v3_builder(), peers, initial=[(Source(1, 0), 0)])
        assert r.pointstamps(Source(1, 0)) == [(0, peers)]
        # every worker but one drops its capability: the frontier stays
        for w in range(peers - 1):
            r.receive(ProgressBatch(w, 0, ((Source(1, 0), 0, -1),)))
            assert r.frontier(Target(3, 0)) == [0]
        r.receive(ProgressBatch(peers - 1, 0, ((Source(1, 0), 0, -1),)))
        assert r.frontier(Target(3, 0)) == []
        assert not r.tracking_anything()


def test_outbox_numbers_and_consolidates():
    out = Outbox(3)
    assert out.batch([(Target(2, 0), 0, 1), (Target(2, 0), 0, -1)]) is None
    b0 = out.batch([(Source(1, 0), 1, 1), (Source(1, 0), 0, -1), (Source(1, 0), 1, 1)])
    b1 = out.batch([(Target(2, 0), 4, 1)])
    assert b0 is not None and b1 is not None
    assert (b0.worker, b0.seq, b1.seq) == (3, 0, 1)
    assert b0.updates == ((Source(1, 0), 0, -1), (Source(1, 0), 1, 2))
    assert consolidate([]) == ()


def test_sender_order_is_one_sequence_over_all_scopes():
    """A worker with several scopes numbers all its batches in one sequence; receivers release them in that order."""
    out = Outbox(1)
    outer = out.batch([(Target(2, 0), 0, 1)], scope=(1,))
    inner = out.batch([(Source(1, 0), (0, 0), -1)], scope=(1, 3))
    last = out.batch([(Source(1, 0), 0, -1)], scope=(1,))
    assert outer is not None and inner is not None and last is not None
    assert (outer.seq, inner.seq, last.seq) == (0, 1, 2) and inner.scope == (1, 3)
    order = SenderOrder(2)
    assert order.admit(last) == [] and order.admit(inner) == []
    assert order.held_back() == 2
    assert order.admit(ProgressBatch(0, 0, ())) != []  # another sender is not held behind worker 1's gap
    assert order.admit(outer) == [outer, inner, last]
    assert (order.held_back(), order.released_through(1)) == (0, 3)
    with pytest.raises(ValueError, match="duplicate"):
        order.admit(inner)
    with pytest.raises(ValueError, match="workers 0..1"):
        order.admit(ProgressBatch(2, 0, ()))


def test_one_workers_batches_out_of_order_would_be_unsafe():
    """Why a replica holds back a batch whose predecessor from the same worker is missing.

    One worker sends a message under its capability (batch 0), then drops the capability (batch 1). Applied in
    the wrong order, a plain tracker sees neither: its frontier at the map's input is empty while the message at
    time 0 is still queued there. A Replica holds batch 1 back and stays conservative.
    """
    produce = ProgressBatch(0, 0, ((Target(2, 0), 0, 1),))
    drop = ProgressBatch(0, 1, ((Source(1, 0), 0, -1),))
    naive, _ = v3_builder().build()
    naive.update(Source(1, 0), 0, 1)
    naive.propagate_all()
    for loc, t, d in drop.updates:
        naive.update(loc, t, d)
    naive.propagate_all()
    assert naive.frontier(Target(2, 0)) == []  # ahead of the truth, which is {0}

    r = Replica(v3_builder(), peers=1, initial=[(Source(1, 0), 0)])
    assert r.receive(drop) == []
    assert r.held_back() == 1
    assert r.frontier(Target(2, 0)) == [0]
    r.receive(produce)
    assert r.held_back() == 0 and r.received_through(0) == 2
    assert r.frontier(Target(2, 0)) == [0]  # the message is still there
    assert r.frontier(Source(1, 0)) == []
    r.receive(ProgressBatch(0, 2, ((Target(2, 0), 0, -1),)))
    assert not r.tracking_anything()
