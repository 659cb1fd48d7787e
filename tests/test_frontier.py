"""Antichain, MutableAntichain and ChangeBatch: the vectors of section 1 of timely-reference.md.

MutableAntichain vectors on integers run in both modes (``total=True`` is the total-order specialization) and
through both entry points (``update`` is the single-update fast path, ``update_iter`` the general one).
"""

from __future__ import annotations

import pytest

from tracker.change_batch import ChangeBatch
from tracker.frontier import Antichain, MutableAntichain
from tracker.reachability import Source, Target
from tracker.timestamp import domain

LE1 = domain(1).le
LE2 = domain(2).le


def consolidate(changes):
    batch = ChangeBatch(changes)
    return batch.into_inner()


def apply(m: MutableAntichain, method: str, updates):
    """Apply updates through ``update_iter`` (one call) or ``update`` (one call each); consolidated changes."""
    if method == "update_iter":
        return m.update_iter(updates)
    out = []
    for t, d in updates:
        out.extend(m.update(t, d))
    return consolidate(out)


# --- Antichain -----------------------------------------------------------------------------------------------


def test_antichain_insert_repo_vector():
    """[repo] ``insert(2)`` returns true, then ``insert(3)`` returns false."""
    a = Antichain(le=LE1)
    assert a.insert(2) is True
    assert a.insert(3) is False
    assert a.elements() == [2]


def test_antichain_extend_repo_vector():
    """[repo] ``extend(Some(3))`` true; ``extend([2,5])`` true leaving {2}; ``extend([3,4])`` false."""
    a = Antichain(le=LE1)
    assert a.extend([3]) is True
    assert a.elements() == [3]
    assert a.extend([2, 5]) is True
    assert a.elements() == [2]
    assert a.extend([3, 4]) is False
    assert a.elements() == [2]


def test_antichain_less_than_less_equal_repo_vector():
    """[repo] For {2}: less_than(3)=T, (2)=F, (1)=F; less_equal(3)=T, (2)=T, (1)=F. After clear(): all F."""
    a = Antichain([2], LE1)
    assert a.less_than(3) is True
    assert a.less_than(2) is False
    assert a.less_than(1) is False
    assert a.less_equal(3) is True
    assert a.less_equal(2) is True
    assert a.less_equal(1) is False
    a.clear()
    assert a.less_than(3) is False
    assert a.less_equal(3) is False
    assert a.is_empty() is True


def test_antichain_empty_is_complete():
    a = Antichain(le=LE1)
    assert a.less_than(0) is False
    assert a.less_equal(0) is False
    assert len(a) == 0
    assert a.is_empty() is True


def test_antichain_insert_equal_element_is_no_change():
    a = Antichain([(0, 1)], LE2)
    assert a.insert((0, 1)) is False
    assert a.elements() == [(0, 1)]


def test_antichain_insert_evicts_dominated_product_elements():
    a = Antichain(le=LE2)
    assert a.insert((1, 1)) is True
    assert a.insert((0, 1)) is True  # evicts (1,1)
    assert a.elements() == [(0, 1)]
    assert a.insert((1, 0)) is True  # incomparable: kept side by side
    assert a.elements() == [(0, 1), (1, 0)]
    assert a.insert((2, 2)) is False
    assert a.insert((0, 0)) is True  # evicts both
    assert a.elements() == [(0, 0)]


def test_antichain_from_iterable_inserts_one_at_a_time():
    assert Antichain([3, 1, 2], LE1).elements() == [1]
    assert Antichain([(1, 1), (0, 1), (1, 0)], LE2).elements() == [(0, 1), (1, 0)]
    assert len(Antichain([(1, 1), (0, 1), (1, 0)], LE2)) == 2


def test_antichain_product_less_than_less_equal():
    a = Antichain([(0, 1), (1, 0)], LE2)
    assert a.less_equal((0, 1)) is True
    assert a.less_than((0, 1)) is False
    assert a.less_than((1, 1)) is True
    assert a.less_equal((0, 0)) is False
    assert a.less_than((0, 5)) is True
    assert a.less_equal((5, 0)) is True


