"""Samplers of CuTe layouts (hierarchical shape:stride) for the CuTe targets, over the whole domain CuTe accepts.

CuTe takes any positive shape and any integer stride (``cute/layout.hpp``), so the samplers draw primes and other
non-powers of two, size-1 modes with any stride, zero and negative strides, and layouts that are injective without
nesting (interleaved modes) as well as nested ones: the inputs where an operation's precondition fails are drawn as
often as those where it holds, and the target judges a refusal by the precondition (``oracles.cute_preconditions``).
``edge`` draws the domain's boundaries: one leaf or four, every size 1 or the largest, strides 0 and 1."""

from __future__ import annotations

from typing import Any

from layoutfuzz.generators.source import Source, permutation

SHAPES_POW2 = (1, 2, 4, 8)
SHAPES_ANY = (1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 13, 16)  # primes, composites and powers of two
STRIDES_ANY = (0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 16, 24, 32)
KINDS = ("any", "nested", "interleaved")  # any strides; injective with nested modes; injective, modes interleaved


def layout(source: Source, shapes: tuple[int, ...] = SHAPES_ANY, kind: str = "any", max_size: int = 256,
           max_cosize: int | None = None, negative: bool = False, edge: bool = False, most: int = 4) -> dict:
    """A layout as {"shape", "stride"} of 1-4 leaves. ``kind`` "nested": the strides of a column-major layout of the
    leaves in a random order, each after a gap (none where the offsets would reach ``max_cosize``); "interleaved": an
    injective layout whose modes do not nest (falls back to nested where none is found); "any": any strides (some
    negative with ``negative``). ``edge``: one leaf or ``most``, sizes 1 or the largest allowed."""
    count = source.choice((1, most)) if edge else source.integer(1, most)
    sizes = _sizes(source, shapes, count, max_size, edge)
    if kind == "nested":
        strides = _nested(source, sizes, max_cosize)
    elif kind == "interleaved":
        strides = _interleaved(source, sizes) or _nested(source, sizes, max_cosize)
    else:
        strides = [_stride(source, size, negative, edge) for size in sizes]
    structure = [source.integer(0, 2) for _ in range(count)]  # the same grouping for shape and stride
    return {"shape": _group(sizes, structure), "stride": _group(strides, structure)}


def _sizes(source: Source, shapes: tuple[int, ...], count: int, max_size: int, edge: bool) -> list[int]:
    sizes, total = [], 1
    for _ in range(count):
        size = source.choice((1, max(shapes))) if edge else source.choice(shapes)
        if total * size > max_size:
            size = 1
        sizes.append(size)
        total *= size
    return sizes


def _stride(source: Source, size: int, negative: bool, edge: bool) -> int:
    """Any stride; a size-1 mode gets any stride too (CuTe keeps it), edges take 0 and 1."""
    stride = source.choice((0, 1)) if edge else source.choice(STRIDES_ANY)
    return -stride if negative and stride and source.integer(0, 3) == 0 else stride


def _nested(source: Source, sizes: list[int], max_cosize: int | None) -> list[int]:
    order = permutation(source, len(sizes))
    gaps = [source.choice((1, 1, 1, 2, 3, 4)) for _ in sizes]
    strides = _column_major(sizes, order, gaps)
    if max_cosize is not None and sum((n - 1) * d for n, d in zip(sizes, strides)) + 1 > max_cosize:
        strides = _column_major(sizes, order, [1] * len(sizes))
    return strides


def _interleaved(source: Source, sizes: list[int], tries: int = 12) -> list[int] | None:
    """Strides making the layout injective with modes that do not nest (sorted by stride, one starts inside the
    extent of the one below it), e.g. (2,2):(3,2); None where no such strides are found (fewer than 2 modes > 1)."""
    if sum(1 for n in sizes if n > 1) < 2:
        return None
    for _ in range(tries):
        strides = [source.integer(1, 12) for _ in sizes]
        offsets = {0}
        for n, d in zip(sizes, strides):
            offsets = {o + i * d for o in offsets for i in range(n)}
        size = 1
        for n in sizes:
            size *= n
        if len(offsets) == size and not _nests(sizes, strides):
            return strides
    return None


def _nests(sizes: list[int], strides: list[int]) -> bool:
    current = 1
    for d, n in sorted((d, n) for n, d in zip(sizes, strides) if n > 1):
        if d % current:
            return False
        current = n * d
    return True


def _column_major(sizes: list[int], order: list[int], gaps: list[int]) -> list[int]:
    """Strides of the leaves taken in ``order``, each after a gap factor: an injective layout."""
    strides, step = [0] * len(sizes), 1
    for k, gap in zip(order, gaps):
        step *= gap
        strides[k] = step
        step *= sizes[k]
    return strides


