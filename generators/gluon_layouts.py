"""Samplers of Gluon layouts over everything their constructors accept (Triton 3.9's ``gluon.language``).

A layout is plain data: ``{"kind": ..., <constructor arguments>}``, parents nested, the kinds and argument names
Gluon's own (``BlockedLayout``, ``SliceLayout``, ``DotOperandLayout``, ``NVMMADistributedLayout``,
``DistributedLinearLayout``, ``AMDMFMALayout``, ``AMDWMMALayout``, ``NVMMASharedLayout``,
``SwizzledSharedLayout``, ``PaddedSharedLayout``, ``SharedLinearLayout``, ``TensorMemoryLayout``). Every kind takes a
CGA layout (``cga_layout``: one basis per CTA bit), so cases span 1 to 8 CTAs. Layouts nest the way kernels build
them (a slice of a slice, a dot operand of a slice's parent) down to ``MAX_DEPTH``.

A quarter of the cases are drawn at the domain's edges (``edge``): rank 1 and rank 4, dims of 1 and the largest,
wgmma N at every multiple of 8 PTX allows, NVMMA blocks below the swizzle atom, CGA splits down to one element per
CTA, zero (broadcast) and non-low-bit CTA bases, non-powers of two where a constructor takes any integer. The
constructors check little, so much of what is drawn breaks a precondition of ``to_linear_layout``: the target
judges the answer or the refusal (``oracles.gluon_layouts``).
"""

from __future__ import annotations

from typing import Any

from layoutfuzz.generators.source import Source, at_edge, bounded, permutation

DISTRIBUTED = ("blocked", "slice", "dot_operand", "nvmma_distributed", "distributed_linear", "amd_mfma", "amd_wmma")
SHARED = ("nvmma_shared", "swizzled_shared", "padded_shared", "shared_linear")
MEMORY = ("tensor_memory", "tensor_memory_scales")
KINDS = DISTRIBUTED + SHARED + MEMORY
MAX_DEPTH = 3
ODD = (3, 5, 6, 12, 24)  # non-powers of two a constructor takes


def case(source: Source) -> dict[str, Any]:
    """A layout, a tensor shape for it and the module's warp count: {"layout", "shape", "num_warps", "edge"}."""
    edge = at_edge(source)
    kind = source.choice(KINDS)
    rank = _rank(source, kind, edge)
    num_warps = 1 << source.integer(0, 5)
    layout = draw(source, kind, rank, num_warps, edge, depth=1)
    shape_rank = rank if kind == "tensor_memory_scales" else layout_rank(layout)  # the scales layout has no rank
    shape = _shape(source, shape_rank, edge, cga_shape(layout.get("cga_layout", [])))
    if kind == "distributed_linear":
        layout["shape"] = list(shape)
    return {"layout": layout, "shape": shape, "num_warps": num_warps, "edge": edge}


def draw(source: Source, kind: str, rank: int, num_warps: int, edge: bool, depth: int) -> dict[str, Any]:
    """One layout of ``kind`` for tensors of ``rank`` dims."""
    return _DRAW[kind](source, rank, num_warps, edge, depth)


def layout_rank(layout: dict[str, Any]) -> int:
    """The rank of tensors a layout describes."""
    kind = layout["kind"]
    if kind == "slice":
        return layout_rank(layout["parent"]) - 1
    if kind == "dot_operand":
        return layout_rank(layout["parent"])
    if kind in ("nvmma_distributed", "amd_mfma"):
        return len(layout["warps_per_cta"])
    if kind in ("blocked", "swizzled_shared"):
        return len(layout["order"])
    if kind == "nvmma_shared":
        return layout["rank"]
    if kind == "amd_wmma":
        return layout["rank"]
    if kind in ("tensor_memory", "tensor_memory_scales"):
        return 2
    if kind == "padded_shared":
        return len(layout["shape"])
    if kind == "shared_linear":
        return len(layout["offset_bases"][0]) if layout["offset_bases"] else 1
    return len(layout.get("shape", [])) or 1


def cga_shape(cga_layout: list[list[int]]) -> list[int]:
    """CTAs along each dim: twice the largest basis entry, or 1 (Gluon's ``_get_shape_per_cta``)."""
    if not cga_layout:
        return []
    return [2 * max(b[d] for b in cga_layout) or 1 for d in range(len(cga_layout[0]))]


