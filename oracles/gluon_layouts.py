"""What Triton's ``to_linear_layout`` must do with a Gluon layout: refuse where a documented precondition fails,
otherwise answer with a linear layout that has the defining properties of the layout's kind, and exactly the
layout ``oracles.triton_layouts`` builds where that models the kind.

Sources, one line each:
- tensor dims are powers of two: Triton's tensors (``tl.arange``: "arange's range must be a power of 2") and
  ``LinearLayout`` (``LinearLayout.h``: every in- and out-dim size is a power of two);
- a distributed layout maps (register, lane, warp, block) onto every element of the tensor (``LinearLayout.h``:
  "surjective"; the paper's Def 4.4), lanes are the 32 threads of a warp, warps and blocks those of the CTA and CGA;
- a shared layout maps (offset, block) onto every element, each CTA's offsets one-to-one (Def 4.14: invertible);
- a CGA layout's bases are powers of two that tile each dim, zero for a broadcast CTA (Gluon ``_get_shape_per_cta``:
  "The shape is the largest stride * 2"; ``CGAEncodingAttr`` is a surjective ``LinearLayout``);
- wgmma's instruction is 16 x N with N a power of two for a linear layout, the tensor tiled by it (PTX ``wgmma``:
  N a multiple of 8; Triton tiles power-of-two tensors, so only a power-of-two N tiles them);
- an NVMMA shared layout that swizzles has rank >= 2 and each CTA's block at least 8 rows of the swizzle atom's
  width (Gluon's front end: "block shape along the contiguous dimension ... is too small for the swizzle byte size");
- a padded shared layout has no linear layout (``PaddedSharedEncodingAttr``: "use paddedLinearLayout instead");
- tensor memory: blocks of 64 or 128 rows, a tensor at least one block (``TensorMemoryEncodingAttr``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from math import prod
from typing import Any

from layoutfuzz.oracles import triton_layouts as tl
from layoutfuzz.oracles.f2 import EchelonBasis
from layoutfuzz.oracles.linear_layout import LayoutError, LinearLayout

SHARED_KINDS = ("nvmma_shared", "swizzled_shared", "padded_shared", "shared_linear")
AMD_KINDS = ("amd_mfma", "amd_wmma")


def is_pow2(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def cga_bases(spec: dict[str, Any]) -> list[list[int]]:
    """A layout's CGA bases as Gluon derives them (a slice drops the sliced dim of its parent's; a dot operand keeps its
    parent's with the K dim zeroed)."""
    kind = spec["kind"]
    if kind == "slice":
        return [b[:spec["dim"]] + b[spec["dim"] + 1:] for b in cga_bases(spec["parent"])]
    if kind == "dot_operand":
        parent = cga_bases(spec["parent"])
        k_dim = len(parent[0]) - 1 if parent and spec["operand_index"] == 0 else len(parent[0]) - 2 if parent else 0
        return [[0 if d == k_dim else v for d, v in enumerate(b)] for b in parent]
    return [list(b) for b in spec.get("cga_layout", spec.get("block_bases", []))]


def root_kind(spec: dict[str, Any]) -> str:
    """The kind at the bottom of a chain of slices and dot operands."""
    return root_kind(spec["parent"]) if "parent" in spec else spec["kind"]


def precondition(spec: dict[str, Any], shape: Sequence[int]) -> str | None:
    """The first documented precondition of ``to_linear_layout(spec, shape)`` that fails, as "NAME: detail";
    None where all hold."""
    if not all(is_pow2(s) for s in shape):
        return f"tensor dims: {list(shape)} not powers of two"
    tiles = None if root_kind(spec).endswith("_linear") else _cga_precondition(cga_bases(spec), shape)
    return tiles or _parent_cga_precondition(spec) or _kind_precondition(spec, shape) or _cga_rank(spec, shape)