def test_antichain_equality_is_set_equality():
    a = Antichain([(0, 1), (1, 0)], LE2)
    b = Antichain([(1, 0), (0, 1)], LE2)
    assert a == b
    assert hash(a) == hash(b)
    assert a != Antichain([(0, 1)], LE2)
    assert Antichain([(0, 1)], LE2) != a
    assert Antichain([], LE1) == Antichain([], LE1)
    assert Antichain([2], LE1) == Antichain([3, 2], LE1)
    assert Antichain([2], LE1) != Antichain([3], LE1)


def test_antichain_partial_order():
    """``A <= B`` iff every b in B has some a in A with ``a <= b``; ``{} <= X`` false for non-empty X."""
    empty = Antichain(le=LE1)
    one, two = Antichain([1], LE1), Antichain([2], LE1)
    assert empty.dominates(one) is False
    assert one.dominates(empty) is True
    assert empty.dominates(Antichain(le=LE1)) is True
    assert one.dominates(two) is True
    assert two.dominates(one) is False
    assert one.dominates(one) is True
    pair = Antichain([(0, 1), (1, 0)], LE2)
    assert pair.dominates(Antichain([(1, 1)], LE2)) is True
    assert pair.dominates(Antichain([(0, 5), (5, 0)], LE2)) is True
    assert Antichain([(0, 1)], LE2).dominates(Antichain([(1, 0)], LE2)) is False
    assert Antichain([(0, 1)], LE2).dominates(pair) is False
    assert Antichain([(1, 1)], LE2).dominates(pair) is False


def test_antichain_elements_sorted_and_contains():
    a = Antichain([(1, 0), (0, 1)], LE2)
    assert a.elements() == [(0, 1), (1, 0)]
    assert (1, 0) in a
    assert (1, 1) not in a
    assert sorted(a) == [(0, 1), (1, 0)]


# --- MutableAntichain -------------------------------------------------------------------------------------


@pytest.mark.parametrize("total", [False, True])
def test_mutable_antichain_repo_vector(total):
    """[repo] ``from_elem(1)`` then ``update_iter([(1,-1),(2,7)])`` gives ``[(1,-1),(2,1)]`` and frontier [2]."""
    m = MutableAntichain.from_elem(1, LE1, total)
    assert m.frontier() == [1]
    assert m.count_for(1) == 1
    assert m.update_iter([(1, -1), (2, 7)]) == [(1, -1), (2, 1)]
    assert m.frontier() == [2]
    assert m.count_for(1) == 0
    assert m.count_for(2) == 7
    assert m.updates() == [(2, 7)]


@pytest.mark.parametrize("total", [False, True])
def test_mutable_antichain_repo_vector_single_updates(total):
    """The repo vector through the single-update fast path: the same net changes."""
    m = MutableAntichain.from_elem(1, LE1, total)
    assert m.update(1, -1) == [(1, -1)]
    assert m.frontier() == []
    assert m.update(2, 7) == [(2, 1)]
    assert m.frontier() == [2]
    assert m.updates() == [(2, 7)]


@pytest.mark.parametrize("method", ["update_iter", "update"])
def test_mutable_antichain_derived_product_sequence(method):
    """[derived] The Product sequence of section 1, starting from empty."""
    m = MutableAntichain(LE2, False)
    assert m.is_empty() is True
    assert apply(m, method, [((0, 1), 1), ((1, 0), 1), ((1, 1), 3)]) == [((0, 1), 1), ((1, 0), 1)]
    assert m.frontier() == [(0, 1), (1, 0)]
    assert apply(m, method, [((0, 1), -1)]) == [((0, 1), -1)]
    assert m.frontier() == [(1, 0)]
    assert apply(m, method, [((1, 0), -1)]) == [((1, 0), -1), ((1, 1), 1)]
    assert m.frontier() == [(1, 1)]
    assert apply(m, method, [((0, 0), -1)]) == []  # count -1 at (0,0): invisible
    assert m.frontier() == [(1, 1)]
    assert m.count_for((0, 0)) == -1
    assert m.has_negative() is True
    assert apply(m, method, [((0, 0), 2)]) == [((0, 0), 1), ((1, 1), -1)]
    assert m.frontier() == [(0, 0)]
    assert m.count_for((0, 0)) == 1
    assert m.count_for((1, 1)) == 3
    assert m.has_negative() is False
    assert m.updates() == [((0, 0), 1), ((1, 1), 3)]


