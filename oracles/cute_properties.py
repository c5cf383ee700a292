"""CuTe's layout algebra judged by its defining properties, by brute force over whole domains.

Not a second implementation of CuTe's algorithms (two implementations can agree on a wrong answer): each
function takes the inputs and the result a system under test returned, evaluates every layout by the
definition of a layout (``oracles.cute.Layout``: colexicographic index -> coordinate -> inner product with
the stride) and lists which defining properties the result breaks. Each list entry is
``(property, example)``: the property's name is the root cause, the example one index that shows it.
The properties are the postconditions CuTe documents for each operation (CUTLASS, ``include/cute/layout.hpp``
and the layout-algebra documentation, ``02_layout_algebra.md``).
"""

from __future__ import annotations

import numpy as np

from layoutfuzz.oracles.cute import Layout, flatten
from layoutfuzz.oracles.cute_preconditions import complement_modes, from_modes, leaves
from layoutfuzz.oracles.linear_layout import LayoutError

Violations = list[tuple[str, str]]
SHOWN = 3  # examples kept per property


def offsets(layout: Layout) -> list[int]:
    """The layout as a function: its offset at every index 0..size-1."""
    return [layout(i) for i in range(layout.size())]


def offsets_array(layout: Layout) -> np.ndarray:
    """``offsets`` over arrays: each leaf's coordinate of every index times its stride, summed (int64)."""
    index = np.arange(layout.size(), dtype=np.int64)
    total = np.zeros_like(index)
    for size, stride in zip(flatten(layout.shape), flatten(layout.stride)):
        total += index % size * stride
        index //= size
    return total


def depth(t) -> int:
    return 0 if isinstance(t, int) else 1 + max((depth(x) for x in t), default=0)


def _first(failures: list[str], name: str, out: Violations) -> None:
    out.extend((name, example) for example in failures[:SHOWN])


def extensions(a: Layout, index: int) -> set[int | None]:
    """What A at ``index`` may be: A(index) inside A's domain; past it, A is not defined, and CuTe's implementations
    extend it along the last mode of coalesced A (pycute, CuTe C++) or along its last leaf (CuTe DSL): either."""
    if 0 <= index < a.size():
        return {a(index)}
    return {_extend(a.coalesce(), index), _extend(a, index)}


def _extend(a: Layout, index: int) -> int | None:
    if index < 0:
        return None
    leaves = list(zip(flatten(a.shape), flatten(a.stride)))
    total = 0
    for s, d in leaves[:-1]:
        total += (index % s) * d
        index //= s
    return total + index * leaves[-1][1]


def composition(a: Layout, b: Layout, r: Layout) -> Violations:
    """R = A o B: size(R) == size(B), and R(i) == A(B(i)) for every i < size(B) (past A's domain, A extended along
    its last mode: ``extensions``)."""
    out: Violations = []
    if r.size() != b.size():
        return [("size(R) != size(B)", f"{r.size()} != {b.size()}")]
    wrong = []
    for i in range(b.size()):
        allowed = extensions(a, b(i))
        if r(i) not in allowed:
            wrong.append(f"i={i}: R(i)={r(i)}, A(B(i))={min(allowed, key=lambda x: (x is None, x))}")
    _first(wrong, "R(i) != A(B(i))", out)
    return out


def coalesce(a: Layout, r: Layout) -> Violations:
    """coalesce(A): the same function (size and every offset) with depth at most 1."""
    out: Violations = []
    if r.size() != a.size():
        return [("size(R) != size(A)", f"{r.size()} != {a.size()}")]
    _first([f"i={i}: R(i)={r(i)}, A(i)={a(i)}" for i in range(a.size()) if r(i) != a(i)], "R(i) != A(i)", out)
    if depth(r.shape) > 1:
        out.append(("depth(R) > 1", str(r.shape)))
    return out


def complement(a: Layout, m: int, r: Layout) -> Violations:
    """complement(A, M) for an injective A: R ordered (R(i-1) < R(i)), disjoint from A (R(i) is no A(j) for
    i > 0), and (A, R) reaching M (cosize of the pair >= M)."""
    out: Violations = []
    image = set(offsets(a))
    values = offsets(r)
    _first([f"i={i}: R(i-1)={values[i - 1]} >= R(i)={values[i]}" for i in range(1, len(values)) if values[i - 1] >= values[i]],
           "R not ordered", out)
    _first([f"i={i}: R(i)={values[i]} is an offset of A" for i in range(1, len(values)) if values[i] in image],
           "R not disjoint from A", out)
    if max(image) + max(values) + 1 < m:
        out.append(("(A, R) short of M", f"cosize {max(image) + max(values) + 1} < {m}"))
    return out


def left_inverse(a: Layout, r: Layout) -> Violations:
    """left_inverse(A) of an injective A: R(A(i)) == i for every i < size(A)."""
    out: Violations = []
    _first([f"i={i}: R(A(i))={_at(r, a(i))}" for i in range(a.size()) if _at(r, a(i)) != i], "R(A(i)) != i", out)
    return out


