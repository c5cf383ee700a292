"""The rest of CuTe's public layout API judged by its defining properties, by brute force over whole domains
(``oracles.cute_properties``'s way): the tiled and flat divides and products, blocked and raked products, TV layouts,
slices, dice, select, group_modes, flatten, filter, filter_zeros, coalesce with a profile, max_common_*, nullspace,
make_ordered_layout and make_layout_like.

Sources, one line each where used: CUTLASS include/cute/layout.hpp (its @post comments), the CuTe DSL docstrings
(cutlass/cute/core.py), and media/docs/cpp/cute/02_layout_algebra.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from layoutfuzz.oracles.cute import Layout, flatten
from layoutfuzz.oracles.cute_preconditions import complement_modes, from_modes, leaves
from layoutfuzz.oracles.cute_properties import (
    Violations,
    _at,
    _first,
    coalesce,
    depth,
    injective,
    offsets,
    offsets_array,
)
from layoutfuzz.oracles.linear_layout import LayoutError

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


# ---- what the mode operations must return (select, group_modes, append/prepend, filter_zeros with a profile) ----

def by_mode_composition(a: Layout, tilers: tuple[Layout | None, ...], keep: bool) -> list[int | None]:
    """A o (B_0, B_1, ...) by mode: at each index, the sum over A's modes of A_i(B_i(c_i)), c_i the index's coordinate
    in the result's mode i (None: A_i itself); None past a mode's domain. A's modes past the tiler: CuTe C++ (and the
    DSL) drop them (layout.hpp: "Drop any modes of lhs that aren't hit by rhs"), pycute keeps them (``keep``)."""
    modes = top_modes(a)
    if not keep:
        modes = modes[:len(tilers)]
    tilers = tuple(tilers) + (None,) * (len(modes) - len(tilers))
    order = [("b", i, (m if t is None else t).size()) for i, (m, t) in enumerate(zip(modes, tilers))]
    return _function(order, lambda d: _sum(_at(m, d["b", i] if t is None else t(d["b", i]))
                                                       for i, (m, t) in enumerate(zip(modes, tilers))))


TILED_VARIANTS = {"logical_divide": ("divide", "logical"), "zipped_divide": ("divide", "zipped"),
            "tiled_divide": ("divide", "tiled"), "flat_divide": ("divide", "flat"),
            "logical_product": ("product", "logical"), "zipped_product": ("product", "zipped"),
            "tiled_product": ("product", "tiled")}


def top_modes_of(a: Layout) -> list[Layout]:
    return top_modes(a)


def from_top_modes(modes: list[Layout]) -> Layout:
    """The layout whose top-level modes are ``modes`` (one mode: itself)."""
    if len(modes) == 1:
        return modes[0]
    return Layout(tuple(m.shape for m in modes), tuple(m.stride for m in modes))


def selected(a: Layout, modes: list[int]) -> Layout:
    """select(A, modes) (DSL docstring: "select(layout, mode=[0, 2])  # Result: (4, 16):(32, 1)")."""
    top = top_modes_of(a)
    return from_top_modes([top[i] for i in modes if 0 <= i < len(top)])


def grouped(a: Layout, begin: int, end: int | None) -> Layout:
    """group_modes(A, begin, end) (DSL docstring: "(2, 3, 4, 5), 1, 3 -> (2, (3, 4), 5)")."""
    top, r = top_modes_of(a), len(top_modes_of(a))
    b = max(begin + r, 0) if begin < 0 else begin
    e = r if end is None else end + r if end < 0 else end
    inner = top[b:e]
    group = Layout(tuple(m.shape for m in inner), tuple(m.stride for m in inner))
    return from_top_modes(top[:b] + [group] + top[e:])


def extended(a: Layout, elem: Layout, up_to_rank: int | None, front: bool) -> Layout:
    """append/prepend(A, elem, up_to_rank) (DSL docstring: "prepend(layout, make_layout((2,))) # Returns
    (2,8,8):(1,1,8)"): elem repeated up to the rank (once without one)."""
    top = top_modes_of(a)
    count = 1 if up_to_rank is None else up_to_rank - len(top)
    more = [elem] * max(count, 0)
    return from_top_modes(more + top if front else top + more)


def zeroed(shape: Any, profile: Any) -> Any:
    """filter_zeros(layout, profile) (layout.hpp: "Replace the modes in layout that correspond to a 0 at the terminals
    of trg_profile with a 1-size")."""
    if isinstance(profile, tuple):
        return tuple(zeroed(s, q) for s, q in zip(shape, profile))
    return unit_shape(shape) if profile == 0 else shape


def unit_shape(shape: Any) -> Any:
    return 1 if isinstance(shape, int) else tuple(unit_shape(s) for s in shape)
