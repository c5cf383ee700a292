"""The parameter spaces of the GPU targets, for ``layoutfuzz coverage``: every parameter with its legal range from
the PTX text, the driver's API or Triton's, read off a case as the probe runs it."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from layoutfuzz.generators.legacy_space import NVMMA_ATOM_ELEMENTS_LOG2, OWNER, WARPS, other_kinds, shared_parameters
from layoutfuzz.generators.space import Parameter, Space, bin_of, bins
from layoutfuzz.gpu.wgmma import probe_base_offset, probe_descriptor
from layoutfuzz.oracles.algorithms import conversion_plan
from layoutfuzz.oracles.linear_layout import LinearLayout
from layoutfuzz.oracles.tma import INTERLEAVE_BYTES
from layoutfuzz.oracles.tma import SwizzleMode as TmaMode
from layoutfuzz.oracles.wgmma import WGMMA_N, WGMMA_TYPES, Major, SwizzleMode

FIELD_BINS = bins(0, (1 << 14) - 1, 16)  # a 14-bit descriptor field (16-byte units), in 16 ranges
BOX_DIM_BINS = bins(1, 256, 8)  # a TMA box dim: 1-256
INNER_BINS = bins(1, 128, 8)  # the inner box row in 16-byte units: 16 bytes to 256 x 8-byte elements


def wgmma_space() -> Space:
    """``wgmma.descriptor``: one operand of a wgmma.mma_async read through its matrix descriptor."""

    def field_of(name: str) -> Callable[[Mapping[str, Any]], str]:
        def draw(p: Mapping[str, Any]) -> str:
            return bin_of(getattr(probe_descriptor(p), name), FIELD_BINS)
        return draw

    def ignored_lbo(p: Mapping[str, Any]) -> str | None:
        field = p.get("lbo_field")
        return None if field is None else str(field) if field in (0, 1, 16) else "other"

    ptx = "PTX ISA 9.7.15.5.1.2 (seed 003): matrix descriptor"
    past_smem = ("past the probe's reach: a block has 227 KiB of shared memory on sm_90 (field 14528), the probe's "
                 "32 KiB window and 4 KiB identity end below it")

    def illegal(a: str, x: Any, b: str, y: Any) -> bool:
        pair = {a: x, b: y}
        if "major" in pair and "dtype" in pair:  # PTX: only .f16/.bf16 operands may be transposed (MN-major)
            return pair["major"] == Major.MN.value and pair["dtype"] not in ("f16", "bf16")
        if "n" in pair and "operand" in pair:  # the probe reads A through D = A x I: N is B's
            return pair["operand"] == "A"
        if "n" in pair and "dtype" in pair:
            return pair["n"] not in WGMMA_N[pair["dtype"]]
        if "lbo where ignored" in pair and ("major" in pair or "swizzle" in pair):  # only K-major swizzled ignores LBO
            return pair.get("major") == Major.MN.value or pair.get("swizzle") == SwizzleMode.NONE.name
        if "lbo where ignored" in pair and "LBO field" in pair:  # a field of 0, 1 or 16 is in the first range
            return pair["lbo where ignored"] != "other" and pair["LBO field"] != FIELD_BINS[0]
        if "SBO field" in pair and ("n" in pair or "operand" in pair):
            return _sbo_past_shared_memory(pair.get("operand", "B"), pair.get("n", 8), pair["SBO field"])
        return False

    return Space((
        Parameter("dtype", WGMMA_TYPES, "PTX ISA 9.7.15.5 wgmma.mma_async: .atype/.btype", lambda p: p["dtype"],
                  {"b1": "the probe has no single-bit path: its accumulator of AND-popc is not a copy of the operand"}),
        Parameter("operand", ("A", "B"), "PTX ISA 9.7.15.5: a-desc, b-desc", lambda p: p["operand"]),
        Parameter("major", tuple(m.value for m in Major), f"{ptx}, Table 38", lambda p: p["major"]),
        Parameter("swizzle", tuple(m.name for m in SwizzleMode), f"{ptx}: bits 63-62", lambda p: p["swizzle"]),
        Parameter("n", tuple(sorted(set().union(*WGMMA_N.values()))), "PTX ISA 9.7.15.5: .m64nNkK shapes per type",
                  lambda p: p["n"] if p["operand"] == "B" else None),
        Parameter("start address field", FIELD_BINS, f"{ptx}: bits 13-0",
                  lambda p: bin_of((p.get("window_offset", 0) + p["start"]) >> 4, FIELD_BINS),
                  {b: past_smem for b in FIELD_BINS[-2:]}),
        Parameter("LBO field", FIELD_BINS, f"{ptx}: bits 29-16", field_of("leading_byte_offset")),
        Parameter("SBO field", FIELD_BINS, f"{ptx}: bits 45-32", field_of("stride_byte_offset")),
        Parameter("base offset field", tuple(range(8)), f"{ptx}: bits 51-49", probe_base_offset),
        Parameter("lbo where ignored", ("0", "1", "16", "other"), f"{ptx}: LBO unused for swizzled K-major", ignored_lbo),
    ), illegal)


def _sbo_past_shared_memory(operand: str, n: int, sbo_range: str) -> bool:
    """Whether every operand of this kind whose SBO field lies in ``sbo_range`` reaches past a block's shared memory:
    its SBO steps at least (repeats - 1) times, with the fewest repeats over the layouts PTX allows it (B of N 8: one
    row group; 16-bit MN-major swizzled: two K groups; otherwise N/8 row groups of B)."""
    from layoutfuzz.generators.wgmma import WIDE_WINDOW

    repeats = 2 if operand == "A" or n % 16 == 0 else n // 8
    low = int(sbo_range.split("-")[0])
    return (repeats - 1) * 16 * low > WIDE_WINDOW


def tma_space() -> Space:
    """``tma.swizzle``: one tiled box copied by the TMA unit through a tensor map (cuTensorMapEncodeTiled)."""
    api = "CUDA driver API: cuTensorMapEncodeTiled"
    modes = tuple(m.name for m in TmaMode if m.spec.cuda is not None)

    def inner_units(p: Mapping[str, Any]) -> str:
        return bin_of(p["box_dims"][0] * p["element_bytes"] // 16, INNER_BINS)

    def illegal(a: str, x: Any, b: str, y: Any) -> bool:
        pair = {a: x, b: y}
        if "inner row (16-byte units)" not in pair:
            return False
        low = int(pair["inner row (16-byte units)"].split("-")[0])
        if "swizzle" in pair:  # a swizzled inner row must fit the swizzle span
            span = TmaMode[pair["swizzle"]].spec.span
            return bool(span) and low * 16 > span
        if "element bytes" in pair:  # at most 256 elements a row
            return low * 16 > 256 * pair["element bytes"]
        return False

    return Space((
        Parameter("swizzle", modes, "PTX ISA 5.5.7 (seed 004); CUtensorMapSwizzle", lambda p: p["swizzle"]),
        Parameter("element bytes", (1, 2, 4, 8), f"{api}: CUtensorMapDataType sizes", lambda p: p["element_bytes"]),
        Parameter("rank", (1, 2, 3, 4, 5), f"{api}: tensorRank 1-5", lambda p: len(p["box_dims"]),
                  {1: "the probe's window is addressed by rows: a rank-1 box is a rank-2 box of one row"}),
        Parameter("inner row (16-byte units)", INNER_BINS, f"{api}: boxDim[0] x element size, 16-byte multiple", inner_units),
        Parameter("outer box dim", BOX_DIM_BINS, f"{api}: boxDim[i] <= 256", lambda p: bin_of(max(p["box_dims"][1:] or [1]), BOX_DIM_BINS)),
        Parameter("element stride", tuple(range(1, 9)), f"{api}: elementStrides[i] 1-8", lambda p: max(p["element_strides"])),
        Parameter("base offset", tuple(range(8)), "PTX ISA 5.5.7 (seed 004): base offset of the destination", lambda p: p["dst"] // 128 % 8),
        Parameter("interleave", ("none", "16B", "32B"), f"{api}: CUtensorMapInterleave", lambda p: p.get("interleave", "none"),
                  dict.fromkeys(("16B", "32B"), INTERLEAVE_EXCLUDED)),
        Parameter("out-of-bound fill", ("none", "nan"), f"{api}: CUtensorMapFloatOOBfill", lambda p: p.get("oob_fill", "none"),
                  {"nan": NAN_FILL_EXCLUDED}),
        Parameter("start coordinates", ("zero", "inside", "negative", "past the bound"), "PTX ISA: cp.async.bulk.tensor coordinates",
                  lambda p: p.get("coordinates", "zero"), dict.fromkeys(("inside", "negative", "past the bound"), BY_TMA_COPY)),
        Parameter("direction", ("load", "store"), "PTX ISA: cp.async.bulk.tensor (global to shared and back)",
                  lambda p: p.get("direction", "load"), {"store": BY_TMA_COPY}),
    ), illegal)


BY_TMA_COPY = "drawn by tma.copy, whose cases carry a global tensor and start coordinates (this target checks placement from 0)"
INTERLEAVE_EXCLUDED = "interleaved copies are tma.copy's (their observed rules: oracles.tma_copy); tma.encode checks their encodings"
NAN_FILL_EXCLUDED = "drawn by tma.copy, whose loads cross the tensor's bounds (this target's boxes lie inside their tensor)"
BOUNDS = ("inside", "cut on a granule", "cut inside a granule", "past", "before")


def tma_copy_space() -> Space:
    """``tma.copy``: a tiled load or store between a global tensor and the shared-memory box, from start coordinates."""
    api = "CUDA driver API: cuTensorMapEncodeTiled"
    ptx = "PTX ISA 5.5.3 (tiled mode: bounding box, traversal stride, out of boundary access)"
    order = {"inside": 0, "cut": 1, "past": 2, "before": 3}
    multicast = "PTX ISA 9.7.9.25.5.2 cp.async.bulk.tensor .multicast::cluster"

    def mask_kind(p: Mapping[str, Any]) -> str | None:
        cluster, mask = p.get("cluster", 1), p.get("multicast", 1)
        if cluster == 1:
            return None
        if mask == (1 << cluster) - 1:
            return "every CTA"
        return "some CTAs, the issuer among them" if mask >> p["issuer"] & 1 else "some CTAs, not the issuer"

    def innermost(p: Mapping[str, Any]) -> str:
        place = p["places"][0]
        if place != "cut":
            return place
        return "cut on a granule" if p["global_dims"][0] * p["element_bytes"] % 16 == 0 else "cut inside a granule"

    def outer(p: Mapping[str, Any]) -> str | None:
        return max(p["places"][1:], key=order.__getitem__) if len(p["places"]) > 1 else None

    def illegal(a: str, x: Any, b: str, y: Any) -> bool:
        pair = {a: x, b: y}
        if pair.get("interleave", "none") != "none" and _interleave_excludes(pair):
            return True
        if pair.get("direction") == "store":  # a store before a bound traps the device: not drawn; only loads multicast
            return (pair.get("innermost bound") == "before" or pair.get("outer bounds") == "before"
                    or pair.get("cluster size", 1) > 1 or "multicast mask" in pair)
        if pair.get("cluster size") == 1 and "multicast mask" in pair:  # one CTA: no mask
            return True
        if pair.get("out-of-bound fill") == "nan" or pair.get("data type") == "floating point":
            # the NaN fill is for floating-point types, which are 2-8 bytes, and only loads fill
            if pair.get("element bytes") == 1 or pair.get("direction") == "store":
                return True
            if pair.get("out-of-bound fill") == "nan" and pair.get("data type") == "unsigned":
                return True
        if pair.get("rank") == 1:  # no outer dims: no outer bounds, strides or padding
            return pair.get("outer bounds") is not None or pair.get("element stride", 1) > 1 or pair.get("padded strides") == "yes"
        return False

    return Space((
        Parameter("direction", ("load", "store"), "PTX ISA: cp.async.bulk.tensor (global to shared and back)", lambda p: p["direction"]),
        Parameter("swizzle", tuple(m.name for m in TmaMode if m.spec.cuda is not None), "PTX ISA 5.5.7 (seed 004); CUtensorMapSwizzle",
                  lambda p: p["swizzle"]),
        Parameter("element bytes", (1, 2, 4, 8), f"{api}: CUtensorMapDataType sizes", lambda p: p["element_bytes"]),
        Parameter("rank", (1, 2, 3, 4, 5), f"{api}: tensorRank 1-5", lambda p: len(p["box_dims"])),
        Parameter("innermost bound", BOUNDS, f"{ptx}; stores: the granule rule (docs/findings.md)", innermost),
        Parameter("outer bounds", ("inside", "cut", "past", "before"), ptx, outer),
        Parameter("element stride", tuple(range(1, 9)), f"{api}: elementStrides[i] 1-8", lambda p: max(p["element_strides"])),
        Parameter("padded strides", ("no", "yes"), f"{api}: globalStrides, multiples of 16",
                  lambda p: "yes" if p["global_strides"] != _plain_strides(p) else "no"),
        Parameter("base offset", tuple(range(8)), "PTX ISA 5.5.7 (seed 004): base offset of the box in shared memory",
                  lambda p: p["dst"] // 128 % 8),
        Parameter("interleave", ("none", "16B", "32B"), f"{api}: CUtensorMapInterleave; PTX ISA 5.5.6",
                  lambda p: ("none", "16B", "32B")[p.get("interleave", 0)]),
        Parameter("out-of-bound fill", ("zero", "nan"), f"{api}: CUtensorMapFloatOOBfill",
                  lambda p: "nan" if p.get("oob_fill") else "zero"),
        Parameter("data type", ("unsigned", "floating point"), f"{api}: CUtensorMapDataType",
                  lambda p: "floating point" if p.get("data_type") is not None else "unsigned"),
        Parameter("cluster size", (1, 2, 4, 8), f"{multicast}; CUDA: cluster dims (8 CTAs portable)", lambda p: p.get("cluster", 1),
                  {8: "clusters of 2 and 4 CTAs are what the issue names; 8 leaves fewer clusters resident a launch"}),
        Parameter("multicast mask", ("every CTA", "some CTAs, the issuer among them", "some CTAs, not the issuer"),
                  f"{multicast}: ctaMask", mask_kind),
    ), illegal)


def _interleave_excludes(pair: Mapping[str, Any]) -> bool:
    """What an interleaved tma.copy never is: rank 1 or 2 (cuda.h), swizzled otherwise than 32B at 32B interleave
    (cuda.h), an atomicity sub-mode (refused on sm_90), or cut inside a granule (dim 0 counts whole slices)."""
    if pair.get("rank") in (1, 2):
        return True
    if pair.get("innermost bound") == "cut inside a granule" or "ATOM" in str(pair.get("swizzle", "")):
        return True
    return pair.get("interleave") == "32B" and pair.get("swizzle", "B32") != "B32"


def _plain_strides(p: Mapping[str, Any]) -> list[int]:
    from layoutfuzz.generators.tma_copy import strides

    unit = INTERLEAVE_BYTES[p["interleave"]] if p.get("interleave") else p["element_bytes"]
    return strides(p["global_dims"], unit, [0] * (len(p["global_dims"]) - 1))


def convert_layout_space() -> Space:
    """``triton.convert_layout``: a Gluon convert_layout between two distributed layouts (Def 4.10) of one tensor."""
    triton = "Triton: Gluon DistributedLinearLayout and num_warps"

    def broadcasts(dim: str) -> Callable[[Mapping[str, Any]], str]:
        def draw(p: Mapping[str, Any]) -> str:
            bases = dict(LinearLayout.from_dict(p["a"]).in_dims).get(dim, ())
            return "yes" if any(not any(b) for b in bases) else "no"
        return draw

    def plan(p: Mapping[str, Any]) -> str:
        return conversion_plan(LinearLayout.from_dict(p["a"]), LinearLayout.from_dict(p["b"])).kind

    small = "the generator keeps 2^12 elements at most (a kernel of up to 64-bit elements in 1-32 warps, compiled per case)"
    return Space((
        Parameter("rank", (1, 2, 3, 4, 5), f"{triton}: any rank", lambda p: len(p["shape"]),
                  {4: "the probes are written for ranks 1-3", 5: "the probes are written for ranks 1-3"}),
        Parameter("log2 elements", tuple(range(21)), "Triton: TRITON_MAX_TENSOR_NUMEL = 2^20",
                  lambda p: sum(s.bit_length() - 1 for s in p["shape"]),
                  {0: "dims of at least 2: a one-element tensor has no layout to convert"} | {n: small for n in range(13, 21)}),
        Parameter("num_warps", WARPS, f"{triton}: a power of two, up to 32 warps (1,024 threads)", lambda p: p["num_warps"]),
        Parameter("element bits", (8, 16, 32, 64), "Triton: int8-int64 (the data moved)", lambda p: p["elem_bits"]),
        Parameter("conversion plan", ("none", "register", "shuffle", "shared"), "the paper, Section 5.4", plan),
        Parameter("A broadcasts registers", ("no", "yes"), "the paper, Def 4.10 (zero columns)", broadcasts("register")),
        Parameter("A broadcasts lanes", ("no", "yes"), "the paper, Def 4.10 (zero columns)", broadcasts("lane")),
        Parameter("A broadcasts warps", ("no", "yes"), "the paper, Def 4.10 (zero columns)", broadcasts("warp")),
    ), _convert_illegal)


def convert_layout_cluster_space() -> Space:
    """``triton.convert_layout_cluster``: ``convert_layout_space`` over a cluster of CTAs (the ``block`` dimension)."""
    from layoutfuzz.gpu.triton_clusters import ctas_tile

    base = convert_layout_space()

    def block_broadcast(p: Mapping[str, Any]) -> str:
        return "yes" if any(not any(b) for b in dict(LinearLayout.from_dict(p["a"]).in_dims).get("block", ())) else "no"

    cuda = "CUDA programming guide: a cluster of up to 8 CTAs is portable (16 on an H100 with a non-portable size)"
    return Space((
        *base.parameters,
        Parameter("num_ctas", (1, 2, 4, 8, 16), f"Triton: num_ctas; {cuda}", lambda p: p["num_ctas"],
                  {1: "one CTA is triton.convert_layout's", 16: "a non-portable cluster size"}),
        Parameter("A broadcasts blocks", ("no", "yes"), "the paper, Def 4.10 (zero columns)", block_broadcast),
        Parameter("block bases", ("CTA tiles", "scattered blocks"), "Gluon: DistributedLinearLayout's block_bases (any bits)",
                  lambda p: "CTA tiles" if ctas_tile(LinearLayout.from_dict(p["a"])) else "scattered blocks"),
    ), _convert_illegal)


def _convert_illegal(a: str, x: Any, b: str, y: Any) -> bool:
    """One warp has no warp bits to broadcast; fewer elements than dims of at least 2 cannot be."""
    pair = {a: x, b: y}
    if pair.get("num_warps") == 1 and pair.get("A broadcasts warps") == "yes":
        return True
    if "rank" in pair and "log2 elements" in pair:
        return pair["log2 elements"] < pair["rank"]
    return False


def shared_memory_space() -> Space:
    """``triton.shared_memory``: a tile stored into a swizzled, NVMMA or linear shared buffer and read back."""
    gluon = "Gluon: allocate_shared_memory with a SwizzledShared, NVMMAShared or SharedLinear layout"

    def shared(p: Mapping[str, Any]) -> Any:
        from layoutfuzz.oracles import triton_layouts as tl

        return tl.from_dict(p["shared"]) if "shared" in p else None

    def illegal(a: str, x: Any, b: str, y: Any) -> bool:
        pair = {a: x, b: y}
        if other_kinds(pair, "kind"):
            return True
        kind = pair.get("kind", next((OWNER[n][0] for n in pair if n in OWNER), None))
        if "element bits" in pair and "nvmma swizzle bytes" in pair:  # 8 rows of the swizzle's span in 2^min(12, bits)
            span = 8 * max(16, pair["nvmma swizzle bytes"]) // pair["element bits"]
            return pair["element bits"] == 64 or 8 * max(8, span) > 1 << min(12, pair["element bits"])
        if "element bits" in pair and kind == "nvmma_shared":
            return pair["element bits"] == 64
        if "tile elements (log2)" in pair and "element bits" in pair:  # element ids fit the element type
            return pair["tile elements (log2)"] > min(12, pair["element bits"])
        if "tile elements (log2)" in pair and "nvmma swizzle bytes" in pair:  # an 8-row atom of the swizzle fits
            return pair["tile elements (log2)"] < NVMMA_ATOM_ELEMENTS_LOG2[pair["nvmma swizzle bytes"]]
        return False

    return Space((
        Parameter("kind", ("swizzled_shared", "nvmma_shared", "linear"), gluon, lambda p: p["kind"]),
        Parameter("element bits", (8, 16, 32, 64), "Triton: int8-int64 tiles (NVMMA shared: 8-32)", lambda p: p["elem_bits"]),
        Parameter("tile elements (log2)", tuple(range(6, 13)), "this target: 2-D tiles, dims from 8, element ids that "
                  "fit the element type (at most 2^12)", lambda p: (p["shape"][0] * p["shape"][1]).bit_length() - 1),
        Parameter("num_warps", WARPS, "Triton: a power of two, up to 32 warps (1,024 threads)", lambda p: p["num_warps"]),
        *shared_parameters(shared, ("swizzled vec", "swizzled per_phase", "swizzled max_phase", "nvmma swizzle bytes",
                                    "nvmma transposed")),
    ), illegal)


def triton_tma_space() -> Space:
    """``triton.tma``: a Gluon TMA load and store of one box through an NVMMA-shared buffer."""
    gluon = "Gluon: TensorDescriptor and tma.async_copy_global_to_shared / shared_to_global over NVMMAShared"
    api = "CUDA driver API: cuTensorMapEncodeTiled"

    def over_edge(p: Mapping[str, Any]) -> str:
        hangs = any(c < 0 or c + b > n for c, b, n in zip(p["coord"], p["block"], p["global_shape"]))
        return "yes" if hangs else "no"

    def illegal(a: str, x: Any, b: str, y: Any) -> bool:
        pair = {a: x, b: y}
        if "inner box bytes" in pair and "swizzle" in pair:  # the inner row spans at least the swizzle (and 16 bytes)
            return pair["inner box bytes"] < max(16, pair["swizzle"])
        if "inner box bytes" in pair and "element bits" in pair:  # at most 256 elements a row
            return pair["inner box bytes"] > 256 * pair["element bits"] // 8
        if "box rows (log2)" in pair and "swizzle" in pair:  # a swizzled box holds the 8-row atom, in 16 KiB
            return (pair["swizzle"] > 0 and pair["box rows (log2)"] < 3) or max(16, pair["swizzle"]) << pair["box rows (log2)"] > 16384
        if "box rows (log2)" in pair and "inner box bytes" in pair:  # this target's boxes: at most 16 KiB
            return pair["inner box bytes"] << pair["box rows (log2)"] > 16384
        return False

    return Space((
        Parameter("element bits", (8, 16, 32), f"{gluon}: NVMMASharedLayout element_bitwidth 8-32", lambda p: p["elem_bits"]),
        Parameter("swizzle", (0, 32, 64, 128), f"{gluon}: NVMMASharedLayout.swizzle_byte_width", lambda p: p["swizzle"]),
        Parameter("rank", (2, 3, 4, 5), f"{api}: tensorRank up to 5", lambda p: len(p["block"]),
                  {4: "oracles/triton_layouts.py models NVMMA shared layouts of rank 2-3",
                   5: "oracles/triton_layouts.py models NVMMA shared layouts of rank 2-3"}),
        Parameter("inner box bytes", (16, 32, 64, 128, 256, 512, 1024), f"{api}: boxDim[0] x element size, 16-byte "
                  "multiples, boxDim <= 256", lambda p: p["block"][-1] * p["elem_bits"] // 8),
        Parameter("box rows (log2)", tuple(range(9)), f"{api}: boxDim[i] <= 256 (this target: at most 16 KiB a box)",
                  lambda p: sum(b.bit_length() - 1 for b in p["block"][:-1])),
        Parameter("over an edge", ("no", "yes"), "PTX ISA: cp.async.bulk.tensor out-of-bound elements (zero fill, skipped stores)",
                  over_edge),
        Parameter("padded rows", ("no", "yes"), f"{api}: globalStrides, multiples of 16 bytes", lambda p: "yes" if p["row_pad"] else "no"),
        Parameter("num_warps", WARPS, "Triton: a power of two, up to 32 warps", lambda p: p["num_warps"]),
    ), illegal)


def triton_tma_cluster_space() -> Space:
    """``triton.tma_cluster``: a Gluon TMA load over a cluster of CTAs into a subview of a multi-buffer."""
    from layoutfuzz.gpu.triton_tma_cluster import cta_part

    gluon = "Gluon: NVMMASharedLayout(cga_layout), TensorDescriptor, tma load into shared_memory_descriptor.index"
    api = "CUDA driver API: cuTensorMapEncodeTiled"

    def over_edge(p: Mapping[str, Any]) -> str:
        return "yes" if any(c + b > n for c, b, n in zip(p["coord"], p["block"], p["global_shape"])) else "no"

    def slot(p: Mapping[str, Any]) -> str:
        return "only" if p["buffers"] == 1 else "first" if p["slot"] == 0 else "last" if p["slot"] == p["buffers"] - 1 else "middle"

    def illegal(a: str, x: Any, b: str, y: Any) -> bool:
        pair = {a: x, b: y}
        if "CTAs" in pair and "CTA bases" in pair:
            return pair["CTA bases"].count("+") + 1 != pair["CTAs"].bit_length() - 1
        if "CTA bases" in pair and "CTA row bytes" in pair:  # the block's row (the CTA's, once per column base) <= 256
            return pair["CTA row bytes"] // 4 << pair["CTA bases"].split("+").count("columns") > 256  # elements, 32-bit
        if "CTA bases" in pair and "CTA rows (log2)" in pair:  # the block's rows <= 256
            return pair["CTA rows (log2)"] + pair["CTA bases"].split("+").count("rows") > 8
        if "buffers" in pair and "slot" in pair:
            return (pair["buffers"] == 1) != (pair["slot"] == "only") or (pair["buffers"] == 2 and pair["slot"] == "middle")
        if "CTA row bytes" in pair and "swizzle" in pair:  # a CTA's row spans the swizzle (and 16 bytes)
            return pair["CTA row bytes"] < max(16, pair["swizzle"])
        if "CTA row bytes" in pair and "element bits" in pair:  # at most 256 elements a row
            return pair["CTA row bytes"] > 256 * pair["element bits"] // 8
        if "CTA rows (log2)" in pair and "swizzle" in pair:  # a swizzled part holds the 8-row atom, in 16 KiB
            return (pair["swizzle"] > 0 and pair["CTA rows (log2)"] < 3) or max(16, pair["swizzle"]) << pair["CTA rows (log2)"] > 16384
        if "CTA rows (log2)" in pair and "CTA row bytes" in pair:
            return pair["CTA row bytes"] << pair["CTA rows (log2)"] > 16384
        return False

    kinds = ("rows", "columns", "copies")
    return Space((
        Parameter("element bits", (8, 16, 32), f"{gluon}: element_bitwidth 8-32", lambda p: p["elem_bits"]),
        Parameter("swizzle", (0, 32, 64, 128), f"{gluon}: swizzle_byte_width", lambda p: p["swizzle"]),
        Parameter("CTAs", (2, 4, 8), "CUDA: a portable cluster holds up to 8 CTAs (Triton's num_ctas)", lambda p: 1 << len(p["splits"]),
                  {8: "a CTA's part halves again: the 16-byte row and the 8-row swizzle atom leave few blocks; 2 and 4 CTAs split both dims"}),
        Parameter("CTA bases", (*kinds, *(f"{a}+{b}" for a in kinds for b in kinds)),
                  "Gluon: cga_layout bases, each a CTA tile along rows or columns, or zero (CTAs with the same part)",
                  lambda p: "+".join(p["splits"])),
        Parameter("CTA row bytes", (16, 32, 64, 128, 256, 512, 1024), f"{api}: boxDim[0] x element size, per CTA",
                  lambda p: cta_part(p)[1] * p["elem_bits"] // 8),
        Parameter("CTA rows (log2)", tuple(range(9)), f"{api}: boxDim[1] <= 256 (this target: at most 16 KiB a CTA)",
                  lambda p: cta_part(p)[0].bit_length() - 1),
        Parameter("buffers", (1, 2, 4), f"{gluon}: allocate_shared_memory([BUFFERS, ...]) and .index(slot)", lambda p: p["buffers"]),
        Parameter("slot", ("only", "first", "middle", "last"), f"{gluon}: the subview loaded", slot),
        Parameter("over an edge", ("no", "yes"), "PTX ISA: cp.async.bulk.tensor out-of-bound elements (zero fill)", over_edge),
        Parameter("padded rows", ("no", "yes"), f"{api}: globalStrides, multiples of 16 bytes", lambda p: "yes" if p["row_pad"] else "no"),
        Parameter("num_warps", (1, 2, 4, 8), "Triton: a power of two (this target: up to 8 warps a CTA)", lambda p: p["num_warps"]),
    ), illegal)


def triton_wgmma_space() -> Space:
    """``triton.wgmma``: one Gluon warpgroup_mma over operands in swizzled shared memory (A possibly in registers)."""
    gluon = "Gluon: warpgroup_mma, NVMMADistributedLayout v3, NVMMASharedLayout"
    ptx = "PTX ISA 9.7.15.5: wgmma.mma_async"

    def illegal(a: str, x: Any, b: str, y: Any) -> bool:
        pair = {a: x, b: y}
        if "accumulator" in pair and "mma type" in pair:
            return pair["accumulator"] not in {"f16": ("f32", "f16"), "i8": ("i32",)}.get(pair["mma type"], ("f32",))
        if "A major" in pair and "mma type" in pair:  # only 16-bit types are read MN-major
            return pair["A major"] == "MN" and pair["mma type"] not in ("f16", "bf16")
        if "B major" in pair and "mma type" in pair:
            return pair["B major"] == "MN" and pair["mma type"] not in ("f16", "bf16")
        if "A from registers" in pair and "A major" in pair:  # registers hold A K-major
            return pair["A from registers"] == "yes" and pair["A major"] == "MN"
        if "warps" in pair and "M" in pair:  # [8, 1] warps need M = 128
            return False
        return False

    return Space((
        Parameter("mma type", ("f16", "bf16", "tf32", "e4m3", "e5m2", "i8"), f"{ptx}: .atype/.btype (Triton's dot types)",
                  lambda p: p["mma"]),
        Parameter("accumulator", ("f32", "f16", "i32"), f"{ptx}: .dtype", lambda p: p["acc"]),
        Parameter("M", (64, 128), f"{gluon}: warps_per_cta [4, 1] (64 rows a warpgroup) or [8, 1] / [4, 2]", lambda p: p["M"]),
        Parameter("instr N", (8, 16, 32, 64, 128, 256), f"{ptx}: .m64nNk shapes (Triton picks a power of two)",
                  lambda p: p["instr_n"]),
        Parameter("warps", (4, 8, 16, 32), f"{gluon}: whole warpgroups", lambda p: p["num_warps"],
                  {16: "a tile of at most 128 x 256: more warpgroups than its rows and columns need",
                   32: "a tile of at most 128 x 256: more warpgroups than its rows and columns need"}),
        Parameter("A from registers", ("no", "yes"), f"{ptx}: A from registers or shared memory",
                  lambda p: "yes" if p["a_in_regs"] else "no"),
        Parameter("A major", ("K", "MN"), f"{ptx}: imm-trans-a", lambda p: "MN" if p["a_mn_major"] else "K"),
        Parameter("B major", ("K", "MN"), f"{ptx}: imm-trans-b", lambda p: "K" if p["b_k_major"] else "MN"),
        Parameter("A swizzle", (32, 64, 128), f"{gluon}: NVMMASharedLayout.swizzle_byte_width (0: issue 17's open item)",
                  lambda p: p["a_swizzle"]),
        Parameter("B swizzle", (32, 64, 128), f"{gluon}: NVMMASharedLayout.swizzle_byte_width", lambda p: p["b_swizzle"]),
        Parameter("use accumulator", ("no", "yes"), f"{ptx}: scale-d", lambda p: "yes" if p["use_acc"] else "no"),
    ), illegal)
