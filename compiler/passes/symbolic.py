"""Exact symbolic sizes: polynomials with rational coefficients over size atoms.

Atoms are the free symbols (`B C dim H W`) and derived atoms `ceil(P/k)` and
`floor(P/k)` for a polynomial P and integer k. Polynomials are immutable and
interned: equal polynomials are one object, so `==` and hashing are identity
(C-speed in the shape tables), and two sizes are equal for all values of the
symbols exactly when they are the same object. Nothing here calls `eval`.
"""
from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from math import ceil, floor
from typing import Iterable, Mapping, Optional
from weakref import WeakValueDictionary

Mono = tuple  # sorted tuple of (atom name, power)

# Derived atoms by name: name -> ("ceil" | "floor", inner Poly, divisor)
_DERIVED: dict[str, tuple[str, "Poly", int]] = {}

# The one Poly per set of terms; weak, so sizes no table holds any more are dropped.
_INTERNED: "WeakValueDictionary[frozenset, Poly]" = WeakValueDictionary()

FREE_SYMBOLS = ("B", "C", "dim", "H", "W")


class Poly:
    """A polynomial over atoms; `terms` maps monomials to non-zero Fractions. Interned (see above)."""

    __slots__ = ("terms", "_compiled", "_text", "_free", "_integral", "_positive", "__weakref__")

    def __new__(cls, terms: Mapping[Mono, Fraction]) -> "Poly":
        terms = {m: c for m, c in terms.items() if c != 0}
        key = frozenset(terms.items())
        p = _INTERNED.get(key)
        if p is None:
            p = _INTERNED[key] = object.__new__(cls)
            p.terms = terms
            p._compiled = p._text = p._free = p._integral = p._positive = None
        return p

    def __reduce__(self):
        return Poly, (self.terms,)  # unpickled through __new__: interned again

    # -- construction ----------------------------------------------------------
    @staticmethod
    def const(value) -> "Poly":
        if type(value) is int:
            p = _INT_CONSTS.get(value)
            if p is None:
                p = _INT_CONSTS[value] = _const(Fraction(value))
            return p
        return _const(Fraction(value))

    @staticmethod
    def atom(name: str) -> "Poly":
        return _atom(name)

    # -- queries ---------------------------------------------------------------
    def constant(self) -> Optional[Fraction]:
        if not self.terms:
            return Fraction(0)
        if len(self.terms) == 1 and () in self.terms:
            return self.terms[()]
        return None

    def int_constant(self) -> Optional[int]:
        c = self.constant()
        return int(c) if c is not None and c.denominator == 1 else None

    def atoms(self) -> set[str]:
        return {a for m in self.terms for a, _ in m}

    # Derived facts are computed once per polynomial (interned, so once per distinct size).
    def free_symbols(self) -> frozenset[str]:
        """The free symbols this size depends on, through derived atoms too."""
        free = self._free
        if free is None:
            result: set[str] = set()
            for a in self.atoms():
                if a in _DERIVED:
                    result |= _DERIVED[a][1].free_symbols()
                else:
                    result.add(a)
            free = self._free = frozenset(result)
        return free

    def single_atom(self) -> Optional[str]:
        """The atom name when this polynomial is exactly one atom with coefficient 1."""
        if len(self.terms) == 1:
            ((mono, coeff),) = self.terms.items()
            if coeff == 1 and len(mono) == 1 and mono[0][1] == 1:
                return mono[0][0]
        return None

    def has_integer_coefficients(self) -> bool:
        integral = self._integral
        if integral is None:
            integral = self._integral = all(c.denominator == 1 for c in self.terms.values())
        return integral

    def has_positive_coefficients(self) -> bool:
        positive = self._positive
        if positive is None:
            positive = self._positive = all(c > 0 for c in self.terms.values())
        return positive

    def denominator(self) -> int:
        d = 1
        for c in self.terms.values():
            d = d * c.denominator // _gcd(d, c.denominator)
        return d

    # -- arithmetic --------------------------------------------------------------
    def __add__(self, other: "Poly") -> "Poly":
        return _add(self, other)

    def __sub__(self, other: "Poly") -> "Poly":
        return _add(self, _scale(other, Fraction(-1)))

    def __neg__(self) -> "Poly":
        return _scale(self, Fraction(-1))

    def __mul__(self, other: "Poly") -> "Poly":
        return _mul(self, other)

    def scale(self, factor) -> "Poly":
        return _scale(self, Fraction(factor))

    def evaluate(self, sizes: Mapping[str, int]) -> Fraction:
        """Exact value; integer arithmetic over a common denominator (this is a hot path)."""
        compiled = self._compiled
        if compiled is None:
            denominator = self.denominator()
            compiled = self._compiled = (denominator, [(int(c * denominator), m) for m, c in self.terms.items()])
        denominator, terms = compiled
        total = 0
        for numerator, mono in terms:
            for atom, power in mono:
                value = sizes[atom] if atom in sizes and atom not in _DERIVED else _atom_value(atom, sizes)
                numerator *= value ** power if power != 1 else value
            total += numerator
        return Fraction(total, denominator) if denominator != 1 else Fraction(int(total))

    def __str__(self) -> str:
        text = self._text
        if text is None:  # formatted once: the same sizes recur in every shape and message
            text = self._text = _format(self)
        return text

    def __repr__(self) -> str:
        return f"Poly({self})"


