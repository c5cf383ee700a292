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


def composition(a: Layout, b: Layout, r: Layout) -> Violations:
    """R = A o B: size(R) == size(B), and R(i) == A(B(i)) for every i < size(B)."""
    out: Violations = []
    if r.size() != b.size():
        return [("size(R) != size(B)", f"{r.size()} != {b.size()}")]
    _first([f"i={i}: R(i)={r(i)}, A(B(i))={a(b(i))}" for i in range(b.size()) if r(i) != a(b(i))], "R(i) != A(B(i))", out)
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
    """logical_divide(A, B) = A o (B, complement(B, size(A))): the same offsets as A, each once (a reordering of
    A's domain), and its first mode is A o B."""
    out: Violations = []
    if r.size() != a.size():
        return [("size(R) != size(A)", f"{r.size()} != {a.size()}")]
    if sorted(offsets(r)) != sorted(offsets(a)):
        out.append(("R not a reordering of A", "the multisets of offsets differ"))
    tile = r.mode(0)
    out.extend((f"mode 0: {name}", ex) for name, ex in composition(a, b, tile))
    return out


def logical_product(a: Layout, b: Layout, r: Layout) -> Violations:
    """logical_product(A, B) = (A, complement(A, size(A) * cosize(B)) o B): size(A) * size(B) indices, its first
    mode is A, and, A and B injective, R is injective."""
    out: Violations = []
    if r.size() != a.size() * b.size():
        return [("size(R) != size(A) * size(B)", f"{r.size()} != {a.size() * b.size()}")]
    first = r.mode(0)
    if first.size() != a.size() or offsets(first) != offsets(a):
        out.append(("mode 0 is not A", f"{first} against {a}"))
    if injective(a) and injective(b) and not injective(r):
        out.append(("R not injective", "two indices share an offset"))
    return out


def injective(layout: Layout) -> bool:
    values = offsets(layout)
    return len(set(values)) == len(values)


def _at(layout: Layout, index: int) -> int | None:
    """The layout at ``index``, or None outside its domain."""
    return layout(index) if 0 <= index < layout.size() else None

