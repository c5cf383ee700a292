"""The parameter spaces of the GPU targets, for ``layoutfuzz coverage``: every parameter with its legal range from
the PTX text, the driver's API or Triton's, read off a case as the probe runs it."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from layoutfuzz.generators.space import Parameter, Space, bin_of, bins
from layoutfuzz.gpu.wgmma import probe_base_offset, probe_descriptor
from layoutfuzz.oracles.algorithms import conversion_plan
from layoutfuzz.oracles.linear_layout import LinearLayout
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
        return False

    return Space((
        Parameter("dtype", WGMMA_TYPES, "PTX ISA 9.7.15.5 wgmma.mma_async: .atype/.btype", lambda p: p["dtype"],
                  {"b1": "the probe has no single-bit path: its accumulator of AND-popc is not a copy of the operand"}),
        Parameter("operand", ("A", "B"), "PTX ISA 9.7.15.5: a-desc, b-desc", lambda p: p["operand"]),
        Parameter("major", tuple(m.value for m in Major), f"{ptx}, Table 38", lambda p: p["major"]),
        Parameter("swizzle", tuple(m.name for m in SwizzleMode), f"{ptx}: bits 63-62", lambda p: p["swizzle"]),
        Parameter("n", tuple(sorted(set().union(*WGMMA_N.values()))), "PTX ISA 9.7.15.5: .m64nNkK shapes per type",
                  lambda p: p["n"] if p["operand"] == "B" else None),
        Parameter("start address field", FIELD_BINS, f"{ptx}: bits 13-0", field_of("start_address")),
        Parameter("LBO field", FIELD_BINS, f"{ptx}: bits 29-16", field_of("leading_byte_offset")),
        Parameter("SBO field", FIELD_BINS, f"{ptx}: bits 45-32", field_of("stride_byte_offset")),
        Parameter("base offset field", tuple(range(8)), f"{ptx}: bits 51-49", probe_base_offset),
        Parameter("lbo where ignored", ("0", "1", "16", "other"), f"{ptx}: LBO unused for swizzled K-major", ignored_lbo),
    ), illegal)


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
        Parameter("interleave", ("none", "16B", "32B"), f"{api}: CUtensorMapInterleave", lambda p: p.get("interleave", "none")),
        Parameter("out-of-bound fill", ("none", "nan"), f"{api}: CUtensorMapFloatOOBfill", lambda p: p.get("oob_fill", "none")),
        Parameter("start coordinates", ("zero", "inside", "negative", "past the bound"), "PTX ISA: cp.async.bulk.tensor coordinates",
                  lambda p: p.get("coordinates", "zero")),
        Parameter("direction", ("load", "store"), "PTX ISA: cp.async.bulk.tensor (global to shared and back)",
                  lambda p: p.get("direction", "load")),
    ), illegal)


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

    small = "the generator keeps 2^12 elements at most (a kernel of up to 64-bit elements in 1-8 warps, compiled per case)"
    return Space((
        Parameter("rank", (1, 2, 3, 4, 5), f"{triton}: any rank", lambda p: len(p["shape"]),
                  {4: "the probes are written for ranks 1-3", 5: "the probes are written for ranks 1-3"}),
        Parameter("log2 elements", tuple(range(21)), "Triton: TRITON_MAX_TENSOR_NUMEL = 2^20",
                  lambda p: sum(s.bit_length() - 1 for s in p["shape"]), {n: small for n in range(13, 21)}),
        Parameter("num_warps", (1, 2, 4, 8, 16, 32), f"{triton}: a power of two, up to 32 warps (1,024 threads)", lambda p: p["num_warps"]),
        Parameter("element bits", (8, 16, 32, 64), "Triton: int8-int64 (the data moved)", lambda p: p["elem_bits"]),
        Parameter("conversion plan", ("none", "register", "shuffle", "shared"), "the paper, Section 5.4", plan),
        Parameter("A broadcasts registers", ("no", "yes"), "the paper, Def 4.10 (zero columns)", broadcasts("register")),
        Parameter("A broadcasts lanes", ("no", "yes"), "the paper, Def 4.10 (zero columns)", broadcasts("lane")),
        Parameter("A broadcasts warps", ("no", "yes"), "the paper, Def 4.10 (zero columns)", broadcasts("warp")),
    ), _convert_illegal)


def _convert_illegal(a: str, x: Any, b: str, y: Any) -> bool:
    """One warp has no warp bits to broadcast; fewer elements than dims of at least 2 cannot be."""
    pair = {a: x, b: y}
    if pair.get("num_warps") == 1 and pair.get("A broadcasts warps") == "yes":
        return True
    if "rank" in pair and "log2 elements" in pair:
        return pair["log2 elements"] < pair["rank"]
    return False