def _gcd(a: int, b: int) -> int:
    while b:
        a, b = b, a % b
    return a


_INT_CONSTS: dict[int, "Poly"] = {}


@lru_cache(maxsize=None)
def _const(value: Fraction) -> Poly:
    return Poly({(): value})


@lru_cache(maxsize=None)
def _atom(name: str) -> Poly:
    return Poly({((name, 1),): Fraction(1)})


ZERO = Poly.const(0)
ONE = Poly.const(1)


@lru_cache(maxsize=1 << 14)
def _add(a: Poly, b: Poly) -> Poly:
    terms = dict(a.terms)
    for m, c in b.terms.items():
        terms[m] = terms.get(m, 0) + c
    return Poly(terms)


@lru_cache(maxsize=1 << 14)
def _scale(a: Poly, factor: Fraction) -> Poly:
    return Poly({m: c * factor for m, c in a.terms.items()})


def _mono_mul(x: Mono, y: Mono) -> Mono:
    powers: dict[str, int] = dict(x)
    for atom, p in y:
        powers[atom] = powers.get(atom, 0) + p
    return tuple(sorted(powers.items()))


@lru_cache(maxsize=1 << 14)
def _mul(a: Poly, b: Poly) -> Poly:
    terms: dict[Mono, Fraction] = {}
    for m1, c1 in a.terms.items():
        for m2, c2 in b.terms.items():
            m = _mono_mul(m1, m2)
            terms[m] = terms.get(m, 0) + c1 * c2
    return Poly(terms)


def product(sizes: Iterable[Poly]) -> Poly:
    result = ONE
    for s in sizes:
        result = result * s
    return result


def _mono_divides(d: Mono, m: Mono) -> Optional[Mono]:
    powers = dict(m)
    for atom, p in d:
        if powers.get(atom, 0) < p:
            return None
        powers[atom] -= p
    return tuple(sorted((a, p) for a, p in powers.items() if p))


def _leading(p: Poly) -> tuple[Mono, Fraction]:
    # Graded lexicographic order: total degree, then names.
    mono = max(p.terms, key=lambda m: (sum(e for _, e in m), m))
    return mono, p.terms[mono]


@lru_cache(maxsize=1 << 12)
def exact_quotient(a: Poly, b: Poly) -> Optional[Poly]:
    """a / b as a polynomial when b divides a exactly, else None."""
    if not b.terms:
        return None
    c = b.constant()
    if c is not None:
        return a.scale(1 / c)
    lead_mono, lead_coeff = _leading(b)
    quotient: dict[Mono, Fraction] = {}
    remainder = a
    for _ in range(256):
        if not remainder.terms:
            return Poly(quotient)
        mono, coeff = _leading(remainder)
        factor_mono = _mono_divides(lead_mono, mono)
        if factor_mono is None:
            return None
        factor = Poly({factor_mono: coeff / lead_coeff})
        quotient[factor_mono] = quotient.get(factor_mono, 0) + coeff / lead_coeff
        remainder = remainder - factor * b
    return None


def _derived(kind: str, inner: Poly, k: int) -> Poly:
    name = f"{kind}({inner}/{k})" if len(inner.terms) == 1 else f"{kind}(({inner})/{k})"
    _DERIVED.setdefault(name, (kind, inner, k))
    return Poly.atom(name)


_ROUNDING = {"ceil": ceil, "floor": floor}


@lru_cache(maxsize=1 << 12)
def _rounded_div(kind: str, p: Poly, k: int) -> Poly:
    """ceil(p/k) or floor(p/k) for positive integer k, simplified where exact."""
    if k == 1:
        return p
    c = p.constant()
    if c is not None:
        return Poly.const(_ROUNDING[kind](c / k))
    q = p.scale(Fraction(1, k))
    if q.has_integer_coefficients() and p.has_integer_coefficients():
        return q
    name = p.single_atom()
    if name is not None and name in _DERIVED and _DERIVED[name][0] == kind:
        # ceil(ceil(x/a)/b) == ceil(x/(a*b)) for positive integers, and likewise floor.
        _, inner, a = _DERIVED[name]
        return _rounded_div(kind, inner, a * k)
    return _derived(kind, p, k)


