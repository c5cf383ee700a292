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

from dataclasses import dataclass

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


# ---- the rest of CuTe's public layout API ------------------------------------------------------------------------
# Sources, one line each where used: CUTLASS include/cute/layout.hpp (its @post comments), the CuTe DSL docstrings
# (cutlass/cute/core.py), and media/docs/cpp/cute/02_layout_algebra.md.

Entry = Layout | None  # one mode's tiler in a by-mode tiler (an integer n is the layout n:1; None leaves the mode)
Factor = tuple[str, int, int]  # one factor of a result's index: (kind, mode, size), kind "t"/"r" (divide) or "a"/"b"


def top_modes(layout: Layout) -> list[Layout]:
    """The layout's top-level modes (one for a layout whose shape is an integer)."""
    return [layout] if isinstance(layout.shape, int) else [layout.mode(i) for i in range(len(layout.shape))]


def _colex(digits: list[int], sizes: list[int]) -> int:
    index, scale = 0, 1
    for d, n in zip(digits, sizes):
        index, scale = index + d * scale, scale * n
    return index


def _function(order: list[Factor], fn) -> list[int | None]:
    """``fn(digits)`` at every index of a result whose colexicographic index runs over ``order``'s factors."""
    sizes = [n for _, _, n in order]
    total = 1
    for n in sizes:
        total *= n
    out = []
    for index in range(total):
        digits = {}
        for kind, mode, n in order:
            digits[kind, mode], index = index % n, index // n
        out.append(fn(digits))
    return out


def _check_function(r: Layout, want: list[int | None], name: str) -> Violations:
    out: Violations = []
    if r.size() != len(want):
        return [("size(R) != the defined size", f"{r.size()} != {len(want)}")]
    if None in want:
        return []  # read past an input's domain: implementation-defined (the precondition names it)
    got = offsets_array(r).tolist()
    _first([f"i={i}: R(i)={g}, expected {w}" for i, (g, w) in enumerate(zip(got, want)) if g != w], name, out)
    return out


def _check_tops(r: Layout, prefix: list[int], rest: int | None) -> Violations:
    """R's top-level modes: the first have sizes ``prefix``; the others (at least one where ``rest`` is given) make
    up ``rest`` elements."""
    sizes = [m.size() for m in top_modes(r)]
    more = sizes[len(prefix):]
    tail = 1
    for n in more:
        tail *= n
    if sizes[:len(prefix)] != prefix or (rest is not None and (not more or tail != rest)) or (rest is None and more):
        want = f"{prefix} then modes of {rest} elements" if rest is not None else str(prefix)
        return [("another mode structure", f"top-level mode sizes {sizes}, expected {want}")]
    return []


@dataclass(frozen=True)
class Tiled:
    """A divide or product by mode: per mode i of A, its tiler (a layout, or None), and how the result orders the
    factors of its index. ``kind`` "divide": mode i splits into a tile t_i and a rest r_i, A_i o (T_i, T_i*);
    "product": into A_i's a_i and the tiler's b_i, A_i(a_i) + complement(A_i)(T_i(b_i))."""

    kind: str
    a: Layout
    tilers: tuple[Entry, ...]

    def modes(self) -> list[Layout]:
        return top_modes(self.a)

    def sizes(self, i: int) -> tuple[int, int] | None:
        """(first, second) factor sizes of mode i, or None where its complement does not exist."""
        a_i, t = self.modes()[i], self.tilers[i] if i < len(self.tilers) else None
        if t is None:  # the mode as it is: its rest (pycute's hier_unzip: (1:0, A_i); C++ zip2_by appends it there)
            return 1, a_i.size()
        if self.kind == "divide":
            rest = complement_modes(t, a_i.size())
            return None if isinstance(rest, str) else (t.size(), from_modes(rest).size())
        if any(d < 0 for d in flatten(t.stride)) or isinstance(complement_modes(a_i, a_i.size() * t.cosize()), str):
            return None
        return a_i.size(), t.size()

    def value(self, i: int, first: int, second: int) -> int | None:
        a_i, t = self.modes()[i], self.tilers[i] if i < len(self.tilers) else None
        if t is None:
            return _at(a_i, second)
        if self.kind == "divide":
            rest = complement_modes(t, a_i.size())
            d = from_modes(leaves(t) + rest)
            return _at(a_i, d(first + t.size() * second))
        c = from_modes(complement_modes(a_i, a_i.size() * t.cosize()))
        inner = t(second)
        return None if not 0 <= inner < c.size() else a_i(first) + c(inner)


