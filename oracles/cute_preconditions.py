"""Whether CuTe's layout-algebra operations are defined on their inputs: each operation's documented precondition.

A system may refuse an input only where the precondition fails; where it holds, a refusal is a finding (a spurious
refusal), and where it fails but the system answers, the answer must still have the operation's defining property
(``oracles.cute_properties``). Each function returns None where the precondition holds, else the reason it fails, as ``NAME: detail`` (NAME, one of a few, names the condition).

Sources: CUTLASS ``media/docs/cpp/cute/02_layout_algebra.md`` (composition's stride and shape divisibility
conditions, complement's and the inverses' definitions, divide and product as compositions with a complement) and
``include/cute/layout.hpp`` (``upcast``/``downcast``: ``shape_div`` and "Downcast requires adjacent elements").
"""

from __future__ import annotations

from layoutfuzz.oracles.cute import Layout, flatten

Mode = tuple[int, int]  # one leaf: (shape, stride)


def leaves(layout: Layout) -> list[Mode]:
    return list(zip(flatten(layout.shape), flatten(layout.stride)))


def from_modes(modes: list[Mode]) -> Layout:
    """The flat layout of leaf modes ``(shape, stride)``."""
    return Layout(tuple(n for n, _ in modes), tuple(d for _, d in modes))


def coalesced_shapes(layout: Layout) -> list[int]:
    """The shapes of coalesced ``layout``'s modes (CuTe checks divisibility against those)."""
    return list(flatten(layout.coalesce().shape))


