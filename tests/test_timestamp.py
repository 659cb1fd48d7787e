"""Timestamps, path summaries and refinement: the vectors of section 1 and V11 of timely-reference.md.

Times are ints (depth 1) or nested 2-tuples (``Product`` is a tuple subclass). Python ints never overflow, so
where timely returns ``None`` on overflow these tests check instead that the result is the exact big integer.
"""

from __future__ import annotations

import itertools

import pytest

from tracker.timestamp import (
    Product,
    Refinement,
    depth_of,
    domain,
    followed_by,
    less_equal,
    less_than,
    results_in,
)

U64_MAX = 2**64 - 1
U32_MAX = 2**32 - 1


# --- integers (depth 1) -------------------------------------------------------------------------------------


def test_integer_order_is_total_le_and_lt():
    d = domain(1)
    assert d.le(3, 3) is True
    assert d.le(3, 4) is True
    assert d.le(4, 3) is False
    assert d.less_than(3, 3) is False
    assert d.less_than(3, 4) is True
    assert d.less_than(4, 3) is False
    assert less_equal(3, 3) is True
    assert less_than(3, 3) is False
    assert less_than(2, 3) is True
    assert d.total is True
    assert d.minimum == 0
    assert d.identity == 0


def test_integer_results_in_repo_vector():
    """[repo] ``5.results_in(&3) == Some(8)``."""
    assert domain(1).results_in(5, 3) == 8
    assert results_in(5, 3) == 8


def test_integer_results_in_overflow_vector_is_exact_big_int():
    """[repo] ``(usize::MAX-2).results_in(&3) == None`` in Rust.

    Python ints never overflow: the port has no ``None`` result, so the time is the exact big integer 2**64.
    """
    assert domain(1).results_in(U64_MAX - 2, 3) == 2**64
    assert results_in(U64_MAX - 2, 3) == 2**64


def test_integer_followed_by_overflow_vector_is_exact_big_int():
    """[repo] ``5.followed_by(&(usize::MAX-3)) == None`` in Rust.

    Python ints never overflow: the composed summary is the exact big integer ``usize::MAX + 2``.
    """
    assert domain(1).followed_by(5, U64_MAX - 3) == U64_MAX + 2
    assert followed_by(5, U64_MAX - 3) == 2**64 + 1


def test_integer_followed_by_equals_sequential_application():
    """[repo] For time 10, ``5`` followed by ``15`` gives the same as applying them in sequence: 30."""
    d = domain(1)
    composed = d.followed_by(5, 15)
    assert composed == 20
    assert d.results_in(composed, 10) == 30
    assert d.results_in(15, d.results_in(5, 10)) == 30


def test_integer_identity_summary():
    d = domain(1)
    for t in (0, 1, 17, U64_MAX):
        assert d.results_in(d.identity, t) == t


# --- products (depth 2) and V11 ----------------------------------------------------------------------------


def test_product_is_a_tuple_equal_to_plain_tuple():
    p = Product(5, 7)
    assert p == (5, 7)
    assert hash(p) == hash((5, 7))
    assert p.outer == 5
    assert p.inner == 7
    assert repr(p) == "Product(5, 7)"
    assert {p: 1}[(5, 7)] == 1


def test_product_partial_order_is_componentwise():
    d = domain(2)
    assert d.le((1, 2), (1, 2)) is True
    assert d.le((1, 2), (2, 3)) is True
    assert d.le((1, 3), (2, 2)) is False
    assert d.le((2, 2), (1, 3)) is False
    assert d.less_than((1, 2), (1, 2)) is False
    assert d.less_than((1, 2), (1, 3)) is True
    assert less_equal(Product(1, 2), (2, 3)) is True
    assert less_equal((1, 3), Product(2, 2)) is False
    assert d.total is False
    assert d.minimum == (0, 0)
    assert d.identity == (0, 0)


def test_v11_summaries_incomparable():
    """V11: ``(0,1)`` and ``(1,0)`` are incomparable summaries."""
    d = domain(2)
    assert d.le((0, 1), (1, 0)) is False
    assert d.le((1, 0), (0, 1)) is False
    assert less_equal((0, 1), (1, 0)) is False
    assert less_equal((1, 0), (0, 1)) is False


def test_v11_results_in():
    """V11: ``(0,1).results_in((5,3)) = (5,4)``."""
    assert domain(2).results_in((0, 1), (5, 3)) == (5, 4)
    assert results_in((0, 1), (5, 3)) == (5, 4)
    assert results_in(Product(0, 1), Product(5, 3)) == (5, 4)