def _cga_rank(spec: dict[str, Any], shape: Sequence[int]) -> str | None:
    """A CGA layout's bases are coordinates of the tensor: one entry a dim."""
    bases = [] if root_kind(spec).endswith("_linear") else cga_bases(spec)
    if bases and len(bases[0]) != len(shape):
        return f"cga layout: bases of rank {len(bases[0])} for a tensor of rank {len(shape)}"
    return None


def _parent_cga_precondition(spec: dict[str, Any]) -> str | None:
    """A slice's or dot operand's parent's own CGA layout must tile its dims too (what the child derives from it can
    hide a missing bit)."""
    if "parent" not in spec or root_kind(spec).endswith("_linear"):  # a linear layout's block bases are coordinates
        return None
    parent = spec["parent"]
    bases = cga_bases(parent)
    return _cga_precondition(bases, [1 << 30] * (len(bases[0]) if bases else 0)) or _parent_cga_precondition(parent)


def _cga_precondition(bases: list[list[int]], shape: Sequence[int]) -> str | None:
    if any(len(b) != len(bases[0]) for b in bases):
        return "cga layout: bases of different ranks"
    for d in range(len(bases[0]) if bases else 0):
        column = sorted(b[d] for b in bases if b[d])
        if any(not is_pow2(v) for v in column) or column != [1 << k for k in range(len(column))]:
            return f"cga layout: dim {d} bases {column} do not tile it"
        if any(sum(1 for v in b if v) > 1 for b in bases):
            return "cga layout: a basis along two dims"
    return None


def _kind_precondition(spec: dict[str, Any], shape: Sequence[int]) -> str | None:
    kind = spec["kind"]
    check = _KIND_CHECKS.get(kind)
    return check(spec, shape) if check else None


def _rank_matches(rank: int, shape: Sequence[int]) -> str | None:
    return None if rank == len(shape) else f"rank: a rank-{rank} layout for a rank-{len(shape)} tensor"


def _blocked(spec: dict[str, Any], shape: Sequence[int]) -> str | None:
    for name in ("size_per_thread", "threads_per_warp", "warps_per_cta"):
        if not all(is_pow2(v) for v in spec[name]):
            return f"blocked: {name} {spec[name]} not powers of two"
    if prod(spec["threads_per_warp"]) != 32:
        return "blocked: threads_per_warp does not make a 32-lane warp"
    return _rank_matches(len(spec["order"]), shape)


def _slice(spec: dict[str, Any], shape: Sequence[int]) -> str | None:
    parent_shape = list(shape)
    parent_shape.insert(min(spec["dim"], len(shape)), 1)
    return _kind_precondition(spec["parent"], parent_shape)


def _dot_operand(spec: dict[str, Any], shape: Sequence[int]) -> str | None:
    parent = spec["parent"]
    if parent["kind"] == "nvmma_distributed":
        if parent["version"][0] == 3 and spec["operand_index"] == 1:
            return "dot operand: wgmma takes operand B from shared memory"
        if not is_pow2(spec["k_width"]) or spec["k_width"] > 16:
            return f"dot operand: k_width {spec['k_width']} not a power of two up to 16"
    elif parent["kind"] == "blocked" and spec["k_width"] != 0:
        return "dot operand: a blocked parent takes k_width 0"
    return _kind_precondition(parent, shape)


def _nvmma_distributed(spec: dict[str, Any], shape: Sequence[int]) -> str | None:
    warps, instr = spec["warps_per_cta"], spec["instr_shape"]
    if not all(is_pow2(w) for w in warps):
        return f"nvmma: warps_per_cta {warps} not powers of two"
    if spec["version"][0] == 3:
        if len(instr) != 3 or instr[0] != 16 or not is_pow2(instr[1]) or not 8 <= instr[1] <= 256:
            return f"nvmma: wgmma instr_shape {instr} is not 16 x N (a power of two, 8-256)"
        if warps[0] % 4:
            return "nvmma: wgmma needs warpgroups (4 warps) along M"
    elif list(instr) not in ([16, 8], [1, 16, 8]):
        return f"nvmma: mma v2 instr_shape {instr}"
    if len(warps) != 2:
        return f"nvmma: rank {len(warps)}"
    return _rank_matches(len(warps), shape)