def tiled(variant: str, spec: Tiled, r: Layout) -> Violations:
    """A by-mode divide or product (CuTe's ``logical_divide``/``logical_product`` with a tuple tiler "by-mode", each
    mode divided or multiplied by its tiler, None leaving it; ``zipped_*`` gathers the first factors into mode 0 and
    the rest into mode 1, ``tiled_*`` unpacks mode 1, ``flat_*`` both (layout.hpp: "(BLK_A,BLK_B,...,a,b,...,x,y)")):
    R at every index is the defining function of its factors, in the variant's order, and its top-level modes have
    the variant's sizes."""
    n = len(spec.modes())
    sizes = [spec.sizes(i) for i in range(n)]
    if any(s is None for s in sizes):
        return _weak(spec, r)
    k = len(spec.tilers)
    first, second = ("t", "r") if spec.kind == "divide" else ("a", "b")
    f = [(first, i, sizes[i][0]) for i in range(n)]
    s = [(second, i, sizes[i][1]) for i in range(n)]
    if variant == "logical":
        order = [x for i in range(n) for x in (f[i], s[i])]
        prefix, rest = [sizes[i][0] * sizes[i][1] for i in range(n)], None
    else:
        order = f[:k] + s  # past the tiler, mode i is A_i whole, in the rest
        ft, st = _prod(x[2] for x in f[:k]), _prod(x[2] for x in order[k:])
        tails = [x[2] for x in order[k:]]
        prefix, rest = {"zipped": ([ft, st], None), "tiled": ([ft] + tails, None),
                        "flat": ([x[2] for x in f[:k]] + tails, None)}[variant]
    want = _function(order, lambda d: _sum(spec.value(i, d.get((first, i), 0), d.get((second, i), 0)) for i in range(n)))
    return _check_tops(r, prefix, rest) + _check_function(r, want, f"R(i) != the {spec.kind}'s offset")


def _weak(spec: Tiled, r: Layout) -> Violations:
    """Where a complement does not exist, what is still known: a divide reorders A's offsets, a product of injective
    layouts is injective."""
    if spec.kind == "divide":
        if r.size() == spec.a.size() and sorted(offsets(r)) != sorted(offsets(spec.a)):
            return [("R not a reordering of A", "the multisets of offsets differ")]
        return []
    tilers = [t for t in spec.tilers if t is not None]
    if injective(spec.a) and all(injective(t) for t in tilers) and not injective(r):
        return [("R not injective", "two indices share an offset")]
    return []


def _prod(values) -> int:
    total = 1
    for v in values:
        total *= v
    return total


def _sum(values) -> int | None:
    total = 0
    for v in values:
        if v is None:
            return None
        total += v
    return total


def appended(layout: Layout, rank: int) -> list[Layout]:
    """CuTe's ``append<R>(layout)``: its top-level modes, then 1:0 up to ``rank``."""
    return top_modes(layout) + [Layout(1, 0)] * (rank - len(top_modes(layout)))