@pytest.mark.parametrize("method", ["update_iter", "update"])
@pytest.mark.parametrize("total", [False, True])
def test_mutable_antichain_derived_integer_sequence(total, method):
    """[derived] Integers from empty: (3,-1) -> []; (5,+1) -> [(5,+1)]; (3,+1) -> [] (no net change)."""
    m = MutableAntichain(LE1, total)
    assert apply(m, method, [(3, -1)]) == []
    assert m.frontier() == []
    assert m.is_empty() is True  # the frontier is empty although a count is stored
    assert m.count_for(3) == -1
    assert m.updates() == [(3, -1)]
    assert apply(m, method, [(5, 1)]) == [(5, 1)]
    assert m.frontier() == [5]
    assert apply(m, method, [(3, 1)]) == []
    assert m.frontier() == [5]
    assert m.count_for(3) == 0
    assert m.updates() == [(5, 1)]


@pytest.mark.parametrize("method", ["update_iter", "update"])
@pytest.mark.parametrize("total", [False, True])
def test_mutable_antichain_compaction_leaves_no_stored_zeros(total, method):
    """[repo mutable_compaction] 6x(7,+1), 5x(8,+1), then 1000x((9,+1),(9,-1)) as single updates.

    Rust checks that the update list stays at most 32 long; the dict-based port stores no zero counts at all.
    """
    m = MutableAntichain(LE1, total)
    changes = []
    for _ in range(6):
        changes.extend(apply(m, method, [(7, 1)]))
    for _ in range(5):
        changes.extend(apply(m, method, [(8, 1)]))
    for _ in range(1000):
        changes.extend(apply(m, method, [(9, 1)]))
        changes.extend(apply(m, method, [(9, -1)]))
    assert changes == [(7, 1)]
    assert m.frontier() == [7]
    assert m.updates() == [(7, 6), (8, 5)]
    assert m.count_for(9) == 0
    assert all(c != 0 for _, c in m.updates())


@pytest.mark.parametrize("method", ["update_iter", "update"])
def test_mutable_antichain_compaction_product_leaves_no_stored_zeros(method):
    m = MutableAntichain(LE2, False)
    apply(m, method, [((0, 1), 1)])
    for _ in range(1000):
        assert apply(m, method, [((1, 0), 1)]) == [((1, 0), 1)]  # incomparable with (0,1): enters
        assert apply(m, method, [((1, 0), -1)]) == [((1, 0), -1)]
        assert apply(m, method, [((1, 1), 1)]) == []  # dominated by (0,1)
        assert apply(m, method, [((1, 1), -1)]) == []
    assert m.updates() == [((0, 1), 1)]
    assert m.frontier() == [(0, 1)]


@pytest.mark.parametrize("total", [False, True])
def test_mutable_antichain_less_than_less_equal(total):
    m = MutableAntichain.from_elem(5, LE1, total)
    assert m.less_than(6) is True
    assert m.less_than(5) is False
    assert m.less_equal(5) is True
    assert m.less_equal(4) is False


@pytest.mark.parametrize("total", [False, True])
def test_mutable_antichain_zero_delta_is_ignored(total):
    m = MutableAntichain(LE1, total)
    assert m.update(3, 0) == []
    assert m.update_iter([(3, 0)]) == []
    assert m.updates() == []