def _nvmma_shared(spec: dict[str, Any], shape: Sequence[int]) -> str | None:
    rank, swizzle, bits = spec["rank"], spec["swizzle_byte_width"], spec["element_bitwidth"]
    if rank != len(shape):
        return _rank_matches(rank, shape)
    if swizzle and rank < 2:
        return "nvmma shared: a swizzled layout of rank 1"
    if bits not in (8, 16, 32, 64):  # Gluon: NVMMASharedLayout(element_bitwidth) of 8, 16, 32 or 64 bits
        return f"nvmma shared: element bitwidth {bits} is not 8, 16, 32 or 64"
    per_cta = shape_per_cta(shape, cga_bases(spec))
    contig = 0 if spec["transposed"] else rank - 1
    atom = 8 * max(swizzle, 16) // bits
    rows = per_cta[-1] if spec["transposed"] else prod(per_cta[:-1])  # the block collapsed to 2-D
    if swizzle and (per_cta[contig] < atom or rows < 8):
        return f"nvmma shared: per-CTA block {per_cta} below the 8 x {atom} swizzle atom"
    return None


def _swizzled_shared(spec: dict[str, Any], shape: Sequence[int]) -> str | None:
    for name in ("vec", "per_phase", "max_phase"):
        if not is_pow2(spec[name]):
            return f"swizzled shared: {name} {spec[name]} not a power of two"
    return _rank_matches(len(spec["order"]), shape)


def _padded_shared(spec: dict[str, Any], shape: Sequence[int]) -> str | None:
    return "padded shared: no linear layout (padding is not linear)"


def _linear(spec: dict[str, Any], shape: Sequence[int]) -> str | None:
    names = [n for n in ("reg_bases", "lane_bases", "warp_bases", "block_bases", "offset_bases") if n in spec]
    every = [b for n in names for b in spec[n]]
    if any(len(b) != len(shape) for b in every):
        return "linear bases: rank differs from the tensor's"
    if any(not 0 <= v < s for b in every for v, s in zip(b, shape)):
        return "linear bases: a basis outside the tensor"
    if not surjective(every, shape):
        return "linear bases: not onto the tensor"
    if spec["kind"] == "distributed_linear" and not _permutation(every):
        return "linear bases: not a permutation once broadcasts are removed"
    return None


def _permutation(vectors: Sequence[Sequence[int]]) -> bool:
    """Nonzero bases each one bit of one dim, no two alike (``LinearEncodingAttr``'s verifier)."""
    nonzero = [tuple(v) for v in vectors if any(v)]
    return len(set(nonzero)) == len(nonzero) and all(sum(1 for x in v if x) == 1 and is_pow2(max(v)) for v in nonzero)


WMMA_K = {1: (16,), 2: (16,), 3: (32, 64, 128)}  # AMD WMMA instruction K per version (RDNA3, RDNA4, CDNA5)


def _amd_wmma(spec: dict[str, Any], shape: Sequence[int]) -> str | None:
    instr = spec.get("instr_shape") or [16, 16, 16]
    if len(instr) != 3 or list(instr[:2]) != [16, 16] or instr[2] not in WMMA_K.get(spec["version"], ()):
        return f"amd wmma: instr_shape {instr} is not version {spec['version']}'s"
    tiles = _cga_precondition([list(b) for b in spec["reg_bases"] + spec["warp_bases"]], shape)
    if tiles:
        return "amd wmma: register and warp bases" + tiles.split(":", 1)[1]
    return _rank_matches(spec["rank"], shape)


def _tensor_memory(spec: dict[str, Any], shape: Sequence[int]) -> str | None:
    if len(spec["block"]) != 2:
        return f"tensor memory: block {spec['block']} is not [M, N]"
    m, n = spec["block"]
    if m not in (64, 128):
        return f"tensor memory: block M {m} is not 64 or 128"
    per_cta = shape_per_cta(shape, cga_bases(spec))
    if len(shape) != 2 or per_cta[0] < m or per_cta[1] < n:
        return f"tensor memory: per-CTA tensor {per_cta} smaller than the block {[m, n]}"
    return None


