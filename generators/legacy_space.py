"""The parameter space of Triton's legacy layouts, for the coverage report of the targets that draw them
(``triton.layouts``, ``triton.shared_layouts``): each constructor argument over its legal range, read off a
case's layout dict. Source of the arguments: Gluon's layout constructors
(``triton/experimental/gluon/language/_layouts.py``: BlockedLayout, SliceLayout, NVMMADistributedLayout,
DotOperandLayout, SwizzledSharedLayout, NVMMASharedLayout)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from math import prod
from typing import Any

from layoutfuzz.generators.legacy_layouts import DISTRIBUTED_KINDS, SHARED_KINDS
from layoutfuzz.generators.space import Parameter, bin_of
from layoutfuzz.oracles import triton_layouts as tl

GLUON = "Gluon's layout constructors (triton/experimental/gluon/language/_layouts.py)"
WARPS = (1, 2, 4, 8, 16, 32)  # num_warps: a power of two; a CTA holds at most 1024 threads (CUDA), 32 warps
WGMMA_WARPS = (4, 8, 16, 32)  # an mma v3 (wgmma) layout spans whole warpgroups of 4 warps
SHAPE_BITS = ("0-3", "4-7", "8-11", "12-15", "16-20")  # log2 of a tensor's elements: Triton's tensors hold at most 2^20 (TRITON_MAX_TENSOR_NUMEL)
BEYOND = {SHAPE_BITS[-1]: "tensors stay under 2^16 elements so that a case evaluates every element in milliseconds"}

Read = Callable[[Mapping[str, Any]], Any]


def _kind(layout: tl.Layout) -> str:
    if isinstance(layout, tl.NVMMADistributedLayout):
        return f"nvmma_v{layout.version[0]}"
    return {tl.BlockedLayout: "blocked", tl.SliceLayout: "slice", tl.DotOperandLayout: "dot_operand",
            tl.SwizzledSharedLayout: "swizzled_shared", tl.NVMMASharedLayout: "nvmma_shared"}[type(layout)]


def _warps(layout: tl.Layout) -> int | None:
    """The warps a distributed layout spans (a slice: its parent's); None for a shared layout."""
    while isinstance(layout, (tl.SliceLayout, tl.DotOperandLayout)):
        layout = layout.parent
    if isinstance(layout, (tl.BlockedLayout, tl.NVMMADistributedLayout)):
        return prod(layout.warps_per_cta)
    return None


def legacy_parameters(layout_of: Callable[[Mapping[str, Any]], tl.Layout], shape_of: Read,
                      kinds: tuple[str, ...] = DISTRIBUTED_KINDS + SHARED_KINDS) -> tuple[Parameter, ...]:
    """The parameters of the legacy layout ``layout_of`` reads off a case (of one of ``kinds``) and of the shape
    ``shape_of`` reads: what a layout is built from, each over its legal range."""

    def of(kind: str | tuple[str, ...], read: Callable[[Any], Any]) -> Read:
        wanted = (kind,) if isinstance(kind, str) else kind

        def draw(p: Mapping[str, Any]) -> Any:
            layout = layout_of(p)
            return read(layout) if _kind(layout) in wanted else None
        return draw

    def elements_log2(p: Mapping[str, Any]) -> str:
        return bin_of(prod(shape_of(p)).bit_length() - 1, SHAPE_BITS)

    distributed = tuple(k for k in kinds if k in DISTRIBUTED_KINDS)
    parameters = [
        Parameter("kind", kinds, GLUON, lambda p: _kind(layout_of(p))),
        Parameter("rank", (1, 2, 3, 4), f"{GLUON}; Triton's tensors of any rank", lambda p: len(shape_of(p))),
        Parameter("tensor elements (log2)", SHAPE_BITS, "Triton: power-of-two dims, at most TRITON_MAX_TENSOR_NUMEL "
                  "(2^20) elements", elements_log2, BEYOND),
    ]
    if distributed:
        parameters += [
            Parameter("warps", WARPS, f"{GLUON}: warps_per_cta; CUDA: at most 32 warps a CTA",
                      lambda p: _warps(layout_of(p))),
            Parameter("blocked elements per thread", (1, 2, 4, 8, 16), f"{GLUON}: BlockedLayout.size_per_thread",
                      of("blocked", lambda lay: prod(lay.size_per_thread))),
            Parameter("blocked order", ("identity", "reversed", "other"), f"{GLUON}: BlockedLayout.order",
                      of("blocked", lambda lay: _order(lay.order))),
            Parameter("mma v3 instr N", (8, 16, 32, 64, 128, 256), "PTX ISA 9.7.15.5: wgmma .m64nNk16 (Triton picks a "
                      "power of two); NVMMADistributedLayout.instr_shape", of("nvmma_v3", lambda lay: lay.instr_shape[1])),
            Parameter("mma v3 warps", WGMMA_WARPS, f"{GLUON}: NVMMADistributedLayout v3 warps_per_cta (warpgroups)",
                      of("nvmma_v3", lambda lay: prod(lay.warps_per_cta))),
            Parameter("mma v3 warps along M", WGMMA_WARPS, f"{GLUON}: NVMMADistributedLayout v3 warps_per_cta[0] (any "
                      "split with a warpgroup along M)", of("nvmma_v3", lambda lay: lay.warps_per_cta[0])),
            Parameter("dot operand", ("A", "B"), f"{GLUON}: DotOperandLayout.operand_index",
                      of("dot_operand", lambda lay: "AB"[lay.operand_index])),
            Parameter("dot k_width", (1, 2, 4, 8, 16), f"{GLUON}: DotOperandLayout.k_width (elements a register holds "
                      "along K; 16 for 4-bit types)", of("dot_operand", lambda lay: lay.k_width),
                      {16: "4-bit element types: no 4-bit type in these targets"}),
            Parameter("dot parent", ("nvmma_v2", "nvmma_v3"), f"{GLUON}: DotOperandLayout.parent",
                      of("dot_operand", lambda lay: _kind(lay.parent))),
            Parameter("slice dim", (0, 1, 2, 3), f"{GLUON}: SliceLayout.dim", of("slice", lambda lay: lay.dim)),
            Parameter("slice parent", ("blocked", "nvmma_v2", "nvmma_v3", "dot_operand", "slice"),
                      f"{GLUON}: SliceLayout.parent (any distributed layout)", of("slice", lambda lay: _kind(lay.parent))),
            Parameter("slice depth", (1, 2, 3), f"{GLUON}: SliceLayout.parent, a slice in turn (depth bound 3)",
                      of("slice", _slice_depth)),
        ]
    chosen = ("swizzled vec", "swizzled per_phase", "swizzled max_phase", "swizzled order", "nvmma swizzle bytes",
              "nvmma element bits", "nvmma transposed")
    parameters += shared_parameters(layout_of, tuple(n for n in chosen if OWNER[n][0] in kinds))
    return tuple(parameters)


def shared_parameters(shared_of: Callable[[Mapping[str, Any]], tl.Layout | None], names: tuple[str, ...]) -> tuple[Parameter, ...]:
    """The constructor arguments ``names`` of the shared layout ``shared_of`` reads off a case (None: the case has
    none), each drawn only where the layout is of its kind: what every target with a shared side declares."""
    fields = {
        "swizzled vec": ("vec", (1, 2, 4, 8, 16), "SwizzledSharedLayout.vec"),
        "swizzled per_phase": ("per_phase", (1, 2, 4, 8, 16), "SwizzledSharedLayout.per_phase"),
        "swizzled max_phase": ("max_phase", (1, 2, 4, 8, 16), "SwizzledSharedLayout.max_phase"),
        "swizzled order": ("order", ("identity", "reversed", "other"), "SwizzledSharedLayout.order"),
        "nvmma swizzle bytes": ("swizzle_byte_width", (0, 32, 64, 128), "NVMMASharedLayout.swizzle_byte_width"),
        "nvmma element bits": ("element_bitwidth", (8, 16, 32), "NVMMASharedLayout.element_bitwidth"),
        "nvmma transposed": ("transposed", (False, True), "NVMMASharedLayout.transposed"),
    }

    def draw(name: str) -> Callable[[Mapping[str, Any]], Any]:
        field, kind = fields[name][0], OWNER[name][0]

        def read(p: Mapping[str, Any]) -> Any:
            layout = shared_of(p)
            if layout is None or _kind(layout) != kind:
                return None
            value = getattr(layout, field)
            return _order(value) if field == "order" else value
        return read

    return tuple(Parameter(n, fields[n][1], f"{GLUON}: {fields[n][2]}", draw(n)) for n in names)


NVMMA_ATOM_ELEMENTS_LOG2 = {0: 6, 32: 6, 64: 7, 128: 8}  # the fewest elements (log2) of a 2-D tensor with dims of 8
# or more that holds an NVMMA swizzle's 8-row atom (rows of 16 bytes at least; 32-bit elements: the fewest)


def other_kinds(pair: Mapping[str, Any], kind_key: str) -> bool:
    """Whether two parameter values cannot meet because they belong to different shared or distributed kinds (the
    kind itself read under ``kind_key``)."""
    owners = [set(OWNER[name]) for name in pair if name in OWNER]
    if len(owners) == 2 and not owners[0] & owners[1]:
        return True
    return kind_key in pair and bool(owners) and pair[kind_key] not in owners[0]


def _slice_depth(layout: tl.Layout) -> int:
    """How many slices are nested, outermost first."""
    depth = 0
    while isinstance(layout, tl.SliceLayout):
        layout, depth = layout.parent, depth + 1
    return depth


def _order(order: tuple[int, ...]) -> str:
    rank = len(order)
    if tuple(order) == tuple(range(rank - 1, -1, -1)):
        return "reversed"  # Triton's usual: the last dim fastest (a 1-D order, [0], is this one)
    return "identity" if tuple(order) == tuple(range(rank)) else "other"


RANKS = {"blocked": (1, 2, 3, 4), "slice": (1, 2, 3), "nvmma_v2": (2,), "nvmma_v3": (2,), "dot_operand": (2,),
         "swizzled_shared": (1, 2, 3, 4), "nvmma_shared": (2, 3)}  # a slice is one rank below its parent's; NVMMA
# shared layouts of rank 1 and 4 (Gluon takes them) are triton.gluon_layouts' cases: the exact model here is rank 2-3


def legacy_illegal(a: str, x: Any, b: str, y: Any) -> bool:
    """Pairs of legacy-layout parameter values that cannot occur together."""
    pair = {a: x, b: y}
    if other_kinds(pair, "kind"):  # parameters of two different kinds
        return True
    owners = [OWNER.get(name) for name in pair]
    kinds = pair.get("kind", next((o for o in owners if o), None))
    kinds = (kinds,) if isinstance(kinds, str) else kinds
    if "rank" in pair and kinds:
        rank = pair["rank"]
        if not any(rank in RANKS[k] for k in kinds):
            return True
        if "slice dim" in pair:
            return pair["slice dim"] > rank
        if "slice parent" in pair:  # parents: blocked of rank 2-4, slices of rank 2-3, the mma kinds of rank 2
            return (rank >= 2 and pair["slice parent"] not in ("blocked", "slice")) or (rank == 3 and pair["slice parent"] == "slice")
        if "slice depth" in pair:  # d slices of a blocked layout of rank 4 at most
            return rank + pair["slice depth"] > 4
        order = pair.get("blocked order", pair.get("swizzled order"))
        if order is not None:  # one dim: the one order, [0]; two dims: [1, 0] or [0, 1]
            return (rank == 1 and order != "reversed") or (rank == 2 and order == "other")
    if "mma v3 warps along M" in pair and ("warps" in pair or "mma v3 warps" in pair):  # a warpgroup at least, of them
        warps = pair.get("warps", pair.get("mma v3 warps"))
        return warps < 4 or pair["mma v3 warps along M"] > warps
    if "warps" in pair:
        if kinds and all(k in SHARED_KINDS for k in kinds):
            return True
        if pair.get("kind") == "nvmma_v3" or "mma v3 instr N" in pair:
            return pair["warps"] not in WGMMA_WARPS
        if "mma v3 warps" in pair:
            return pair["warps"] != pair["mma v3 warps"]
        if pair.get("dot parent") == "nvmma_v3" or pair.get("slice parent") == "nvmma_v3":
            return pair["warps"] not in WGMMA_WARPS
    if "slice dim" in pair and "slice parent" in pair:  # dim 2 slices a rank-3 parent (blocked, a slice), 3 a blocked one
        return (pair["slice dim"] >= 2 and pair["slice parent"] not in ("blocked", "slice")) or (
            pair["slice dim"] == 3 and pair["slice parent"] != "blocked")
    if "slice depth" in pair and "slice parent" in pair:
        return (pair["slice depth"] > 1) != (pair["slice parent"] == "slice")
    if "slice depth" in pair and "slice dim" in pair:  # d slices of a rank-4 parent at most: the outer one's of 5 - d
        return pair["slice dim"] > 4 - pair["slice depth"]
    if "dot operand" in pair and "dot parent" in pair:  # a wgmma's B is read from shared memory, never registers
        return pair["dot operand"] == "B" and pair["dot parent"] == "nvmma_v3"
    if "dot k_width" in pair and "dot parent" in pair:  # wgmma A registers: 32 bits of 16- or 8-bit elements
        return pair["dot parent"] == "nvmma_v3" and pair["dot k_width"] not in (2, 4)
    if "dot k_width" in pair and "dot operand" in pair:
        return pair["dot operand"] == "B" and pair["dot k_width"] > 8
    if "tensor elements (log2)" in pair:
        low, high = (int(v) for v in pair["tensor elements (log2)"].split("-"))
        if "nvmma swizzle bytes" in pair:  # an 8-row atom of the swizzle's bytes, rows of at least 8 (32-bit) elements
            return high < NVMMA_ATOM_ELEMENTS_LOG2[pair["nvmma swizzle bytes"]]
        if kinds and all(k == "nvmma_shared" for k in kinds):
            return high < 6
    return False


OWNER = {  # the kinds whose cases draw each kind-specific parameter
    "blocked elements per thread": ("blocked",), "blocked order": ("blocked",),
    "mma v3 instr N": ("nvmma_v3",), "mma v3 warps": ("nvmma_v3",),
    "dot operand": ("dot_operand",), "dot k_width": ("dot_operand",), "dot parent": ("dot_operand",),
    "slice dim": ("slice",), "slice parent": ("slice",), "slice depth": ("slice",), "mma v3 warps along M": ("nvmma_v3",),
    "swizzled vec": ("swizzled_shared",), "swizzled per_phase": ("swizzled_shared",),
    "swizzled max_phase": ("swizzled_shared",), "swizzled order": ("swizzled_shared",),
    "nvmma swizzle bytes": ("nvmma_shared",), "nvmma element bits": ("nvmma_shared",), "nvmma transposed": ("nvmma_shared",),
}
