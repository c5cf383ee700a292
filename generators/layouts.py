"""Samplers of linear layouts by kind, over any ``Source``.

Kinds (the paper's Section 4): ``arbitrary`` (any bases), ``distributed`` (Def 4.10),
``memory`` (Def 4.14), ``invertible`` and ``injective``. Output dims are ``dim0``.. with
1-3 dims and at most 2^16 elements by default.
"""

from __future__ import annotations

from collections.abc import Sequence

from layoutfuzz.generators.source import Source, bits, permutation
from layoutfuzz.oracles import f2
from layoutfuzz.oracles.linear_layout import LinearLayout

DISTRIBUTED_DIMS = ("register", "lane", "warp")
# the input dims a hardware layout may have: a warp's (register, lane), a CTA's, and a cluster's (with block)
HARDWARE_DIMS = (("register", "lane"), DISTRIBUTED_DIMS, (*DISTRIBUTED_DIMS, "block"))
LAYOUT_KINDS = ("arbitrary", "distributed", "memory", "invertible", "injective")


def split_bits(source: Source, total: int, parts: int) -> list[int]:
    """A random composition of ``total`` into ``parts`` non-negative counts."""
    cuts = sorted(source.integer(0, total) for _ in range(parts - 1))
    edges = [0, *cuts, total]
    return [edges[i + 1] - edges[i] for i in range(parts)]


def out_dims(source: Source, total_bits: int, max_rank: int = 3) -> list[tuple[str, int]]:
    """1..max_rank output dims ``dim0``.. sharing ``total_bits`` bits."""
    rank = source.integer(1, max_rank)
    return [(f"dim{i}", 1 << b) for i, b in enumerate(split_bits(source, total_bits, rank))]


def _layout(in_dims: Sequence[str], in_bits: Sequence[int], outs, columns: Sequence[int]) -> LinearLayout:
    return LinearLayout.from_columns([(n, 1 << b) for n, b in zip(in_dims, in_bits)], outs, columns)


def arbitrary_layout(
    source: Source, in_dims: Sequence[str] = DISTRIBUTED_DIMS, max_in_bits: int = 16, max_out_bits: int = 16,
    max_rank: int = 3, outs: Sequence[tuple[str, int]] | None = None, in_bits: Sequence[int] | None = None,
) -> LinearLayout:
    """Any linear map: every basis is a random vector. ``outs``/``in_bits`` pin the dims."""
    if outs is None:
        outs = out_dims(source, source.integer(0, max_out_bits), max_rank)
    n = sum(size.bit_length() - 1 for _, size in outs)
    if in_bits is None:
        in_bits = split_bits(source, source.integer(0, max_in_bits), len(in_dims))
    return _layout(in_dims, in_bits, outs, [bits(source, n) for _ in range(sum(in_bits))])


def distributed_layout(
    source: Source, in_dims: Sequence[str] = DISTRIBUTED_DIMS, max_out_bits: int = 16, max_broadcast_bits: int = 3,
    max_rank: int = 3, fixed_bits: dict[str, int] | None = None, outs: Sequence[tuple[str, int]] | None = None,
) -> LinearLayout:
    """Def 4.10: surjective; each column has at most one bit; no repeated non-zero column.

    A permutation of the output bits placed on random input bits; the other input bits are
    zero columns (broadcasting). ``fixed_bits`` pins some dims, e.g. ``{"lane": 5}``;
    ``outs`` pins the output dims (the input then has at least as many bits).
    """
    fixed = dict(fixed_bits or {})
    pinned = sum(fixed.values())
    n = source.integer(0, max_out_bits) if outs is None else sum(s.bit_length() - 1 for _, s in outs)
    zeros = source.integer(0, max_broadcast_bits)
    free = [d for d in in_dims if d not in fixed]
    total = max(n + zeros, pinned) if free else pinned
    counts = dict(zip(free, split_bits(source, total - pinned, len(free)))) | fixed
    in_bits = [counts[d] for d in in_dims]
    if outs is None:
        n = min(n, total)
        outs = out_dims(source, n, max_rank)
    elif n > total:
        raise ValueError(f"{total} input bits cannot cover {n} output bits")
    where = permutation(source, total)[:n]
    order = permutation(source, n)
    columns = [0] * total
    for position, bit in zip(where, order):
        columns[position] = 1 << bit
    return _layout(in_dims, in_bits, outs, columns)


def cta_tiling(source: Source, outs: Sequence[tuple[str, int]], block_bits: int, in_dims: Sequence[str]) -> LinearLayout:
    """How the CTAs of a cluster tile a tensor, as Triton lays them out (its CGA layout; Gluon's ``_get_shape_per_cta``
    divides each dim by the CTAs along it): ``block_bits`` bases, each one of the top bits of a dim (the dims' top bits
    in any order) or, one time in six, zero (CTAs holding the same data); ``in_dims``' other dims have no bases."""
    sizes = [size.bit_length() - 1 for _, size in outs]
    taken = [0] * len(outs)
    bases = []
    for _ in range(block_bits):
        room = [d for d, n in enumerate(sizes) if taken[d] < n]
        if not room or source.integer(0, 5) == 0:
            bases.append([0] * len(outs))
            continue
        d = source.choice(tuple(room))
        taken[d] += 1
        bases.append([1 << (sizes[d] - taken[d]) if i == d else 0 for i in range(len(outs))])
    order = permutation(source, block_bits)
    dims = {dim: [] for dim in in_dims} | {"block": [bases[i] for i in order]}
    return LinearLayout.from_bases(list(dims.items()), list(outs))