def _rank(source: Source, kind: str, edge: bool) -> int:
    if kind == "tensor_memory_scales":
        return source.choice((1, 2, 3)) if edge else 2
    if kind in ("nvmma_distributed", "amd_mfma", "amd_wmma", "tensor_memory"):
        return 2 if not edge or kind == "tensor_memory" else source.choice((2, 3))
    # the edges favour the extreme ranks but keep the others: an edge value of another parameter (a non-power of
    # two, a zero) must meet ranks 2 and 3 too, where most of a class's code runs
    if kind == "slice":
        return source.choice((1, 3, 1, 3, 2)) if edge else source.integer(1, 2)
    if kind == "dot_operand":
        return 2 if not edge else source.choice((2, 3))
    return source.choice((1, 4, 1, 4, 2, 3)) if edge else source.integer(1, 3)


def _shape(source: Source, rank: int, edge: bool, ctas: list[int]) -> list[int]:
    """Powers of two up to 2^14 elements in all (each dim a multiple of the CTA split); at the edges dims of 1, of
    the largest size, of one element per CTA, or a non-power of two."""
    shape, budget = [], 14
    for d in range(rank):
        split = ctas[d] if d < len(ctas) else 1
        low = split.bit_length() - 1
        if edge and source.integer(0, 3) == 0:
            dim = source.choice((1, split, 1 << max(0, min(budget, 9)), source.choice(ODD)))
        else:
            dim = 1 << source.integer(low, max(low, min(9, budget - (rank - d - 1))))
        shape.append(dim)
        budget -= max(dim.bit_length() - 1, 0)
    return shape


def _pow2_split(source: Source, total_log2: int, rank: int) -> list[int]:
    out = [1] * rank
    for _ in range(total_log2):
        out[source.integer(0, rank - 1)] *= 2
    return out


def _maybe_odd(source: Source, values: list[int], edge: bool) -> list[int]:
    """At the edges, one entry replaced by a non-power of two (constructors take any positive integer)."""
    if edge and values and source.integer(0, 2) == 0:
        values = list(values)
        values[source.integer(0, len(values) - 1)] = source.choice(ODD)
    return values


def cga(source: Source, rank: int, edge: bool) -> list[list[int]]:
    """CGA bases, one per CTA bit (0 to 3 bits: 1 to 8 CTAs): each a power of two along one dim, doubling per dim
    as Gluon's examples build them; at the edges a zero (broadcast) basis or a basis that skips a bit."""
    count = source.choice((0, 0, 1, 2, 3))
    bases, next_bit = [], [1] * rank
    for _ in range(count):
        d = source.integer(0, rank - 1)
        basis = [0] * rank
        if edge and source.integer(0, 3) == 0:
            choice = source.integer(0, 1)
            basis[d] = 0 if choice == 0 else 2 * next_bit[d]  # broadcast CTA, or a basis above a missing bit
            if choice:
                next_bit[d] *= 4
        else:
            basis[d] = next_bit[d]
            next_bit[d] *= 2
        bases.append(basis)
    return bases


def _blocked(source: Source, rank: int, num_warps: int, edge: bool, depth: int) -> dict[str, Any]:
    return {"kind": "blocked",
            "size_per_thread": _maybe_odd(source, _pow2_split(source, source.integer(0, 4), rank), edge),
            "threads_per_warp": _pow2_split(source, 5, rank),
            "warps_per_cta": _pow2_split(source, num_warps.bit_length() - 1, rank),
            "order": permutation(source, rank), "cga_layout": cga(source, rank, edge)}


def _slice(source: Source, rank: int, num_warps: int, edge: bool, depth: int) -> dict[str, Any]:
    """A slice of a rank + 1 parent (an mma-like parent is rank 2 or 3), a slice of a slice down to ``MAX_DEPTH``."""
    parent_kinds = ("blocked", "nvmma_distributed", "dot_operand", "distributed_linear", "amd_mfma")
    if depth < MAX_DEPTH:
        parent_kinds += ("slice",)
    kind = source.choice(parent_kinds)
    parent_rank = rank + 1 if kind in ("blocked", "slice", "distributed_linear") else min(max(rank + 1, 2), 3)
    parent = draw(source, kind, parent_rank, num_warps, edge, depth + 1)
    if kind == "distributed_linear":
        parent["shape"] = [1 << source.integer(0, 4) for _ in range(parent_rank)]
    return {"kind": "slice", "dim": source.integer(0, layout_rank(parent) - 1), "parent": parent}


