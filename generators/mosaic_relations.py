"""Cases for Mosaic GPU's layout relations over the whole domain Mosaic accepts: a relation (``OPS``), a layout
(named, a random tiled one, sometimes with a base tile scaled by an odd factor, a splat or a strided one) and array
shapes of rank 1 to 4 with dims of 1, primes, non-powers of two, multiples of the base tile and dims below it. A
quarter of the cases are drawn on the domain's edges (every dim 1, a prime, or the largest).

A tiled layout is plain data as in ``generators.mosaic_layouts`` (``tiles``, ``warp_dims``, ``lane_dims``,
``vector_dim``; ``{"replicated": n}`` a replication); a splat is ``{"kind": "splat", "shape"}``, a strided layout
``{"kind": "strided", "shape", "vec_size"}``."""

from __future__ import annotations

from math import prod
from typing import Any

from layoutfuzz.generators.mosaic_layouts import NAMED, random_tiled_layout
from layoutfuzz.generators.source import Source
from layoutfuzz.oracles.linear_layout import LayoutError
from layoutfuzz.oracles.mosaic_layouts import LANES, WARPS, Replicated
from layoutfuzz.oracles.mosaic_relations import THREADS, tiled_dims, tiling_applies

# relation -> what it takes
OPS = ("splat_compatible", "relayout", "divides", "valid_assignment", "attr_roundtrip", "strided_from_shaped_type",
       "reduce", "reshape", "strided_broadcast", "merge_divides", "splat_broadcast")
EDGE_DIMS = (1, 2, 3, 5, 7, 13, 127, 1 << 16)  # sizes 1, primes, the largest drawn
ODD = (1, 3, 5, 7)
MAX_PLACED = 1 << 15  # elements of an array whose placement is computed
BITWIDTHS = (8, 16, 32, 64)
ELEMENT_TYPES = {"i8": 8, "f16": 16, "bf16": 16, "i16": 16, "f32": 32, "i32": 32, "f64": 64, "i64": 64}


def tiled(source: Source) -> dict[str, Any]:
    """A named layout or a random tiled one (its base tile sometimes scaled by an odd factor, where it stays valid)."""
    if source.integer(0, 1):
        name = source.choice(tuple(NAMED))
        return {"kind": "tiled", "name": name, **NAMED[name]}
    layout = {k: v for k, v in random_tiled_layout(source).items() if k != "shape"}
    scale = source.choice(ODD)
    if scale > 1:
        scaled = {**layout, "tiles": [[layout["tiles"][0][0] * scale, *layout["tiles"][0][1:]], *layout["tiles"][1:]]}
        if valid_tiled(scaled):
            layout = scaled
    return {"kind": "tiled", **layout}


def dims(data: list[Any]) -> list[int | Replicated]:
    """Warp or lane dims as the oracle's: ints and ``Replicated``."""
    return [Replicated(d["replicated"]) if isinstance(d, dict) else d for d in data]


def valid_tiled(layout: dict[str, Any]) -> bool:
    """Whether a tiled layout is one Mosaic constructs: its tiling applies to its base tile, the warp dims hold 4 warps
    and the lane dims 32 lanes."""
    try:
        sizes = [d.size for d in tiled_dims(layout["tiles"][0], layout["tiles"])][len(layout["tiles"][0]):]
    except LayoutError:
        return False
    held = [prod(d.times if isinstance(d, Replicated) else sizes[d] for d in dims(layout[k])) for k in ("warp_dims", "lane_dims")]
    return held == [WARPS, LANES]


def edge_shape(source: Source) -> list[int]:
    """A shape of rank 1-4 on the domain's edges: every dim 1, a prime or the largest."""
    return [source.choice(EDGE_DIMS) for _ in range(source.integer(1, 4))]


def shape_for(source: Source, base: list[int], edge: bool) -> list[int]:
    """A shape of rank 1-4 for a layout of base tile ``base``: its trailing dims multiples of the tile (any factor, odd
    ones too), the tile itself, below it or beside it; leading dims of 1, primes or small."""
    if edge:
        return edge_shape(source)
    rank = min(4, max(1, len(base) + source.choice((0, 0, -1, 1, 2))))
    trailing = base[-rank:]
    out = [_near(source, b) for b in trailing]
    return [source.choice((1, 2, 3, 5, 6)) for _ in range(rank - len(trailing))] + out