def distributed_layout_sharing(
    source: Source, layout: LinearLayout, kept: Sequence[str], max_broadcast_bits: int = 3,
    fixed_bits: dict[str, int] | None = None,
) -> LinearLayout:
    """A distributed layout (Def 4.10) of ``layout``'s tensor that keeps ``layout``'s bases for the input dims ``kept``
    and draws the others anew (``fixed_bits`` pins their sizes): a layout ``layout`` converts to without data crossing
    those dims (with ``block`` kept, without leaving a CTA)."""
    in_dims = layout.in_dim_names
    used = 0
    for dim in kept:
        for column in layout.dim_columns(dim):
            used |= column
    free_bits = [b for b in range(layout.total_out_bits) if not used >> b & 1]
    fixed = dict(fixed_bits or {})
    drawn = [d for d in in_dims if d not in kept]
    free = [d for d in drawn if d not in fixed]
    pinned = sum(fixed.values())
    zeros = source.integer(0, max_broadcast_bits)
    total = max(len(free_bits) + zeros, pinned) if free else pinned
    if len(free_bits) > total:
        raise ValueError(f"{total} input bits cannot cover {len(free_bits)} output bits")
    counts = dict(zip(free, split_bits(source, total - pinned, len(free)))) | fixed
    where = permutation(source, total)[:len(free_bits)]
    order = permutation(source, len(free_bits))
    placed = [0] * total
    for position, k in zip(where, order):
        placed[position] = 1 << free_bits[k]
    columns, in_bits = [], []
    for dim in in_dims:
        if dim in kept:
            taken = list(layout.dim_columns(dim))
        else:
            taken, placed = placed[:counts[dim]], placed[counts[dim]:]
        columns += taken
        in_bits.append(len(taken))
    return _layout(in_dims, in_bits, layout.out_dims, columns)


def memory_layout(
    source: Source, in_dim: str = "offset", max_bits: int = 16, max_rank: int = 3,
    outs: Sequence[tuple[str, int]] | None = None,
) -> LinearLayout:
    """Def 4.14: invertible, every column with one or two bits.

    Such matrices are exactly forests on the output bits with one root per tree: a root
    column is a unit vector, any other is its bit plus its parent's. Every one can be drawn.
    """
    if outs is None:
        n = source.integer(0, max_bits)
        outs = out_dims(source, n, max_rank)
    else:
        n = sum(size.bit_length() - 1 for _, size in outs)
    order = permutation(source, n)
    columns = []
    for i, bit in enumerate(order):
        parent = source.integer(-1, i - 1) if i else -1
        columns.append(1 << bit | (1 << order[parent] if parent >= 0 else 0))
    placement = permutation(source, n)
    return _layout([in_dim], [n], outs, [columns[p] for p in placement])


def _invertible_columns(source: Source, n: int) -> list[int]:
    """Columns of P·L·U: every invertible matrix has such a factorisation."""
    lower = [1 << j | bits(source, n - j - 1) << (j + 1) for j in range(n)]
    upper = [1 << j | bits(source, j) for j in range(n)]
    perm = permutation(source, n)
    return f2.multiply([1 << p for p in perm], f2.multiply(lower, upper))


def invertible_layout(
    source: Source, in_dims: Sequence[str] = ("offset",), max_bits: int = 16, max_rank: int = 3
) -> LinearLayout:
    """A random invertible map (any bits per column)."""
    n = source.integer(0, max_bits)
    outs = out_dims(source, n, max_rank)
    return _layout(in_dims, split_bits(source, n, len(in_dims)), outs, _invertible_columns(source, n))


def injective_layout(
    source: Source, in_dims: Sequence[str] = DISTRIBUTED_DIMS, max_out_bits: int = 16, max_rank: int = 3
) -> LinearLayout:
    """A random injective map: the first columns of an invertible matrix."""
    n = source.integer(0, max_out_bits)
    outs = out_dims(source, n, max_rank)
    k = source.integer(0, n)
    return _layout(in_dims, split_bits(source, k, len(in_dims)), outs, _invertible_columns(source, n)[:k])


def sample_layout(source: Source, kind: str, max_bits: int = 16, in_dims: Sequence[str] | None = None,
                  max_rank: int = 3) -> LinearLayout:
    """A layout of the named kind with at most ``max_bits`` output bits and ``max_rank`` output dims."""
    if kind == "arbitrary":
        return arbitrary_layout(source, in_dims or DISTRIBUTED_DIMS, max_bits, max_bits, max_rank)
    if kind == "distributed":
        return distributed_layout(source, in_dims or DISTRIBUTED_DIMS, max_bits, max_rank=max_rank)
    if kind == "memory":
        return memory_layout(source, (in_dims or ("offset",))[0], max_bits, max_rank)
    if kind == "invertible":
        return invertible_layout(source, in_dims or ("offset",), max_bits, max_rank)
    if kind == "injective":
        return injective_layout(source, in_dims or DISTRIBUTED_DIMS, max_bits, max_rank)
    raise ValueError(f"unknown layout kind {kind!r}; kinds: {', '.join(LAYOUT_KINDS)}")