def _dot_operand(source: Source, rank: int, num_warps: int, edge: bool, depth: int) -> dict[str, Any]:
    parent_kind = source.choice(("nvmma_distributed", "blocked", "amd_mfma"))
    parent = draw(source, parent_kind, rank, num_warps, edge, depth + 1)
    k_width = source.choice((1, 2, 4, 8, 16)) if parent_kind != "blocked" else 0
    if edge and source.integer(0, 2) == 0:
        k_width = source.choice((0, 3, 32))
    return {"kind": "dot_operand", "operand_index": source.integer(0, 1), "parent": parent, "k_width": k_width}


def _nvmma_distributed(source: Source, rank: int, num_warps: int, edge: bool, depth: int) -> dict[str, Any]:
    hopper = source.integer(0, 1) == 1
    warps = max(num_warps, 4) if hopper else num_warps
    warps_per_cta = _pow2_split(source, warps.bit_length() - 1, rank)
    if hopper:
        warps_per_cta = [4 * w if i == 0 else w for i, w in enumerate(_pow2_split(source, warps.bit_length() - 3, rank))]
        n = 8 * source.integer(1, 32) if edge else 8 << source.integer(0, 5)
        instr = [16, n, 16]
    else:
        instr = [16, 8]
    if rank == 3:
        instr = [1, *instr] if not hopper else instr
    return {"kind": "nvmma_distributed", "version": [3 if hopper else 2, 0], "warps_per_cta": warps_per_cta,
            "instr_shape": instr, "cga_layout": cga(source, rank, edge)}


def _f2_bases(source: Source, count: int, rank: int, max_log2: int = 4) -> list[list[int]]:
    """``count`` bases of ``rank`` coordinates, each a power of two below 2^max_log2 along one dim, or zero."""
    out = []
    for _ in range(count):
        basis = [0] * rank
        if source.integer(0, 5):
            basis[source.integer(0, rank - 1)] = 1 << source.integer(0, max_log2 - 1)
        out.append(basis)
    return out


def _distributed_linear(source: Source, rank: int, num_warps: int, edge: bool, depth: int) -> dict[str, Any]:
    return {"kind": "distributed_linear", "reg_bases": _f2_bases(source, source.integer(0, 4), rank),
            "lane_bases": _f2_bases(source, 5, rank), "warp_bases": _f2_bases(source, num_warps.bit_length() - 1, rank),
            "block_bases": _f2_bases(source, source.choice((0, 0, 1, 2)), rank), "shape": []}


def _amd_mfma(source: Source, rank: int, num_warps: int, edge: bool, depth: int) -> dict[str, Any]:
    m = source.choice((16, 32, 4, 64)) if edge else source.choice((16, 32))
    k = source.choice((4, 8, 16, 32, 64)) if m == 32 else source.choice((8, 16, 32, 128))
    return {"kind": "amd_mfma", "version": source.integer(1, 4), "instr_shape": [m, m, k],
            "transposed": source.integer(0, 1) == 1, "warps_per_cta": _pow2_split(source, num_warps.bit_length() - 1, rank),
            "element_bitwidth": source.choice((32, 64)) if edge else 32,
            "tiles_per_warp": _pow2_split(source, source.integer(0, 2), rank), "cga_layout": cga(source, rank, edge)}


def _amd_wmma(source: Source, rank: int, num_warps: int, edge: bool, depth: int) -> dict[str, Any]:
    """Register and warp bases tile the instruction tiles as CGA bases tile CTAs (one bit each, doubling per dim); the
    instruction's K is the version's (at the edges, any bases and any K)."""
    version = source.integer(1, 3)
    k = 16 if version < 3 else source.choice((32, 64, 128))
    tiles = cga(source, rank, edge) + cga(source, rank, edge)
    if edge and source.integer(0, 1):
        tiles, k = _f2_bases(source, len(tiles), rank, 3), source.choice((16, 32, 64))
    warps = num_warps.bit_length() - 1
    return {"kind": "amd_wmma", "version": version, "transposed": source.integer(0, 1) == 1,
            "warp_bases": tiles[:warps], "reg_bases": tiles[warps:],
            "instr_shape": [16, 16, k], "cga_layout": cga(source, rank, edge), "rank": rank}