def right_inverse(a: Layout, r: Layout) -> Violations:
    """right_inverse(A): A(R(i)) == i for every i < size(R) (R's offsets are indices of A); where A is a bijection
    onto 0..size(A)-1, R inverts all of it (size(R) == size(A)), not a prefix."""
    out: Violations = []
    _first([f"i={i}: A(R(i))={_at(a, r(i))}" for i in range(r.size()) if _at(a, r(i)) != i], "A(R(i)) != i", out)
    if sorted(offsets(a)) == list(range(a.size())) and r.size() != a.size():
        out.append(("R not the whole inverse of a bijective A", f"size(R)={r.size()}, size(A)={a.size()}"))
    return out


def logical_divide(a: Layout, b: Layout, r: Layout) -> Violations:
    """logical_divide(A, B) = A o (B, complement(B, size(A))): where B has a complement, R(i) is A at (B, B*)(i) for
    every index (size(B) * size(B*) of them); else its first mode is A o B, and where its size is A's, R is a
    reordering of A's offsets."""
    rest = complement_modes(b, a.size())
    if isinstance(rest, str):
        out: Violations = []
        if r.size() == a.size() and sorted(offsets(r)) != sorted(offsets(a)):
            out.append(("R not a reordering of A", "the multisets of offsets differ"))
        out.extend((f"mode 0: {name}", ex) for name, ex in composition(a, b, r.mode(0)))
        return out
    tiler = from_modes(leaves(b) + rest)  # (B, B*): the same function of the index
    return [(f"{name} (A o (B, complement(B, size(A))))", ex) for name, ex in composition(a, tiler, r)]


def logical_product(a: Layout, b: Layout, r: Layout) -> Violations:
    """logical_product(A, B) = (A, complement(A, size(A) * cosize(B)) o B): size(A) * size(B) indices, its first
    mode is A, and where A has a complement C, its second mode is C o B; else, A and B injective, R is injective."""
    out: Violations = []
    if r.size() != a.size() * b.size():
        return [("size(R) != size(A) * size(B)", f"{r.size()} != {a.size() * b.size()}")]
    first = r.mode(0)
    if first.size() != a.size() or offsets(first) != offsets(a):
        out.append(("mode 0 is not A", f"{first} against {a}"))
    rest = complement_modes(a, a.size() * b.cosize()) if all(d >= 0 for d in flatten(b.stride)) else "negative"
    if isinstance(rest, str):
        if injective(a) and injective(b) and not injective(r):
            out.append(("R not injective", "two indices share an offset"))
        return out
    out.extend((f"mode 1: {name} (complement(A) o B)", ex) for name, ex in composition(from_modes(rest), b, _rest_modes(r)))
    return out


def _rest_modes(r: Layout) -> Layout:
    """R's modes after the first, as one layout (a product's B part, however many modes the result gave it)."""
    if isinstance(r.shape, int) or len(r.shape) < 2:
        raise LayoutError(f"a product has A's mode and at least one more, got {r}")
    if len(r.shape) == 2:
        return r.mode(1)
    return Layout(tuple(r.shape[1:]), tuple(r.stride[1:]))


def injective(layout: Layout) -> bool:
    values = offsets(layout)
    return len(set(values)) == len(values)


def _at(layout: Layout, index: int) -> int | None:
    """The layout at ``index``, or None outside its domain."""
    return layout(index) if 0 <= index < layout.size() else None



def recast(a: Layout, new_bits: int, old_bits: int, r: Layout) -> Violations:
    """recast_layout(new_bits, old_bits, A): the same buffer in other units (CuTe ``recast_layout``: ``upcast`` and
    ``downcast``). A downcast by k lists every narrow element of each of A's elements: R's offsets are the multiset
    {k * A(j) + i : j, i < k}. An upcast by k keeps the wide elements A starts on: R's offsets are the set
    {A(j) / k : k divides A(j)}."""
    if new_bits == old_bits:
        if r.size() != a.size() or offsets(r) != offsets(a):
            return [("same width: R is not A", f"{r} against {a}")]
        return []
    if new_bits < old_bits:
        k = old_bits // new_bits
        want = sorted(k * x + i for x in offsets(a) for i in range(k))
        if r.size() != a.size() * k:
            return [("downcast: size(R) != k * size(A)", f"{r.size()} != {k} * {a.size()}")]
        return [] if sorted(offsets(r)) == want else [("downcast: R is not A's elements split", "the multisets differ")]
    k = new_bits // old_bits
    want_set = {x // k for x in offsets(a) if x % k == 0}
    got = set(offsets(r))
    if got == want_set:
        return []
    extra, missing = sorted(got - want_set)[:SHOWN], sorted(want_set - got)[:SHOWN]
    return [("upcast: R is not the wide elements A starts on", f"extra {extra}, missing {missing}")]
