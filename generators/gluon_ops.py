"""Cases of ``triton.layout_ops``: a layout-sensitive Gluon operation on an M x N tile in a rank-2 distributed
layout drawn by ``generators.gluon_layouts`` (blocked, slices of rank-3 parents, NVMMA, dot operands, linear
layouts with broadcast bases; CGA layouts of 1 to 8 CTAs), over shapes from one element to 2^13, a quarter at the
edges (dims of 1, tiles larger than the tensor, every CTA split). Only layouts whose ``to_linear_layout``
preconditions hold are drawn: the operations, not the layouts, are under test here.

``compile_case`` (the compile target's) draws beyond ``case`` (which ``triton.layout_ops_run`` shares): scans and
reductions with a user-written combine (a max-scan, a (value, index) scan forwards or reversed, an argmax-style
(value, index) reduction), atomics of the tile (a masked add and max, an exchange and a compare-and-swap whose old
values are added back; each element once, where the layout holds it in several threads; every memory order and scope),
every operation on rank-3 tiles (blocked, slices of rank-4 parents, dot operands of
blocked parents, linear layouts), and ``histogram`` of a 1-D tensor (its only rank) from and into any 1-D
distributed layout (blocked, slices of rank-2 layouts, linear layouts), 1 to 1024 bins and, at the edges, a count
that is not a power of two."""

from __future__ import annotations

from typing import Any

from layoutfuzz.generators import gluon_layouts
from layoutfuzz.generators.source import Source, at_edge, permutation

OPS = ("sum", "max", "cumsum", "permute", "reshape", "join_split", "gather", "broadcast")
KINDS = ("blocked", "slice", "nvmma_distributed", "dot_operand", "distributed_linear")
EXTRA_OPS = ("scan_max", "scan_pair", "reduce_pair", "histogram", "atomic_add", "atomic_max", "atomic_xchg",
             "atomic_cas")  # user-written combines, histograms, and atomics (each element once, however many threads
# the layout gives it: a masked add and max, an exchange and a compare-and-swap whose returned old values are used)
ATOMICS = ("atomic_add", "atomic_max", "atomic_xchg", "atomic_cas")
ORDERED_ATOMICS = ("atomic_max", "atomic_xchg", "atomic_cas")  # drawn with a memory order and a scope
ELEMENT_TYPES = ("fp32", "fp16", "bf16", "fp64", "i32")  # an atomic's element type: Triton's pointer type names
# the element types each atomic takes (Triton's front end refuses the others: "atomic_max does not support fp16")
ATOMIC_TYPES = {"atomic_add": ELEMENT_TYPES, "atomic_max": ("fp32", "fp64", "i32"), "atomic_xchg": ("fp32", "fp64", "i32"),
                "atomic_cas": ELEMENT_TYPES}
SEMS = ("relaxed", "acquire", "release", "acq_rel")  # Gluon's atomics: sem (PTX ISA 8.4's memory orders)
SCOPES = ("cta", "gpu", "sys")  # and scope
ALL_OPS = OPS + EXTRA_OPS
SCANS = ("cumsum", "scan_max", "scan_pair")
KINDS_3D = ("blocked", "slice", "dot_operand", "distributed_linear")  # kinds of rank-3 distributed layouts on NVIDIA
KINDS_1D = ("blocked", "slice", "distributed_linear")
BINS = tuple(1 << k for k in range(11))  # histogram bins: 1 to 1024
ODD_BINS = (3, 6, 24, 100)  # not powers of two: Triton's tensor dims are, so these are refused (the edges draw them)


def case(source: Source, valid: Any, op: str | None = None) -> dict[str, Any]:
    """{"op", "axis", "layout", "shape", "num_warps", "edge"}; ``valid(layout, shape)`` says whether a layout may
    be drawn (the oracle's preconditions, passed in: generators import no oracle); ``op``: this operation."""
    edge = at_edge(source)
    op, axis = op or source.choice(OPS), source.integer(0, 1)
    for _ in range(32):
        num_warps = 1 << source.integer(0, 4)
        kind = source.choice(KINDS)
        shape = _shape(source, edge)
        per_thread = 16 if op in ("gather", *ATOMICS) else 64  # a gather's lowering grows with its square (15 s at 64)
        while shape[0] * shape[1] > per_thread * 32 * num_warps:  # compile in seconds
            shape[shape.index(max(shape))] //= 2
        if kind == "distributed_linear":
            layout = linear_layout(source, shape, num_warps, source.choice((0, 0, 1, 2)))
        else:
            layout = gluon_layouts.draw(source, kind, 2, num_warps, edge, depth=2)
        if gluon_layouts.layout_rank(layout) == 2 and not is_amd(layout) and valid(layout, shape):
            return {"op": op, "axis": axis, "layout": layout, "shape": shape, "num_warps": warps_of(layout, num_warps),
                    "edge": edge}
    layout = {"kind": "blocked", "size_per_thread": [1, 1], "threads_per_warp": [4, 8], "warps_per_cta": [1, 1],
              "order": [1, 0], "cga_layout": []}
    return {"op": op, "axis": axis, "layout": layout, "shape": [4, 8], "num_warps": 1, "edge": edge}