def test_v11_followed_by():
    """V11: ``(1,0).followed_by((0,2)) = (1,2)``."""
    assert domain(2).followed_by((1, 0), (0, 2)) == (1, 2)
    assert followed_by((1, 0), (0, 2)) == (1, 2)


def test_product_summaries_apply_elementwise_without_reset():
    """An outer increment does not reset the inner coordinate (no Naiad rule)."""
    d = domain(2)
    assert d.results_in((1, 0), (5, 3)) == (6, 3)
    assert d.results_in((2, 5), (5, 3)) == (7, 8)
    s = d.followed_by((1, 0), (0, 2))
    assert d.results_in(s, (5, 3)) == d.results_in((0, 2), d.results_in((1, 0), (5, 3))) == (6, 5)


def test_v11_ord_is_lexicographic_partial_order_is_not():
    """V11: Ord is lexicographic, ``(0,9) < (1,0)``; under the partial order they are incomparable."""
    assert (0, 9) < (1, 0)
    assert Product(0, 9) < Product(1, 0)
    assert sorted([(1, 0), (0, 9)]) == [(0, 9), (1, 0)]
    d = domain(2)
    assert d.le((0, 9), (1, 0)) is False
    assert d.le((1, 0), (0, 9)) is False


def test_product_ord_is_compatible_with_partial_order():
    """If ``a <= b`` in the partial order then ``a <= b`` lexicographically (the Timestamp requirement)."""
    d = domain(2)
    grid = list(itertools.product(range(3), range(3)))
    ordered = lexicographic_only = 0
    for a in grid:
        for b in grid:
            if d.le(a, b):
                assert a <= b
                ordered += 1
            elif a <= b:
                lexicographic_only += 1
    # the implication was tried: 6 ordered pairs of 0..2 per coordinate, and pairs like (0,2), (1,0) that only
    # the lexicographic order orders
    assert ordered == 6 * 6 and lexicographic_only > 0


def test_v11_component_overflow_is_exact_big_int():
    """V11: in Rust any component overflowing makes the result ``None``.

    Python ints never overflow: each component is the exact big integer.
    """
    d = domain(2)
    assert d.results_in((1, 1), (U64_MAX, U32_MAX)) == (2**64, 2**32)
    assert d.followed_by((U64_MAX, 0), (1, U32_MAX)) == (2**64, U32_MAX)


def test_product_identity_summary():
    d = domain(2)
    for t in [(0, 0), (5, 3), (U64_MAX, U32_MAX)]:
        assert d.results_in(d.identity, t) == t


# --- refinement (V11) --------------------------------------------------------------------------------------


def test_v11_refinement_iterative_scope():
    """V11: ``to_inner(5) = (5,0)``, ``to_outer((5,7)) = 5``, ``summarize((1,3)) = 1``, ``summarize((0,1)) = 0``."""
    r = Refinement(domain(1), domain(2))
    assert r.is_region is False
    assert r.to_inner(5) == (5, 0)
    assert r.to_outer((5, 7)) == 5
    assert r.summarize((1, 3)) == 1
    assert r.summarize((0, 1)) == 0


def test_refinement_summarize_is_conservative():
    """``summarize(p).results_in(t) <= to_outer(p.results_in(to_inner(t)))`` for every p and t (here: equal)."""
    r = Refinement(domain(1), domain(2))
    outer, inner = domain(1), domain(2)
    for p in itertools.product(range(3), range(3)):
        for t in range(4):
            lhs = outer.results_in(r.summarize(p), t)
            rhs = r.to_outer(inner.results_in(p, r.to_inner(t)))
            assert outer.le(lhs, rhs)
            assert lhs == rhs


def test_refinement_region_is_identity():
    """Every T refines itself with the identity functions (a region keeps its parent's times)."""
    r = Refinement(domain(1), domain(1))
    assert r.is_region is True
    assert r.to_inner(5) == 5
    assert r.to_outer(5) == 5
    assert r.summarize(3) == 3
    r2 = Refinement(domain(2), domain(2))
    assert r2.is_region is True
    assert r2.to_inner((5, 3)) == (5, 3)
    assert r2.to_outer((5, 3)) == (5, 3)
    assert r2.summarize((1, 2)) == (1, 2)


def test_refinement_rejects_depth_jump():
    with pytest.raises(ValueError) as e:
        Refinement(domain(1), domain(3))
    assert str(e.value) == "a nested scope has its parent's depth (1) or one more, not 3"
    with pytest.raises(ValueError):
        Refinement(domain(2), domain(1))