@pytest.mark.parametrize("total", [False, True])
def test_mutable_antichain_lower_time_replaces_minimum(total):
    m = MutableAntichain.from_elem(5, LE1, total)
    assert m.update(3, 1) == [(3, 1), (5, -1)]
    assert m.frontier() == [3]
    assert m.update(3, -1) == [(3, -1), (5, 1)]
    assert m.frontier() == [5]
    assert m.update_iter([(5, -1), (7, 1), (6, 2)]) == [(5, -1), (6, 1)]
    assert m.frontier() == [6]


# --- ChangeBatch --------------------------------------------------------------------------------------------


def test_change_batch_repo_vector_cancel_is_empty():
    """[repo] ``new_from(17,1)`` then ``update(17,-1)`` is empty."""
    b = ChangeBatch.new_from(17, 1)
    b.update(17, -1)
    assert b.is_empty() is True
    assert len(b) == 0
    assert b.into_inner() == []


def test_change_batch_repo_vector_len():
    """[repo] ``new_from(17,1)``, ``update(17,-1)``, ``update(14,-1)`` gives ``len()==1``."""
    b = ChangeBatch.new_from(17, 1)
    b.update(17, -1)
    b.update(14, -1)
    assert len(b) == 1
    assert b.into_inner() == [(14, -1)]


def test_change_batch_repo_vector_into_inner():
    """[repo] ``new_from(17,1).into_inner() == [(17,1)]``."""
    assert ChangeBatch.new_from(17, 1).into_inner() == [(17, 1)]


def test_change_batch_drops_zero_entries_always():
    """Rust keeps a lone ``(k, 0)`` through compaction; the Python port drops zeros always."""
    b = ChangeBatch([(5, 0)])
    assert b.is_empty() is True
    assert b.into_inner() == []
    b.update(3, 0)
    assert len(b) == 0
    assert bool(b) is False


def test_change_batch_reads_are_sorted_unique_nonzero():
    b = ChangeBatch([(3, 1), (1, 2), (3, 4), (2, -1), (2, 1), (1, -5)])
    assert b.into_inner() == [(1, -3), (3, 5)]
    assert list(b) == [(1, -3), (3, 5)]
    assert b.get(3) == 5
    assert b.get(2) == 0
    assert b.drain() == [(1, -3), (3, 5)]
    assert b.is_empty() is True
    assert b.drain() == []


def test_change_batch_product_and_location_keys_sort_by_ord():
    b = ChangeBatch([((1, 0), 1), ((0, 9), 1), ((0, 1), 2)])
    assert b.into_inner() == [((0, 1), 2), ((0, 9), 1), ((1, 0), 1)]
    c = ChangeBatch([((Target(2, 0), 5), 1), ((Source(1, 0), 5), -1), ((Target(1, 0), 5), 1), ((Source(1, 0), 3), 1)])
    assert c.into_inner() == [
        ((Target(1, 0), 5), 1),
        ((Source(1, 0), 3), 1),
        ((Source(1, 0), 5), -1),
        ((Target(2, 0), 5), 1),
    ]


def test_change_batch_drain_into_empty_swaps():
    a = ChangeBatch([(1, 1), (2, 2)])
    b = ChangeBatch()
    a.drain_into(b)
    assert a.is_empty() is True
    assert b.into_inner() == [(1, 1), (2, 2)]


def test_change_batch_drain_into_nonempty_extends():
    a = ChangeBatch([(1, 1), (2, 2)])
    b = ChangeBatch([(1, -1), (3, 3)])
    a.drain_into(b)
    assert a.is_empty() is True
    assert b.into_inner() == [(2, 2), (3, 3)]


def test_change_batch_equality_and_clear():
    assert ChangeBatch([(1, 1), (2, 0)]) == ChangeBatch([(1, 2), (1, -1)])
    assert ChangeBatch([(1, 1)]) != ChangeBatch([(1, 2)])
    b = ChangeBatch([(1, 1)])
    b.clear()
    assert b == ChangeBatch()