def compile_case(source: Source, valid: Any) -> dict[str, Any]:
    """A case of ``triton.layout_ops``: one of ``ALL_OPS``; a histogram is 1-D, any other op is on a rank-3 tile in a
    third of the cases (``case``'s rank-2 tile otherwise). Scans with a user-written combine carry ``reverse``."""
    op = source.choice(ALL_OPS)
    if op == "histogram":
        return histogram_case(source, valid)
    drawn = rank3_case(source, valid, op) if source.integer(0, 2) == 0 else case(source, valid, op)
    return {**drawn, **op_options(source, op)}


def op_options(source: Source, op: str) -> dict[str, Any]:
    """What ``op`` takes besides its tile: ``reverse`` for a scan with a user-written combine; an element type for an
    atomic, ``sem`` and ``scope`` besides for an ordered one; nothing for the others."""
    if op in ("scan_max", "scan_pair"):
        return {"reverse": source.integer(0, 1) == 1}
    if op in ORDERED_ATOMICS:
        return {"dtype": source.choice(ATOMIC_TYPES[op]), "sem": source.choice(SEMS), "scope": source.choice(SCOPES)}
    if op in ATOMICS:
        return {"dtype": source.choice(ATOMIC_TYPES[op])}
    return {}


def rank3_case(source: Source, valid: Any, op: str) -> dict[str, Any]:
    """``op`` over one axis of an M x N x K tile in a rank-3 distributed layout (blocked, a slice of a rank-4
    parent, a dot operand of a blocked parent, a linear layout), up to 2^13 elements, a quarter at the edges."""
    edge = at_edge(source)
    axis = source.integer(0, 2)
    for _ in range(32):
        num_warps = 1 << source.integer(0, 4)
        kind = source.choice(KINDS_3D)
        if edge:
            shape = [source.choice((1, 2, 32)) for _ in range(3)]
        else:
            shape = [1 << source.integer(0, 5) for _ in range(3)]
        per_thread = 16 if op in ("gather", *ATOMICS) else 64
        while shape[0] * shape[1] * shape[2] > per_thread * 32 * num_warps:
            shape[shape.index(max(shape))] //= 2
        if kind == "distributed_linear":
            layout = linear_layout(source, shape, num_warps, source.choice((0, 0, 1, 2)))
        else:
            layout = gluon_layouts.draw(source, kind, 3, num_warps, edge, depth=2)
        if gluon_layouts.layout_rank(layout) == 3 and not is_amd(layout) and valid(layout, shape):
            return {"op": op, "axis": axis, "layout": layout, "shape": shape, "num_warps": warps_of(layout, num_warps),
                    "edge": edge}
    layout = {"kind": "blocked", "size_per_thread": [1, 1, 1], "threads_per_warp": [2, 4, 4], "warps_per_cta": [1, 1, 1],
              "order": [2, 1, 0], "cga_layout": []}
    return {"op": op, "axis": axis, "layout": layout, "shape": [2, 4, 8], "num_warps": 1, "edge": edge}