def _near(source: Source, b: int) -> int:
    """A dim near a tile size b: b times 1-5, b itself, a divisor of b below it, or b plus a little."""
    kind = source.choice(("multiple", "multiple", "same", "below", "beside"))
    if kind == "multiple":
        return b * source.integer(1, 5)
    if kind == "below":
        return max(1, b // source.choice((2, 4, b)))
    if kind == "beside":
        return max(1, b + source.choice((1, -1, b // 2 or 1)))
    return b


def tileable_shape(source: Source, base: list[int], edge: bool) -> list[int]:
    """A shape the base tile applies to (rank 1-4; leading dims 1, primes or small; the tiled dims any multiple), at
    most MAX_PLACED elements."""
    lead = [source.choice((1, 2, 3, 5) if not edge else (1, 1, 7, 13)) for _ in range(source.integer(0, 4 - len(base)))]
    tail = [b * source.choice((1, 1, 2, 3) if not edge else (1, 5, 7)) for b in base]
    shape = lead + tail
    while prod(shape) > MAX_PLACED:
        i = max(range(len(shape)), key=lambda k: shape[k] // (base[k - len(lead)] if k >= len(lead) else 1))
        shape[i] = base[i - len(lead)] if i >= len(lead) else 1
    return shape


def strided(source: Source, edge: bool) -> dict[str, Any]:
    """A strided layout: a shape of 128 * vec * k elements (k of 1, primes, small) over rank 1-4."""
    vec = source.choice((1, 2, 4, 8))
    total = THREADS * vec * source.choice((1, 2, 3, 5) if not edge else (1, 7, 13))
    return {"kind": "strided", "shape": factor_shape(source, total, source.integer(1, 4)), "vec_size": vec}


def factor_shape(source: Source, total: int, rank: int) -> list[int]:
    """A shape of ``rank`` dims whose product is ``total``: its prime factors dealt to random dims."""
    shape = [1] * rank
    n, p = total, 2
    while n > 1:
        while n % p == 0:
            shape[source.integer(0, rank - 1)] *= p
            n //= p
        p += 1
    return shape


def case(source: Source) -> dict[str, Any]:
    """One case: {"op", ...its inputs, "edge"}."""
    op = source.choice(OPS)
    edge = source.integer(0, 3) == 0
    return {"op": op, **DRAW[op](source, edge), "edge": edge}


def _against_tiled(source: Source, edge: bool) -> dict[str, Any]:
    layout = tiled(source)
    return {"layout": layout, "shape": shape_for(source, layout["tiles"][0], edge)}


def _relayout(source: Source, edge: bool) -> dict[str, Any]:
    if source.integer(0, 3):
        return {**_against_tiled(source, edge), "bitwidth": source.choice(BITWIDTHS)}
    target = strided(source, edge)
    shape = target["shape"] if source.integer(0, 1) else factor_shape(source, prod(target["shape"]), len(target["shape"]))
    return {"layout": target, "shape": shape, "bitwidth": source.choice(BITWIDTHS)}


def _any_layout(source: Source, edge: bool) -> dict[str, Any]:
    kind = source.choice(("tiled", "tiled", "splat", "strided"))
    if kind == "tiled":
        return {"layout": tiled(source)}
    if kind == "splat":
        return {"layout": {"kind": "splat", "shape": edge_shape(source) if edge else shape_for(source, [64, 8], False)}}
    return {"layout": strided(source, edge)}


def _valid_assignment(source: Source, edge: bool) -> dict[str, Any]:
    layout = _any_layout(source, edge)["layout"]
    if layout["kind"] == "tiled":
        return {"layout": layout, "shape": shape_for(source, layout["tiles"][0], edge)}
    own = layout["shape"]
    return {"layout": layout, "shape": own if source.integer(0, 1) else factor_shape(source, prod(own), len(own))}


def _shaped_type(source: Source, edge: bool) -> dict[str, Any]:
    shape = edge_shape(source) if edge else shape_for(source, [source.choice((128, 64, 256, 96))], False)
    return {"shape": shape, "element_type": source.choice(tuple(ELEMENT_TYPES))}


def _reduce(source: Source, edge: bool) -> dict[str, Any]:
    kind = source.choice(("tiled", "tiled", "tiled", "strided", "splat"))
    if kind == "tiled":
        layout = tiled(source)
        shape = tileable_shape(source, layout["tiles"][0], edge)
    elif kind == "strided":
        layout = strided(source, edge)
        if source.integer(0, 1):  # rows over a minor dim of whole vectors a thread: a reduction Mosaic keeps strided
            minor = THREADS * layout["vec_size"] * source.choice((1, 2, 3))
            layout["shape"] = [source.choice((1, 2, 3, 5)) for _ in range(source.integer(1, 3))] + [minor]
        shape = layout["shape"]
    else:
        shape = edge_shape(source) if edge else tileable_shape(source, [64, 8], False)
        layout = {"kind": "splat", "shape": shape}
    axes = sorted({source.integer(0, len(shape) - 1) for _ in range(source.integer(1, len(shape)))})
    keep_dims = source.choice((False, True))
    if len(axes) == len(shape) and not keep_dims:  # a full reduction is a scalar, not a vector: keep one axis
        axes = axes[:-1] or axes
        keep_dims = not axes or len(axes) == len(shape)
    return {"layout": layout, "shape": shape, "axes": axes, "keep_dims": keep_dims}


def _reshape(source: Source, edge: bool) -> dict[str, Any]:
    layout = tiled(source)
    shape = tileable_shape(source, layout["tiles"][0], edge)
    if source.integer(0, 1):  # regroup the dims above the minor tiled ones: what Mosaic says it handles
        minor = shape[len(shape) - len(layout["tiles"][0]) + 1:]
        major = factor_shape(source, prod(shape) // max(1, prod(minor)), source.integer(1, 4 - len(minor)))
        target = major + minor
    else:
        target = factor_shape(source, prod(shape), source.integer(1, 4))
    return {"layout": layout, "shape": shape, "target": target}


def _strided_broadcast(source: Source, edge: bool) -> dict[str, Any]:
    layout = strided(source, edge)
    src = layout["shape"]
    if source.integer(0, 2):
        src = [1 if source.integer(0, 3) == 0 else n for n in src]  # some dims to stretch
        if prod(src) % (THREADS * layout["vec_size"]):
            src = layout["shape"]
    lead = [source.choice((1, 2, 3)) for _ in range(source.integer(0, 4 - len(src)))]
    dst = lead + [n * source.choice((2, 3)) if n == 1 else n for n in src]
    dims = list(range(len(lead), len(dst)))
    if source.integer(0, 4) == 0 and len(dst) > len(src):
        dims = sorted(source.choice([list(range(len(dst))[:len(src)]), dims]))
    return {"layout": {**layout, "shape": src}, "target": dst, "dims": dims}


def _merge_divides(source: Source, edge: bool) -> dict[str, Any]:
    pool = EDGE_DIMS if edge else (1, 2, 3, 4, 6, 8, 12, 16, 24, 64, 96, 128)
    return {"multiples": [[source.choice(pool) for _ in range(source.integer(0, 4))] for _ in range(2)]}


def _splat_broadcast(source: Source, edge: bool) -> dict[str, Any]:
    target = edge_shape(source) if edge else shape_for(source, [64, 8], False)
    start = source.integer(0, len(target))
    shape = [1 if source.integer(0, 2) == 0 else n for n in target[start:]]
    if source.integer(0, 3) == 0:
        shape = [source.choice((1, 2, 3)), *shape]
    return {"layout": {"kind": "splat", "shape": shape}, "target": target}


DRAW = {"splat_compatible": _against_tiled, "relayout": _relayout, "divides": _against_tiled,
        "valid_assignment": lambda s, e: _valid_assignment(s, e),
        "attr_roundtrip": _any_layout, "strided_from_shaped_type": _shaped_type, "reduce": _reduce, "reshape": _reshape,
        "strided_broadcast": _strided_broadcast, "merge_divides": _merge_divides, "splat_broadcast": _splat_broadcast}


def applies(layout: dict[str, Any], shape: list[int]) -> bool:
    """Whether a tiled layout's tiling applies to ``shape``."""
    return tiling_applies(layout["tiles"], shape)