def ceil_div(p: Poly, k: int) -> Poly:
    """ceil(p/k) for positive integer k."""
    return _rounded_div("ceil", p, k)


def floor_div(p: Poly, k: int) -> Poly:
    """floor(p/k) for positive integer k."""
    return _rounded_div("floor", p, k)


def assume_exact(p: Poly) -> tuple[Poly, list[tuple[Poly, int]]]:
    """p with every ceil(P/k)/floor(P/k) atom replaced by P/k, and the (P, k) divisibilities that makes exact."""
    needed: list[tuple[Poly, int]] = []
    result = ZERO
    for mono, coeff in p.terms.items():
        term = Poly.const(coeff)
        for atom, power in mono:
            factor = Poly.atom(atom)
            if atom in _DERIVED:
                _, inner, k = _DERIVED[atom]
                inner_exact, inner_needed = assume_exact(inner)
                needed += inner_needed + [(inner_exact, k)]
                factor = inner_exact.scale(Fraction(1, k))
            for _ in range(power):
                term = term * factor
        result = result + term
    return result, needed


def _atom_value(atom: str, sizes: Mapping[str, int]) -> int:
    if atom in _DERIVED:
        kind, inner, k = _DERIVED[atom]
        value = inner.evaluate(sizes) / k
        return ceil(value) if kind == "ceil" else floor(value)
    if atom not in sizes:
        raise KeyError(atom)
    return int(sizes[atom])


def _format_mono(mono: Mono) -> str:
    parts = []
    for atom, power in mono:
        parts.extend([atom] * power)
    return "*".join(parts)


def _format(p: Poly) -> str:
    if not p.terms:
        return "0"
    ordered = sorted(p.terms.items(), key=lambda mc: (-sum(e for _, e in mc[0]), mc[0]))
    out = ""
    for index, (mono, coeff) in enumerate(ordered):
        negative = coeff < 0
        magnitude = -coeff if negative else coeff
        if not mono:
            body = str(magnitude.numerator) if magnitude.denominator == 1 else f"{magnitude.numerator}/{magnitude.denominator}"
        else:
            body = _format_mono(mono)
            if magnitude.numerator != 1:
                body = f"{magnitude.numerator}*{body}"
            if magnitude.denominator != 1:
                body = f"{body}/{magnitude.denominator}"
        if index == 0:
            out = ("-" if negative else "") + body
        else:
            out += ("-" if negative else "+") + body
    return out


def to_python(p: Poly) -> str:
    """An integer-valued Python expression for p (exact divisions become `//`)."""
    d = p.denominator()
    numerator = p.scale(d) if d != 1 else p
    terms = []
    for mono, coeff in sorted(numerator.terms.items(), key=lambda mc: (-sum(e for _, e in mc[0]), mc[0])):
        factors = [_atom_python(a) for a, power in mono for _ in range(power)]
        c = int(coeff)
        if not factors:
            terms.append(str(c))
        elif c == 1:
            terms.append("*".join(factors))
        elif c == -1:
            terms.append("-" + "*".join(factors))
        else:
            terms.append(f"{c}*" + "*".join(factors))
    text = " + ".join(terms).replace("+ -", "- ") or "0"
    if d == 1:
        return text
    return f"({text}) // {d}" if len(terms) > 1 else f"{text} // {d}"


def _atom_python(atom: str) -> str:
    if atom in _DERIVED:
        kind, inner, k = _DERIVED[atom]
        body = to_python(inner)
        return f"(-(-({body}) // {k}))" if kind == "ceil" else f"(({body}) // {k})"
    return atom


@dataclass(frozen=True)
class Constraint:
    """A requirement on the free symbols: `size % modulus == 0` or `size >= 1`."""

    size: Poly
    modulus: int = 0  # 0: positivity (size >= 1)
    reason: str = ""

    def holds(self, sizes: Mapping[str, int]) -> bool:
        value = self.size.evaluate(sizes)
        if self.modulus:
            return value.denominator == 1 and value.numerator % self.modulus == 0
        return value >= 1

    def __str__(self) -> str:
        text = str(self.size)
        if len(self.size.terms) > 1:
            text = f"({text})"
        return f"{text} % {self.modulus} == 0" if self.modulus else f"{text} >= 1"


def integer_constraint(p: Poly, reason: str) -> Optional[Constraint]:
    """The constraint under which p (a rational polynomial) is an integer, or None if always."""
    d = p.denominator()
    if d == 1:
        return None
    return Constraint(p.scale(d), d, reason)