def composition_mode(a_shapes: list[int], shape: int, stride: int) -> str | None:
    """Whether one mode ``shape:stride`` of B composes with A (A's coalesced shapes): walking A's modes but the last
    (which extends without bound), the stride divides each mode it enters or is divided by it (stride divisibility),
    and the shape is divided by each mode it covers whole (shape divisibility)."""
    if stride == 0:
        return None  # a broadcast: a mode of B that reads A at one offset (a size-1 mode is checked like any other)
    rest_shape, rest_stride = shape, abs(stride)
    for n in a_shapes[:-1]:
        if n % rest_stride and rest_stride % n:
            return f"stride divisibility: stride {rest_stride} of B's mode {shape}:{stride} and A's mode {n} divide neither way"
        covered = min(max(1, n // rest_stride), rest_shape)
        if rest_shape % covered:
            return f"shape divisibility: B's mode {shape}:{stride} covers {covered} of A's mode {n}, which does not divide {rest_shape}"
        rest_shape //= covered
        rest_stride = -(-rest_stride // n)
    return None


def composition(a: Layout, b: Layout) -> str | None:
    """composition(A, B): B's offsets lie in A's domain (R(i) = A(B(i)) needs A at B(i); past its domain CuTe's
    implementations extend A in different ways), and every leaf mode of B composes with coalesced A."""
    if any(d < 0 for _, d in leaves(b)) or b.cosize() > a.size():
        return f"past A's domain: B reads cosize(B) = {b.cosize()} > size(A) = {a.size()} (or at a negative offset)"
    shapes = coalesced_shapes(a)
    for shape, stride in leaves(b):
        reason = composition_mode(shapes, shape, stride)
        if reason:
            return reason
    return None


def complement_modes(a: Layout, cotarget: int) -> list[Mode] | str:
    """complement(A, M)'s leaf modes, or why it has none: A's modes (strides 0 and shapes 1 dropped) sorted by
    stride must nest, each stride a multiple of the extent of the modes below it (which makes A injective)."""
    current, modes = 1, []
    for stride, shape in sorted((d, n) for n, d in leaves(a) if d != 0 and n != 1):
        if stride < 0:
            return f"negative stride: stride {stride} has no complement"
        if stride % current:
            return (f"modes do not nest: stride {stride} is not a multiple of {current}, the extent of the modes "
                    "below it (interleaved or overlapping)")
        modes.append((stride // current, current))
        current = shape * stride
    modes.append((-(-cotarget // current), current))
    return modes


def complement(a: Layout, cotarget: int) -> str | None:
    found = complement_modes(a, cotarget)
    return found if isinstance(found, str) else None


def left_inverse(a: Layout) -> str | None:
    """left_inverse(A) = right_inverse((A, complement(A))): A injective (no broadcast mode) with modes that nest."""
    if any(d == 0 and n > 1 for n, d in leaves(a)):
        return "not injective: a mode of size > 1 has stride 0"
    return complement(a, 1)


def logical_divide(a: Layout, b: Layout) -> str | None:
    """logical_divide(A, B) = A o (B, complement(B, size(A))): B has a complement, and A composes with both."""
    rest = complement_modes(b, a.size())
    if isinstance(rest, str):
        return f"{rest} (the tiler's complement)"
    extent, step = rest[-1]
    if extent * step != a.size():
        return f"tiler does not tile A: (B, complement(B)) spans {extent * step}, size(A) is {a.size()}"
    shapes = coalesced_shapes(a)
    for shape, stride in leaves(b) + rest:
        reason = composition_mode(shapes, shape, stride)
        if reason:
            return reason
    return None


def logical_product(a: Layout, b: Layout) -> str | None:
    """logical_product(A, B) = (A, complement(A, size(A) * cosize(B)) o B): A has a complement, and it composes
    with B."""
    if any(d < 0 for _, d in leaves(b)):
        return "negative stride: a tiler with a negative stride has no cosize"
    rest = complement_modes(a, a.size() * b.cosize())
    if isinstance(rest, str):
        return f"{rest} (A's complement)"
    shapes = coalesced_shapes(from_modes(rest))
    for shape, stride in leaves(b):
        reason = composition_mode(shapes, shape, stride)
        if reason:
            return f"{reason} (the complement o B)"
    return None


def shape_div(a: int, b: int) -> int | None:
    """CuTe's ``shape_div`` (a / b, or 1 where b is a multiple of a), None where neither divides the other (its
    static assert "Static shape_div failure")."""
    if a % b == 0:
        return a // b
    if b % a == 0:
        return 1
    return None


def recast(a: Layout, new_bits: int, old_bits: int) -> str | None:
    """recast_layout(new_bits, old_bits, A): a downcast needs a stride-1 mode ("Downcast requires adjacent
    elements"); an upcast by r divides each stride and each stride-1 extent exactly (``upcast``'s ``shape_div``)."""
    if new_bits < old_bits:
        return None if any(d == 1 for _, d in leaves(a)) else "no stride-1 mode: a downcast needs adjacent elements"
    ratio = new_bits // old_bits
    for shape, stride in leaves(a):
        if stride == 0:
            continue
        step = shape_div(ratio, abs(stride))
        if step is None or shape_div(shape, step) is None or shape_div(abs(stride), ratio) is None:
            return f"upcast not exact: mode {shape}:{stride} is not divided evenly by {ratio}"
    return None


def by_mode(a: Layout, tilers: list, product: bool) -> str | None:
    """A by-mode tiler (layout.hpp: "static_assert(tuple_size<Tiler>::value <= rank, "Too many modes in tiler")"),
    then each mode's own precondition; None leaves its mode and has none."""
    modes = [a] if isinstance(a.shape, int) else [a.mode(i) for i in range(len(a.shape))]
    if len(tilers) > len(modes):
        return f"too many modes in tiler: {len(tilers)} for rank {len(modes)}"
    for mode, tiler in zip(modes, tilers):
        if tiler is not None:
            reason = logical_product(mode, tiler) if product else logical_divide(mode, tiler)
            if reason:
                return reason
    return None


def compact(layout: Layout) -> bool:
    """A bijection onto 0 .. size-1."""
    values = sorted(layout(i) for i in range(layout.size()))
    return values == list(range(layout.size()))


def layout_tv(thr: Layout, val: Layout) -> str | None:
    """make_layout_tv(thr, val) (DSL docstring: "The thread and value layouts must be compact")."""
    for name, layout in (("thr", thr), ("val", val)):
        if not compact(layout):
            return f"not compact: {name} layout {layout} is not a bijection onto 0..size-1"
    return None


def rank_of(layout: Layout) -> int:
    return 1 if isinstance(layout.shape, int) else len(layout.shape)


def select(a: Layout, modes: list[int]) -> str | None:
    """select(A, modes) (DSL docstring: ":raises ValueError: If any index in mode is out of range")."""
    bad = [m for m in modes if not 0 <= m < rank_of(a)]
    return f"mode out of range: {bad} for rank {rank_of(a)}" if bad else None


def group_modes(a: Layout, begin: int, end: int | None) -> str | None:
    """group_modes(A, begin, end) (DSL: negative indices count from the end; "Expected begin < end")."""
    r = rank_of(a)
    b = max(begin + r, 0) if begin < 0 else begin
    e = r if end is None else end + r if end < 0 else end
    if b >= e:
        return f"empty range: begin {b} >= end {e}"
    if e > r:
        return f"range past the modes: end {e} > rank {r}"
    return None


def extend(a: Layout, up_to_rank: int | None) -> str | None:
    """append/prepend(A, elem, up_to_rank) (DSL docstring: ":raises ValueError: If up_to_rank is less than input's
    current rank")."""
    if up_to_rank is not None and up_to_rank < rank_of(a):
        return f"rank too low: up_to_rank {up_to_rank} < rank {rank_of(a)}"
    return None