def tiler(source: Source, a_shapes: list[int], max_size: int) -> dict:
    """A layout B to compose with or divide A by, its strides drawn where CuTe's divisibility conditions are at
    stake: products of A's leading modes times a divisor of the next (conditions met, and B's modes may still add
    up across a mode of A), or any stride (conditions often broken)."""
    count = source.integer(1, 3)
    sizes = _sizes(source, SHAPES_ANY, count, max_size, False)
    strides = []
    for _ in sizes:
        if source.integer(0, 1) and a_shapes:
            lead = source.integer(0, len(a_shapes) - 1)
            base = 1
            for n in a_shapes[:lead]:
                base *= n
            divisors = [d for d in range(1, a_shapes[lead] + 1) if a_shapes[lead] % d == 0]
            strides.append(base * source.choice(divisors))
        else:
            strides.append(source.choice(STRIDES_ANY[1:]))
    structure = [source.integer(0, 2) for _ in range(count)]
    return {"shape": _group(sizes, structure), "stride": _group(strides, structure)}


def _group(leaves: list[int], structure: list[int]) -> Any:
    modes, i = [], 0
    while i < len(leaves):
        if structure[i] == 0 and i + 1 < len(leaves):
            modes.append(tuple(leaves[i:i + 2]))
            i += 2
        else:
            modes.append(leaves[i])
            i += 1
    return modes[0] if len(modes) == 1 else tuple(modes)


def compact(source: Source, shapes: tuple[int, ...] = SHAPES_ANY, max_size: int = 64, edge: bool = False) -> dict:
    """A compact layout (a bijection onto 0 .. size-1, CuTe's "compact"): column-major in a random order."""
    count = source.choice((1, 3)) if edge else source.integer(1, 3)
    sizes = _sizes(source, shapes, count, max_size, edge)
    strides = _column_major(sizes, permutation(source, count), [1] * count)
    structure = [source.integer(0, 2) for _ in range(count)]
    return {"shape": _group(sizes, structure), "stride": _group(strides, structure)}


def coordinate(source: Source, shape: Any) -> Any:
    """A coordinate weakly congruent to ``shape``: each mode None (kept whole), an index into all of it, or (for a
    nested mode) a coordinate of its own modes."""
    pick = source.integer(0, 2 if isinstance(shape, (tuple, list)) else 1)
    if pick == 0:
        return None
    if pick == 1:
        return source.integer(0, _size(shape) - 1)
    return [coordinate(source, s) for s in shape]


def profile(source: Source, shape: Any) -> Any:
    """A target profile for ``coalesce``: 0 (coalesce this mode whole) or, at a tuple, a profile of its first modes."""
    if not isinstance(shape, (tuple, list)) or source.integer(0, 2) == 0:
        return 0
    return [profile(source, s) for s in shape[:source.integer(1, len(shape))]]


def order(source: Source, shape: Any) -> Any:
    """An order for ``make_ordered_layout``, weakly congruent to ``shape`` (an integer may cover a nested mode), its
    values distinct (CuTe gives tied orders one starting stride: no longer compact)."""
    values = iter(permutation(source, len(_leaves(shape))))
    spread = source.choice((1, 3))  # any distinct integers, not only 0 .. n-1

    def build(s: Any) -> Any:
        if isinstance(s, (tuple, list)) and source.integer(0, 3):
            return [build(x) for x in s]
        value = min(next(values) for _ in _leaves(s))  # a covering integer takes one value, the rest go unused
        return value * spread
    return build(shape)


def by_mode(source: Source, modes: list[tuple[Any, Any]], product: bool) -> list:
    """A by-mode tiler for A's top-level ``modes`` ((shape, stride) each): for its first 1 .. rank modes, None (the mode
    is left as it is), an integer n (the layout n:1) or a layout (a divide's drawn against that mode's shape)."""
    out: list = []
    for shape, _ in modes[:source.integer(1, len(modes))]:
        pick = source.integer(0, 3)
        if pick == 0:
            out.append(None)
        elif pick == 1:
            out.append(source.choice(SHAPES_ANY[1:8]) if product else source.choice(_divisors(_size(shape))))
        else:
            out.append(layout(source, max_size=4) if product else tiler(source, _leaves(shape), _size(shape)))
    return out


def _leaves(t: Any) -> list[int]:
    return [t] if isinstance(t, int) else [x for s in t for x in _leaves(s)]


def _size(t: Any) -> int:
    total = 1
    for n in _leaves(t):
        total *= n
    return total


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0] + [n + 1]  # and one that does not divide


def zeros_profile(source: Source, shape: Any) -> Any:
    """A profile congruent to ``shape`` of 0s and 1s (``filter_zeros(layout, profile)``: size 1 where it is 0)."""
    if isinstance(shape, (tuple, list)):
        return [zeros_profile(source, s) for s in shape]
    return source.integer(0, 1)


def restride(source: Source, a: dict) -> Any:
    """Strides for a second layout of A's shape: A's own, a compact column-major order of its leaves, or any."""
    sizes = _leaves(a["shape"])
    pick = source.integer(0, 2)
    if pick == 0:
        return a["stride"]
    if pick == 1:
        strides = _column_major(sizes, permutation(source, len(sizes)), [1] * len(sizes))
    else:
        strides = [source.choice(STRIDES_ANY) for _ in sizes]
    it = iter(strides)

    def build(s: Any) -> Any:
        return next(it) if isinstance(s, int) else [build(x) for x in s]
    return build(a["shape"])
