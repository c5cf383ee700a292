"""Cases of ``triton.layout_ops``: a layout-sensitive Gluon operation on an M x N tile in a rank-2 distributed
layout drawn by ``generators.gluon_layouts`` (blocked, slices of rank-3 parents, NVMMA, dot operands, linear
layouts with broadcast bases; CGA layouts of 1 to 8 CTAs), over shapes from one element to 2^13, a quarter at the
edges (dims of 1, tiles larger than the tensor, every CTA split). Only layouts whose ``to_linear_layout``
preconditions hold are drawn: the operations, not the layouts, are under test here."""

from __future__ import annotations

from typing import Any

from layoutfuzz.generators import gluon_layouts
from layoutfuzz.generators.source import Source, at_edge, permutation

OPS = ("sum", "max", "cumsum", "permute", "reshape", "join_split", "gather", "broadcast")
KINDS = ("blocked", "slice", "nvmma_distributed", "dot_operand", "distributed_linear")


def case(source: Source, valid: Any, op: str | None = None) -> dict[str, Any]:
    """{"op", "axis", "layout", "shape", "num_warps", "edge"}; ``valid(layout, shape)`` says whether a layout may
    be drawn (the oracle's preconditions, passed in: generators import no oracle); ``op``: this operation."""
    edge = at_edge(source)
    op, axis = op or source.choice(OPS), source.integer(0, 1)
    for _ in range(32):
        num_warps = 1 << source.integer(0, 4)
        kind = source.choice(KINDS)
        shape = _shape(source, edge)
        per_thread = 16 if op == "gather" else 64  # a gather's lowering grows with the square of it (15 s at 64)
        while shape[0] * shape[1] > per_thread * 32 * num_warps:  # compile in seconds
            shape[shape.index(max(shape))] //= 2
        if kind == "distributed_linear":
            layout = linear_layout(source, shape, num_warps, source.choice((0, 0, 1, 2)))
        else:
            layout = gluon_layouts.draw(source, kind, 2, num_warps, edge, depth=2)
        if gluon_layouts.layout_rank(layout) == 2 and not _amd(layout) and valid(layout, shape):
            return {"op": op, "axis": axis, "layout": layout, "shape": shape, "num_warps": warps_of(layout, num_warps),
                    "edge": edge}
    layout = {"kind": "blocked", "size_per_thread": [1, 1], "threads_per_warp": [4, 8], "warps_per_cta": [1, 1],
              "order": [1, 0], "cga_layout": []}
    return {"op": op, "axis": axis, "layout": layout, "shape": [4, 8], "num_warps": 1, "edge": edge}


def _amd(layout: dict[str, Any]) -> bool:
    """AMD layouts have no lowering for an NVIDIA target."""
    return layout["kind"].startswith("amd") or ("parent" in layout and _amd(layout["parent"]))


def _shape(source: Source, edge: bool) -> list[int]:
    if edge:
        rows = source.choice((1, 2, 128))
        return [rows, source.choice((1, 2, 128 if rows < 128 else 32))]
    rows = source.integer(0, 8)
    return [1 << rows, 1 << source.integer(0, min(8, 13 - rows))]


def linear_layout(source: Source, shape: list[int], num_warps: int, cta_bits: int) -> dict[str, Any]:
    """A DistributedLinearLayout onto ``shape``: every element bit given to one register, lane, warp or block basis
    in a random order, the slots left over broadcast (zero bases), extra bits as registers."""
    bits = [[1 << k if d == dim else 0 for d in range(2)] for dim in range(2) for k in range(shape[dim].bit_length() - 1)]
    bits = [bits[i] for i in permutation(source, len(bits))]
    slots = {"lane_bases": 5, "warp_bases": num_warps.bit_length() - 1, "block_bases": cta_bits}
    out: dict[str, Any] = {"kind": "distributed_linear"}
    for name in ("block_bases", "warp_bases", "lane_bases"):
        out[name] = [bits.pop() if bits and source.integer(0, 3) else [0, 0] for _ in range(slots[name])]
    out["reg_bases"] = bits + [[0, 0]] * source.integer(0, 1)
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