def _nvmma_shared(source: Source, rank: int, num_warps: int, edge: bool, depth: int) -> dict[str, Any]:
    bits = source.choice((8, 16, 32, 64)) if edge else source.choice((8, 16, 32))
    swizzle = source.choice((0, 32, 64, 128))
    fp4 = edge and bits == 8 and swizzle == 128 and source.integer(0, 3) == 0
    return {"kind": "nvmma_shared", "swizzle_byte_width": swizzle, "element_bitwidth": bits, "rank": rank,
            "transposed": source.integer(0, 1) == 1, "fp4_padded": fp4, "cga_layout": cga(source, rank, edge)}


def _swizzled_shared(source: Source, rank: int, num_warps: int, edge: bool, depth: int) -> dict[str, Any]:
    """Powers of two up to 16; at the edges one of vec, per_phase and max_phase a non-power of two; one of them zero
    in one case of 16 (one of 4 at the edges, whose ranks are 1 and 4 alone): the constructor takes any integer, and
    only a Python error may refuse one."""
    vec, per_phase, max_phase = (_maybe_odd(source, [1 << source.integer(0, 4) for _ in range(3)], edge))
    if source.integer(0, 3 if edge else 15) == 0:
        zero = source.integer(0, 2)
        vec, per_phase, max_phase = [0 if i == zero else v for i, v in enumerate((vec, per_phase, max_phase))]
    return {"kind": "swizzled_shared", "vec": vec, "per_phase": per_phase, "max_phase": max_phase,
            "order": permutation(source, rank), "cga_layout": cga(source, rank, edge)}


def _padded_shared(source: Source, rank: int, num_warps: int, edge: bool, depth: int) -> dict[str, Any]:
    pairs = [[1 << source.integer(1, 8), 1 << source.integer(0, 3)] for _ in range(source.integer(1, 2))]
    pairs = [p for i, p in enumerate(pairs) if p[0] not in [q[0] for q in pairs[:i]]]
    return {"kind": "padded_shared", "interval_padding_pairs": pairs, "order": permutation(source, rank),
            "shape": [1 << source.integer(0, 5) for _ in range(rank)], "cga_layout": cga(source, rank, edge)}


def _shared_linear(source: Source, rank: int, num_warps: int, edge: bool, depth: int) -> dict[str, Any]:
    return {"kind": "shared_linear", "offset_bases": _f2_bases(source, source.integer(0 if edge else 1, 6), rank),
            "block_bases": _f2_bases(source, source.choice((0, 0, 1, 2)), rank),
            "alignment": 1 << source.integer(4, 10)}


def _tensor_memory(source: Source, rank: int, num_warps: int, edge: bool, depth: int) -> dict[str, Any]:
    """A block of M x N (M from 64 and 128, at the edges any power of two from 16 to 256; N one column to 256, at the
    edges 1 or 256), a column stride, a CGA layout, and one in four a two-CTA layout (tcgen05's ``cta_group::2``)."""
    two_ctas = source.integer(0, 3) == 0
    m = source.choice((64, 128)) if not edge else source.choice((16, 32, 64, 128, 256))
    n = 1 << bounded(source, 0, 8, edge)
    return {"kind": "tensor_memory", "block": [m, n], "col_stride": 1 << source.integer(0, 2),
            "cga_layout": cga(source, 2, edge), "two_ctas": two_ctas}


def _tensor_memory_scales(source: Source, rank: int, num_warps: int, edge: bool, depth: int) -> dict[str, Any]:
    """Blackwell's tensor-memory layout of MMA scale factors: a CGA layout alone (its tensors are [M, K / 32]; at the
    edges the shape drawn for it may have three dims, which only a Python error may refuse)."""
    return {"kind": "tensor_memory_scales", "cga_layout": cga(source, 2, edge)}


_DRAW = {
    "blocked": _blocked, "slice": _slice, "dot_operand": _dot_operand, "nvmma_distributed": _nvmma_distributed,
    "distributed_linear": _distributed_linear, "amd_mfma": _amd_mfma, "amd_wmma": _amd_wmma,
    "nvmma_shared": _nvmma_shared, "swizzled_shared": _swizzled_shared, "padded_shared": _padded_shared,
    "shared_linear": _shared_linear, "tensor_memory": _tensor_memory, "tensor_memory_scales": _tensor_memory_scales,
}