def rank_product(variant: str, a: Layout, b: Layout, r: Layout) -> Violations:
    """``blocked_product`` / ``raked_product`` (layout.hpp): logical_product(append<R>(A), append<R>(B)) zipped mode by
    mode, (a_i, b_i) blocked, (b_i, a_i) raked; "@post rank(result) == max(rank(block), rank(tiler))". R at
    coordinate (a, b) is A(a) + complement(A, size(A) * cosize(B))(B(b))."""
    n = max(len(top_modes(a)), len(top_modes(b)))
    am, bm = appended(a, n), appended(b, n)
    rest = complement_modes(a, a.size() * b.cosize()) if all(d >= 0 for d in flatten(b.stride)) else "negative"
    if isinstance(rest, str):
        return _weak(Tiled("product", a, (b,)), r)
    c = from_modes(rest)
    pairs = [(("a", i, am[i].size()), ("b", i, bm[i].size())) for i in range(n)]
    order = [x for p in pairs for x in (p if variant == "blocked" else p[::-1])]
    a_sizes, b_sizes = [m.size() for m in am], [m.size() for m in bm]

    def fn(d: dict) -> int | None:
        x = b(_colex([d["b", i] for i in range(n)], b_sizes))
        return None if not 0 <= x < c.size() else a(_colex([d["a", i] for i in range(n)], a_sizes)) + c(x)

    return _check_tops(r, [a_sizes[i] * b_sizes[i] for i in range(n)], None) + _check_function(
        r, _function(order, fn), "R(i) != A(a) + complement(A)(B(b))")