def _tensor_memory_scales(spec: dict[str, Any], shape: Sequence[int]) -> str | None:
    wrong = _rank_matches(2, shape)  # TensorMemoryScalesEncodingAttr lays out [M, K / 32] scale tensors
    return wrong and f"tensor memory scales: {wrong}"


_KIND_CHECKS = {"blocked": _blocked, "slice": _slice, "dot_operand": _dot_operand,
                "nvmma_distributed": _nvmma_distributed, "nvmma_shared": _nvmma_shared,
                "swizzled_shared": _swizzled_shared, "padded_shared": _padded_shared,
                "distributed_linear": _linear, "shared_linear": _linear, "amd_wmma": _amd_wmma, "tensor_memory": _tensor_memory,
                "tensor_memory_scales": _tensor_memory_scales}


def cga_shape(bases: list[list[int]], rank: int) -> list[int]:
    """CTAs along each dim (Gluon's ``_get_shape_per_cta``: the largest basis entry times two, or 1)."""
    return [2 * max((b[d] for b in bases if d < len(b)), default=0) or 1 for d in range(rank)]  # a missing dim: unsplit


def shape_per_cta(shape: Sequence[int], bases: list[list[int]]) -> list[int]:
    """Each CTA's share of the tensor (at least one element a dim)."""
    return [max(1, s // c) for s, c in zip(shape, cga_shape(bases, len(shape)))]


def surjective(vectors: Sequence[Sequence[int]], shape: Sequence[int]) -> bool:
    """Whether the F2 span of coordinate vectors covers every element of a power-of-two ``shape``."""
    return f2_rank([_pack(v, shape) for v in vectors]) == sum(s.bit_length() - 1 for s in shape)


def f2_rank(columns: Sequence[int]) -> int:
    """The dimension of the span of bit-packed vectors over F2."""
    return len(EchelonBasis.of(columns).rows)


def properties(spec: dict[str, Any], shape: Sequence[int], answer: dict[str, list[list[int]]]) -> list[str]:
    """The defining properties an answer of ``to_linear_layout`` breaks, as "PROPERTY: detail" (empty: none)."""
    shared = spec["kind"] in SHARED_KINDS
    wanted = ("offset", "block") if shared else ("register", "lane", "warp", "block")
    if tuple(answer) != wanted:
        return [f"in dims: {list(answer)}, not {list(wanted)}"]
    every = [b for bs in answer.values() for b in bs]
    broken = []
    if any(len(b) != len(shape) or any(not 0 <= v < s for v, s in zip(b, shape)) for b in every):
        broken.append("out dims: a basis outside the tensor")
    elif all(is_pow2(s) for s in shape) and not surjective(every, shape):
        broken.append("onto: some elements have no " + ("offset" if shared else "thread"))
    if not shared and root_kind(spec) not in AMD_KINDS and len(answer["lane"]) != 5:
        broken.append(f"lanes: {len(answer['lane'])} lane bases, not 5")
    ctas = len(cga_bases(spec))
    if len(answer["block"]) != ctas:
        broken.append(f"blocks: {len(answer['block'])} block bases for {1 << ctas} CTAs")
    if shared and not broken and spec["kind"] != "shared_linear":  # a user's own bases may alias on purpose
        offsets = answer["offset"]
        if f2_rank([_pack(b, shape) for b in offsets]) != len(offsets):
            broken.append("one-to-one: two offsets of a CTA hold the same element")
    return broken


def _pack(basis: Sequence[int], shape: Sequence[int]) -> int:
    packed, shift = 0, 0
    for value, size in zip(basis, shape):
        packed |= value << shift
        shift += max(size.bit_length() - 1, 0)
    return packed


def modelled(spec: dict[str, Any]) -> tl.Layout | None:
    """The ``oracles.triton_layouts`` layout of one CTA for a spec, or None where the kind is not modelled (AMD,
    linear, padded, tensor memory, fp4 or 64-bit NVMMA, CGA below the top level)."""
    kind = spec["kind"]
    try:
        if kind == "blocked":
            return tl.BlockedLayout(*(tuple(spec[k]) for k in ("size_per_thread", "threads_per_warp", "warps_per_cta",
                                                                "order")))
        if kind == "nvmma_distributed" and len(spec["warps_per_cta"]) == 2:
            return tl.NVMMADistributedLayout(tuple(spec["version"]), tuple(spec["warps_per_cta"]),
                                             tuple(spec["instr_shape"]))
        if kind == "slice" and not cga_bases(spec["parent"]):
            parent = modelled(spec["parent"])
            return tl.SliceLayout(spec["dim"], parent) if parent is not None else None
        if kind == "dot_operand" and spec["parent"]["kind"] == "nvmma_distributed" and not cga_bases(spec["parent"]):
            parent = modelled(spec["parent"])
            return tl.DotOperandLayout(spec["operand_index"], parent, spec["k_width"]) if parent is not None else None
        if kind == "swizzled_shared":
            return tl.SwizzledSharedLayout(spec["vec"], spec["per_phase"], spec["max_phase"], tuple(spec["order"]))
        if kind == "nvmma_shared" and not spec["fp4_padded"] and spec["element_bitwidth"] <= 32:
            return tl.NVMMASharedLayout(spec["swizzle_byte_width"], spec["element_bitwidth"], spec["rank"],
                                        spec["transposed"])
    except (TypeError, KeyError):
        return None
    return None


def expected(spec: dict[str, Any], shape: Sequence[int],
             cta_layout: Callable[[tl.Layout, list[int]], LinearLayout] = lambda layout, shape: layout.linear_layout(shape),
             ) -> dict[str, list[list[int]]] | None:
    """The exact answer where the kind is modelled and every precondition holds: one CTA's layout on its share of the
    tensor (``cta_layout``: a release's own definition where releases differ), times the CGA layout fitted to the
    tensor (Triton's ``combineCtaCgaWithShape``); None elsewhere."""
    layout = modelled(spec)
    if layout is None or precondition(spec, shape) is not None:
        return None
    bases = cga_bases(spec)
    per_cta = shape_per_cta(shape, bases)
    try:
        cta = cta_layout(layout, per_cta)
    except LayoutError:
        return None
    names = tl.dim_names(len(shape))
    cga = tl.ensure_not_larger(LinearLayout.from_bases({tl.BLOCK: bases}, list(zip(names, cga_shape(bases, len(shape))))),
                               dict(zip(names, shape)))
    inner = LinearLayout(tuple((n, b) for n, b in cta.in_dims if n != tl.BLOCK), cta.out_dims)
    whole = (inner * cga).transpose_outs(names)
    dims = dict(whole.in_dims)
    order = ("offset", "block") if spec["kind"] in SHARED_KINDS else ("register", "lane", "warp", "block")
    return {name: [list(b) for b in dims.get(name, ())] for name in order}


def op_precondition(op: str, axis: int, spec: dict[str, Any], bins: int | None = None) -> str | None:
    """A documented limit of a layout-sensitive operation's lowering that the layout breaks, as "NAME: detail":
    Triton lowers a scan (``cumsum``, ``associative_scan`` with any combine) of blocked layouts only (triton-lang/triton
    PR 3065: "scanOp currently only supports blocked layout"), and within one CTA along the scanned axis (a CGA split
    there: "unsupported scan layout"); a histogram's bins are its result's dim, so a power of two (the tensor-dims
    source above; Triton's tensor type says "Shape element 0 must be a power of 2")."""
    if op == "histogram" and bins is not None and not is_pow2(bins):
        return f"histogram: {bins} bins, not a power of two"
    if op not in ("cumsum", "scan_max", "scan_pair"):
        return None
    if spec["kind"] != "blocked":
        return f"scan: a {spec['kind']} layout (blocked only)"
    if any(b[axis] for b in cga_bases(spec)):
        return "scan: the scanned axis split across CTAs"
    return None