def histogram_case(source: Source, valid: Any) -> dict[str, Any]:
    """{"op": "histogram", "axis": 0, "layout", "shape": [M], "bins", "dst_layout", "num_warps", "edge"}: M int32
    values in a 1-D layout counted into ``bins`` bins in another 1-D layout of as many warps and CTAs; at the edges
    one value or 4096, one bin, 1024, or a bin count that is not a power of two."""
    edge = at_edge(source)
    for _ in range(32):
        num_warps = 1 << source.integer(0, 3)
        m = source.choice((1, 2, 4096)) if edge else 1 << source.integer(2, 11)
        bins = source.choice((1, 1024, source.choice(ODD_BINS))) if edge else source.choice(BINS)
        while m > 64 * 32 * num_warps:
            m //= 2
        layout = one_d_layout(source, m, num_warps, edge)
        dst = one_d_layout(source, bins if bins & (bins - 1) == 0 else 1 << bins.bit_length(), num_warps, edge)
        if bins & (bins - 1) and dst["kind"] == "distributed_linear":
            continue  # a linear layout names its (power-of-two) shape
        if (cta_bits(layout) == cta_bits(dst) and not is_amd(layout) and not is_amd(dst) and valid(layout, [m])
                and valid(dst, [bins if bins & (bins - 1) == 0 else 1 << bins.bit_length()])
                and warps_of(layout, num_warps) == warps_of(dst, num_warps)):
            return {"op": "histogram", "axis": 0, "layout": layout, "shape": [m], "bins": bins, "dst_layout": dst,
                    "num_warps": warps_of(layout, num_warps), "edge": edge}
    layout = {"kind": "blocked", "size_per_thread": [1], "threads_per_warp": [32], "warps_per_cta": [4], "order": [0],
              "cga_layout": []}
    return {"op": "histogram", "axis": 0, "layout": layout, "shape": [256], "bins": 32, "dst_layout": layout,
            "num_warps": 4, "edge": edge}


def one_d_layout(source: Source, size: int, num_warps: int, edge: bool) -> dict[str, Any]:
    """A 1-D distributed layout of ``num_warps`` warps: blocked, a slice of a rank-2 layout (blocked, NVMMA, dot
    operand, linear, a slice of a rank-3 one), or a linear layout onto ``size`` elements."""
    kind = source.choice(KINDS_1D)
    if kind == "distributed_linear":
        return linear_layout(source, [size], num_warps, source.choice((0, 0, 1)))
    return gluon_layouts.draw(source, kind, 1, num_warps, edge, depth=2)


def cta_bits(layout: dict[str, Any]) -> int:
    if "parent" in layout:
        return cta_bits(layout["parent"])
    return len(layout.get("cga_layout", layout.get("block_bases", [])))


def is_amd(layout: dict[str, Any]) -> bool:
    """AMD layouts have no lowering for an NVIDIA target."""
    return layout["kind"].startswith("amd") or ("parent" in layout and is_amd(layout["parent"]))


def _shape(source: Source, edge: bool) -> list[int]:
    if edge:
        rows = source.choice((1, 2, 128))
        return [rows, source.choice((1, 2, 128 if rows < 128 else 32))]
    rows = source.integer(0, 8)
    return [1 << rows, 1 << source.integer(0, min(8, 13 - rows))]


def linear_layout(source: Source, shape: list[int], num_warps: int, cta_bits: int) -> dict[str, Any]:
    """A DistributedLinearLayout onto ``shape``: every element bit given to one register, lane, warp or block basis
    in a random order, the slots left over broadcast (zero bases), extra bits as registers."""
    rank = len(shape)
    bits = [[1 << k if d == dim else 0 for d in range(rank)] for dim in range(rank)
            for k in range(shape[dim].bit_length() - 1)]
    bits = [bits[i] for i in permutation(source, len(bits))]
    slots = {"lane_bases": 5, "warp_bases": num_warps.bit_length() - 1, "block_bases": cta_bits}
    out: dict[str, Any] = {"kind": "distributed_linear"}
    for name in ("block_bases", "warp_bases", "lane_bases"):
        out[name] = [bits.pop() if bits and source.integer(0, 3) else [0] * rank for _ in range(slots[name])]
    out["reg_bases"] = bits + [[0] * rank] * source.integer(0, 1)
    out["shape"] = list(shape)
    return {k: out[k] for k in ("kind", "reg_bases", "lane_bases", "warp_bases", "block_bases", "shape")}


def warps_of(layout: dict[str, Any], drawn: int) -> int:
    """The warps a distributed layout spans (the kernel's ``num_warps``)."""
    kind = layout["kind"]
    if kind in ("slice", "dot_operand"):
        return warps_of(layout["parent"], drawn)
    if kind == "distributed_linear":
        return 1 << len(layout["warp_bases"])
    if kind in ("blocked", "nvmma_distributed"):
        count = 1
        for w in layout["warps_per_cta"]:
            count *= w
        return count
    return drawn