def flat_product(a: Layout, b: Layout, r: Layout) -> Violations:
    """``flat_product(A, B)`` (layout.hpp): zipped_product unpacked, (A's modes, complement(A) o B's modes): A's
    top-level modes first, then the rest; R(i) is the logical product's offset."""
    rest = complement_modes(a, a.size() * b.cosize()) if all(d >= 0 for d in flatten(b.stride)) else "negative"
    if isinstance(rest, str):
        return _weak(Tiled("product", a, (b,)), r)
    c = from_modes(rest)
    want = [a(i % a.size()) + c(b(i // a.size())) if b(i // a.size()) < c.size() else None
            for i in range(a.size() * b.size())]
    return _check_tops(r, [m.size() for m in top_modes(a)], b.size()) + _check_function(
        r, want, "R(i) != A(a) + complement(A)(B(b))")


def flat_divide(a: Layout, b: Layout, r: Layout) -> Violations:
    """``flat_divide(A, B)`` with a layout B (layout.hpp): zipped_divide unpacked, the same offsets in the same order
    as ``logical_divide``; how many modes the tile gets is A o B's choice."""
    rest = complement_modes(b, a.size())
    if isinstance(rest, str):
        return _weak(Tiled("divide", a, (b,)), r)
    want = [_at(a, x) for x in offsets(from_modes(leaves(b) + rest))]
    return _check_function(r, want, "R(i) != A(B(i)) (A o (B, complement(B, size(A))))")


def layout_tv(thr: Layout, val: Layout, tiler: list[int], tv: Layout) -> Violations:
    """``make_layout_tv(thr, val)`` (DSL docstring): "a thread-value layout by repeating the val_layout over the
    thr_layout": raked_product(thr, val) maps an (M,N) coordinate to (thread, value), the tile's mode i holding
    size(thr_i) * size(val_i) elements, value fastest; ``layout_tv`` maps (thread, value) back: thr and val at the
    coordinate tv(t, v) names thread t and value v, and the tiler is the tile's shape."""
    n = max(len(top_modes(thr)), len(top_modes(val)))
    tm, vm = appended(thr, n), appended(val, n)
    want = [tm[i].size() * vm[i].size() for i in range(n)]
    if list(tiler) != want:
        return [("tiler is not the tile's shape", f"{list(tiler)} != {want}")]
    big_t, big_v = thr.size(), val.size()
    if tv.size() != big_t * big_v:
        return [("size(tv) != size(thr) * size(val)", f"{tv.size()} != {big_t} * {big_v}")]
    wrong = []
    for k in range(big_t * big_v):
        t, v, c = k % big_t, k // big_t, tv(k)
        if not 0 <= c < _prod(want):
            wrong.append(f"(t={t}, v={v}): tv = {c}, outside the tile")
            continue
        digits = []
        for n_i in want:
            digits.append(c % n_i)
            c //= n_i
        ts = [d // vm[i].size() for i, d in enumerate(digits)]
        vs = [d % vm[i].size() for i, d in enumerate(digits)]
        got_t = thr(_colex(ts, [m.size() for m in tm]))
        got_v = val(_colex(vs, [m.size() for m in vm]))
        if (got_t, got_v) != (t, v):
            wrong.append(f"(t={t}, v={v}): tv = {tv(k)} belongs to thread {got_t}, value {got_v}")
    out: Violations = []
    _first(wrong, "tv(t, v) is not thread t's value v", out)
    return out


def compact(layout: Layout) -> bool:
    """A bijection onto 0 .. size-1 (CuTe's "compact")."""
    return sorted(offsets(layout)) == list(range(layout.size()))


def _kept(shape, stride, coord, keep_none: bool) -> tuple[list[Layout], int]:
    """The modes of ``shape:stride`` paired with None in ``coord`` (``keep_none``) or with an integer (not), in order,
    and the offset of ``coord`` with None read as 0 (DSL ``slice_``/``dice``: "lift_slice" keeps a mode paired with
    None, "lift_dice" one paired with an integer; an integer against a nested mode is an index into all of it)."""
    if isinstance(coord, (tuple, list)):
        if isinstance(shape, int) or len(shape) != len(coord):
            raise LayoutError(f"coordinate {coord} is not weakly congruent to {shape}")
        kept, offset = [], 0
        for s, d, c in zip(shape, stride, coord):
            k, o = _kept(s, d, c, keep_none)
            kept, offset = kept + k, offset + o
        return kept, offset
    here = Layout(shape, stride)
    if coord is None:
        return ([here] if keep_none else []), 0
    return ([] if keep_none else [here]), here(coord)


def _mode_list(r: Layout) -> list[Layout]:
    """R's top-level modes, a rank-1 tuple unwrapped (CuTe gives ``((2,3),)`` or ``(2,3)`` for one kept mode)."""
    if isinstance(r.shape, tuple) and len(r.shape) == 1 and isinstance(r.shape[0], tuple):
        return top_modes(r.mode(0))
    return [] if r.shape == () else top_modes(r)


def _same_modes(r: Layout, kept: list[Layout], name: str) -> Violations:
    """R is the kept modes side by side: the same leaves (shape and stride) in order, and for several kept modes the
    same top-level sizes."""
    want_leaves = [x for m in kept for x in leaves(m)]
    if leaves(r) != want_leaves and not (not want_leaves and r.size() == 1):
        return [(name, f"leaves {leaves(r)}, expected {want_leaves}")]
    if len(kept) > 1 and [m.size() for m in _mode_list(r)] != [m.size() for m in kept]:
        return [(f"{name} (modes regrouped)", f"{r} against {[str(m) for m in kept]}")]
    return []


def slice_(a: Layout, coord, r: Layout, offset: int | None) -> Violations:
    """``slice_(A, coord)`` (DSL docstring: "None represents keeping all elements in that mode"; pycute's
    ``slice_and_offset``): R is A's modes paired with None, and the offset is A at coord with None read as 0."""
    kept, want = _kept(a.shape, a.stride, coord, True)
    out = _same_modes(r, kept, "R is not the modes paired with None")
    if offset is not None and offset != want:
        out.append(("offset != A(coord with None as 0)", f"{offset} != {want}"))
    return out


def dice(a: Layout, coord, r: Layout) -> Violations:
    """``dice(A, coord)`` (DSL docstring: "Keep modes in input when it is paired with an integer in dicer")."""
    kept, _ = _kept(a.shape, a.stride, coord, False)
    return _same_modes(r, kept, "R is not the modes paired with an integer")


def structural(a: Layout, want: Layout, r: Layout, name: str) -> Violations:
    """R is exactly ``want`` (shape and stride, nesting included): for operations defined on the modes themselves
    (``select``, ``group_modes``, ``append``, ``prepend``)."""
    same = (_unwrap(r.shape), _unwrap(r.stride)) == (_unwrap(want.shape), _unwrap(want.stride))
    return [] if same else [(name, f"{r} against {want}")]


def _unwrap(t):
    """A rank-1 tuple as its one element (CuTe prints (4,) and 4, ((2,3),) and (2,3) for one mode)."""
    while isinstance(t, tuple) and len(t) == 1:
        t = t[0]
    return t


def flattened(a: Layout, r: Layout) -> Violations:
    """``flatten(A)`` (DSL docstring: "Layout(flatten(shape), flatten(stride))"): A's leaves at depth at most 1."""
    if leaves(r) != leaves(a):
        return [("R is not A's leaves", f"{r} against {a}")]
    return [("depth(R) > 1", str(r.shape))] if depth(r.shape) > 1 else []


def filter_(a: Layout, r: Layout) -> Violations:
    """``filter(A)`` (layout.hpp: "Remove all of the 0-strides and 1-sizes / Return 1-shape if empty", coalesce of
    filter_zeros): R is A with its stride-0 leaves dropped, as a function of the index, coalesced (depth <= 1), with
    no leaf of size 1 or stride 0 unless R is 1:0."""
    kept = [(n, d) for n, d in leaves(a) if d != 0 and n != 1]
    want = offsets(from_modes(kept)) if kept else [0]
    out: Violations = []
    if r.size() != len(want):
        return [("size(R) != the size of A's non-zero-stride modes", f"{r.size()} != {len(want)}")]
    _first([f"i={i}: R(i)={g}, expected {w}" for i, (g, w) in enumerate(zip(offsets(r), want)) if g != w],
           "R(i) != A without its stride-0 modes", out)
    if depth(r.shape) > 1:
        out.append(("depth(R) > 1", str(r.shape)))
    if r.size() > 1 and any(n == 1 or d == 0 for n, d in leaves(r)):
        out.append(("R keeps a size-1 or stride-0 mode", str(r)))
    return out


def filter_zeros(a: Layout, r: Layout) -> Violations:
    """``filter_zeros(A)`` (layout.hpp: "Replace the modes in layout that have a 0-stride with a 1-size"): R has A's
    nesting and strides, and size 1 exactly where A's stride is 0."""
    want = Layout(_unflat(a.shape, [1 if d == 0 else n for n, d in leaves(a)]), a.stride)
    return structural(a, want, r, "R is not A with its stride-0 modes of size 1")


def _unflat(profile, values: list[int]):
    it = iter(values)

    def build(p):
        return next(it) if isinstance(p, int) else tuple(build(x) for x in p)

    return build(profile)


def coalesce_profile(a: Layout, profile, r: Layout) -> Violations:
    """``coalesce(A, profile)`` (layout.hpp: "Apply coalesce at the terminals of trg_profile"): R is A's function;
    for a tuple profile, R has A's rank, mode i < len(profile) is coalesce(A_i, profile[i]) and every mode past the
    profile is A's own; at an integer of the profile, the mode is coalesced (depth at most 1)."""
    if not isinstance(profile, (tuple, list)):
        return coalesce(a, r)
    out: Violations = []
    if r.size() != a.size() or offsets(r) != offsets(a):
        out.append(("R(i) != A(i)", f"{r} against {a}"))
    am, rm = top_modes(a), top_modes(r)
    if len(rm) != len(am):
        return out + [("rank(R) != rank(A) at a tuple of the profile", f"{r} against {a}")]
    for i, (x, y) in enumerate(zip(am, rm)):
        if i >= len(profile):
            out.extend(structural(x, x, y, "a mode past the profile changed"))
        else:
            out.extend(coalesce_profile(x, profile[i], y))
    return sorted(set(out))


def max_common(a: Layout, b: Layout, r: Layout | None, n: int | None) -> Violations:
    """``max_common_layout(a, b)`` and ``max_common_vector(a, b)`` (layout.hpp: "@post For all 0 <= i < size(R), a(R(i))
    == i and b(R(i)) == i"; "Int<N> with N >= 1, For all 0 <= n < N, a(b.get_1d_coord(n)) == n"): the elements that
    "logically correspond"; where a and b are one bijection onto 0..size-1, all of them (the maximum)."""
    out: Violations = []
    if r is not None:
        wrong = [f"i={i}: R(i)={r(i)}, a={_at(a, r(i))}, b={_at(b, r(i))}" for i in range(r.size())
                 if not (_at(a, r(i)) == i and _at(b, r(i)) == i)]
        _first(wrong, "a(R(i)) != i or b(R(i)) != i", out)
        count = r.size()
    else:
        if n < 1:
            return [("N < 1", str(n))]
        at_b = {}
        for j in range(b.size()):
            at_b.setdefault(b(j), []).append(j)
        wrong = [f"n={x}" for x in range(n) if not any(a(j) == x for j in at_b.get(x, []))]
        _first(wrong, "a(b^-1(n)) != n", out)
        count = n
    if offsets(a) == offsets(b) and compact(a) and count != a.size():
        out.append(("not the maximum (a == b, a bijection)", f"{count} of {a.size()}"))
    return out


def nullspace(a: Layout, r: Layout) -> Violations:
    """``nullspace(A)`` (layout.hpp / DSL docstring: "layout(result(i)) == 0 for all i < size(result)",
    "nullspace(result) == Layout<_1,_0>", "size(result) == size(layout) / size(filter(layout))"): R's offsets are
    distinct indices of A where A is 0, as many as A's stride-0 modes hold."""
    out: Violations = []
    want = _prod(n for n, d in leaves(a) if d == 0)
    if r.size() != want:
        return [("size(R) != size(A) / size(filter(A))", f"{r.size()} != {want}")]
    _first([f"i={i}: A(R(i))={_at(a, r(i))}" for i in range(r.size()) if _at(a, r(i)) != 0], "A(R(i)) != 0", out)
    if not injective(r):
        out.append(("nullspace(R) != 1:0 (R not injective)", str(r)))
    return out


def ordered(shape, order, r: Layout) -> Violations:
    """``make_ordered_layout(shape, order)`` (layout.hpp: "a compact layout with shape @a shape and strides following
    the order induced by @a order"; compact_order: a mode's stride starts at the product of the shapes of lesser
    order, column-major within one): R has the shape, is compact, and orders its strides so."""
    out: Violations = []
    if r.shape != shape:
        return [("shape(R) != shape", f"{r.shape} != {shape}")]
    if not compact(r):
        out.append(("R not compact", str(r)))
    groups = _order_groups(shape, order)
    strides = list(flatten(r.stride))
    key = [(o, j) for o, leaves_ in groups for j in range(len(leaves_))]  # lesser order first, then column-major
    flat = [x for _, leaves_ in groups for x in leaves_]
    ranked = sorted(zip(key, flat), key=lambda item: item[0])
    big = [strides[i] for _, i in ranked if flatten(shape)[i] > 1]
    if big != sorted(big):
        out.append(("strides do not follow the order", f"{r} for order {order}"))
    return out


def _order_groups(shape, order) -> list[tuple[int, list[int]]]:
    """(order value, the leaf indices it covers) for an order weakly congruent to the shape."""
    groups, start = [], [0]

    def walk(s, o):
        if isinstance(o, int):
            count = len(flatten(s))
            groups.append((o, list(range(start[0], start[0] + count))))
            start[0] += count
            return
        for x, y in zip(s if isinstance(s, tuple) else (s,), o):
            walk(x, y)

    walk(shape, order)
    return groups


def like(a: Layout, r: Layout) -> Violations:
    """``make_layout_like(A)`` (layout.hpp: "a compact layout with the same shape as @a layout and strides following
    the order induced by @a layout.stride(). Static-0 strides in the input @a layout are preserved"): R has A's
    shape, A's stride-0 leaves keep stride 0, and its other leaves are compact, ordered as A's strides (ties aside)."""
    out: Violations = []
    if r.shape != a.shape:
        return [("shape(R) != shape(A)", f"{r.shape} != {a.shape}")]
    pairs = list(zip(leaves(a), flatten(r.stride)))
    if any(d == 0 and rd != 0 for (n, d), rd in pairs):
        out.append(("a stride-0 mode of A is not stride 0", str(r)))
    live = [((n, d), rd) for (n, d), rd in pairs if d != 0 and n > 1]
    if len({d for (_, d), _ in live}) == len(live):
        if not compact(from_modes([(n, rd) for (n, _), rd in live])) if live else False:
            out.append(("R's non-zero-stride modes not compact", str(r)))
        ranked = [rd for (_, d), rd in sorted(live, key=lambda x: x[0][1])]
        if ranked != sorted(ranked):
            out.append(("strides not ordered like A's", f"{r} for {a}"))
    return out