def test_domain_rejects_depth_zero():
    with pytest.raises(ValueError) as e:
        domain(0)
    assert str(e.value) == "a scope depth is at least 1, not 0"


# --- three-level nesting ((a, b), c) -----------------------------------------------------------------------


def test_three_level_partial_order():
    d = domain(3)
    assert d.le(((1, 2), 3), ((1, 2), 3)) is True
    assert d.le(((1, 2), 3), ((1, 2), 4)) is True
    assert d.le(((1, 2), 3), ((2, 5), 3)) is True
    assert d.le(((1, 3), 0), ((2, 2), 5)) is False  # middle coordinate larger
    assert d.le(((1, 2), 4), ((1, 2), 3)) is False  # innermost larger
    assert d.le(((2, 0), 0), ((1, 9), 9)) is False  # outermost larger
    assert d.less_than(((1, 2), 3), ((1, 2), 3)) is False
    assert d.less_than(((1, 2), 3), ((1, 2), 4)) is True
    # generic helpers agree
    assert less_equal(((1, 2), 3), ((1, 2), 4)) is True
    assert less_equal(((1, 3), 0), ((2, 2), 5)) is False
    assert less_than(((0, 0), 0), ((0, 0), 1)) is True
    assert d.total is False
    assert d.minimum == ((0, 0), 0)
    assert d.identity == ((0, 0), 0)


def test_three_level_order_agrees_with_generic_and_is_lexicographically_compatible():
    d = domain(3)
    grid = [((a, b), c) for a in range(2) for b in range(2) for c in range(2)]
    for x in grid:
        for y in grid:
            assert d.le(x, y) == less_equal(x, y) == (x[0][0] <= y[0][0] and x[0][1] <= y[0][1] and x[1] <= y[1])
            if d.le(x, y):
                assert x <= y


def test_three_level_results_in_and_followed_by():
    d = domain(3)
    assert d.results_in(((0, 1), 2), ((5, 3), 4)) == ((5, 4), 6)
    assert results_in(((0, 1), 2), ((5, 3), 4)) == ((5, 4), 6)
    assert d.results_in(((1, 0), 0), ((5, 3), 4)) == ((6, 3), 4)  # no reset of inner coordinates
    assert d.followed_by(((1, 0), 0), ((0, 2), 3)) == ((1, 2), 3)
    assert followed_by(((1, 0), 0), ((0, 2), 3)) == ((1, 2), 3)
    assert d.results_in(d.identity, ((5, 3), 4)) == ((5, 3), 4)
    s1, s2, t = ((1, 0), 2), ((0, 3), 1), ((7, 7), 7)
    assert d.results_in(d.followed_by(s1, s2), t) == d.results_in(s2, d.results_in(s1, t)) == ((8, 10), 10)


def test_three_level_summaries_incomparable():
    d = domain(3)
    assert d.le(((0, 0), 1), ((0, 1), 0)) is False
    assert d.le(((0, 1), 0), ((0, 0), 1)) is False
    assert d.le(((1, 0), 0), ((0, 1), 0)) is False


def test_three_level_refinement():
    """A scope at depth 3 inside one at depth 2: ``to_inner((a,b)) = ((a,b),0)``, and so on."""
    r = Refinement(domain(2), domain(3))
    assert r.is_region is False
    assert r.to_inner((5, 3)) == ((5, 3), 0)
    assert r.to_outer(((5, 3), 7)) == (5, 3)
    assert r.summarize(((1, 0), 3)) == (1, 0)
    assert r.summarize(((0, 0), 1)) == (0, 0)
    # and back up to the root
    r1 = Refinement(domain(1), domain(2))
    assert r1.to_outer(r.to_outer(((5, 3), 7))) == 5
    assert r.to_inner(r1.to_inner(5)) == ((5, 0), 0)


def test_three_level_overflow_is_exact_big_int():
    """Rust would return ``None`` on overflow of any component; Python gives the exact big integers."""
    d = domain(3)
    assert d.results_in(((1, 1), 1), ((U64_MAX, U64_MAX), U32_MAX)) == ((2**64, 2**64), 2**32)


def test_depth_of():
    assert depth_of(5) == 1
    assert depth_of((5, 3)) == 2
    assert depth_of(Product(5, 3)) == 2
    assert depth_of(((5, 3), 1)) == 3
    assert domain(1).depth == 1
    assert domain(3).depth == 3
    assert domain(2) is domain(2)
