"""``tma.encode``: the CUDA driver's ``cuTensorMapEncodeTiled`` against its documented requirements.

The generator draws tiled encodings over the whole documented space (every byte-sized data type, rank, interleave,
swizzle, L2 promotion and out-of-bound fill, dims up to 2^32, strides up to 2^40) and one in eight breaking one rule on
purpose; the oracle (``oracles.tensor_map``) says accept or refuse, the driver answers, and a disagreement is a finding:
the driver accepting what its text refuses (a tensor map the TMA unit then walks with undefined results) or refusing
what it allows.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from functools import cache
from typing import Any

from layoutfuzz.generators.case import Case
from layoutfuzz.generators.shrink import replaced
from layoutfuzz.generators.source import Source
from layoutfuzz.generators.space import Parameter, Space, bin_of
from layoutfuzz.generators.tensor_map import BREAKS, tiled_encoding
from layoutfuzz.gpu.device import compute_capability
from layoutfuzz.gpu.targets.base import GpuTarget
from layoutfuzz.harness.compare import Comparison
from layoutfuzz.harness.target import Attribution
from layoutfuzz.oracles.tensor_map import (
    DATA_TYPE_NAMES,
    INTERLEAVES,
    L2_PROMOTIONS,
    OOB_FILLS,
    SWIZZLES,
    TiledEncoding,
    encoding_problems,
)

KEYS = ("data_type", "global_address", "global_dims", "global_strides", "box_dims", "element_strides", "interleave",
        "swizzle", "l2_promotion", "oob_fill")
PACKED = ("16U4_ALIGN8B", "16U4_ALIGN16B", "16U6_ALIGN16B")  # CUtensorMapDataType 13-15
DIM_BINS = ("0", "1-256", "257-65535", "65536-4294967296", "past 2^32")


# what breaking a rule does to the other parameters (generators/tensor_map.py's _break), and so which pairs never occur
def _enum(names: tuple[str, ...], value: int) -> str | None:
    """An enum argument's name; None for a value past the enum (the rule "enum out of range")."""
    return names[value] if 0 <= value < len(names) else None


_BREAK_FIXES: dict[str, dict[str, Any]] = {
    "NaN fill of an integer type": {"out-of-bound fill": ("NAN_REQUEST_ZERO_FMA",),
                                    "data type": ("UINT8", "UINT16", "UINT32", "INT32", "UINT64", "INT64")},
    "inner box bytes": {"interleave": ("NONE",)}, "inner box past the swizzle": {"interleave": ("NONE",)},
    "interleaved inner box bytes": {"interleave": ("16B", "32B"), "rank": (3, 4, 5)},
    "interleave 32B without swizzle 32B": {"interleave": ("32B",), "rank": (3, 4, 5), "swizzle": ("NONE", "64B", "128B")},
    "global dim 2^32 + 1": {"largest global dim": ("past 2^32",)},
    "interleave below rank 3": {"rank": (1, 2), "interleave": ("16B", "32B")},
    "stride 8-byte aligned": {"rank": (2, 3, 4, 5)}, "stride 2^40": {"rank": (2, 3, 4, 5)},
    "rank 6": {"rank": ()}, "element stride 9": {"element stride": ()},
}


def _cannot_meet(a: str, x: Any, b: str, y: Any) -> bool:
    """Pairs that never occur: a rule broken on purpose fixes some parameters (its _BREAK_FIXES); a largest global dim
    of 0 is a rank-1 tensor of 0 elements and past 2^32 needs its rule broken; interleave 32B takes swizzle 32B unless
    that is the rule broken, which then draws none, 64B or 128B."""
    pair = {a: x, b: y}
    rule = pair.get("rule broken on purpose")
    if rule in _BREAK_FIXES:
        other, value = next(((k, v) for k, v in pair.items() if k != "rule broken on purpose"))
        if other in _BREAK_FIXES[rule] and value not in _BREAK_FIXES[rule][other]:
            return True
    largest = pair.get("largest global dim")
    if largest == "0":  # rank 1 (no interleave below rank 3)
        return (pair.get("rank", 1) != 1 or pair.get("interleave", "NONE") != "NONE"
                or pair.get("rule broken on purpose", "global dim 0") != "global dim 0")
    if largest == "past 2^32" and "rule broken on purpose" in pair:
        return rule != "global dim 2^32 + 1"
    if pair.get("interleave") == "32B" and "swizzle" in pair:
        return pair["swizzle"] not in ("32B", "NONE", "64B", "128B")
    return False


def encoding_of(p: Mapping[str, Any], base: int = 0) -> TiledEncoding:
    """The encoding of a case's params, its address counted from ``base``."""
    return TiledEncoding(p["data_type"], base + p["global_address"], tuple(p["global_dims"]), tuple(p["global_strides"]),
                         tuple(p["box_dims"]), tuple(p["element_strides"]), p["interleave"], p["swizzle"],
                         p["l2_promotion"], p["oob_fill"])


@cache
def _buffer() -> int:
    """The address of a 256-byte aligned device buffer every encoding points into (kept for the worker's life)."""
    from cuda.core import Device

    device = Device()
    device.set_current()
    _buffer.keep = device.allocate(4096, stream=device.default_stream)  # type: ignore[attr-defined]
    device.default_stream.sync()
    return int(_buffer.keep.handle)  # type: ignore[attr-defined]


def encode(p: Mapping[str, Any]) -> str:
    """The driver's answer to the case's encoding: "" (accepted) or the error's name."""
    from cuda.bindings import driver

    e = encoding_of(p, _buffer())
    try:
        err, _ = driver.cuTensorMapEncodeTiled(
            driver.CUtensorMapDataType(e.data_type), e.rank, e.global_address,
            [driver.cuuint64_t(d) for d in e.global_dims], [driver.cuuint64_t(s) for s in e.global_strides],
            [driver.cuuint32_t(b) for b in e.box_dims], [driver.cuuint32_t(s) for s in e.element_strides],
            driver.CUtensorMapInterleave(e.interleave), driver.CUtensorMapSwizzle(e.swizzle),
            driver.CUtensorMapL2promotion(e.l2_promotion), driver.CUtensorMapFloatOOBfill(e.oob_fill))
    except (ValueError, TypeError, OverflowError) as exc:  # refused by the bindings before the driver saw it
        return f"cuda.bindings: {type(exc).__name__}: {exc}"
    return "" if err == driver.CUresult.CUDA_SUCCESS else err.name


def encode_raw(p: Mapping[str, Any]) -> str:
    """``encode`` one layer down: ``libcuda``'s ``cuTensorMapEncodeTiled`` called through ctypes (``gpu.tma_driver.encode_tiled``),
    so that an answer of the bindings can be told from the driver's."""
    from layoutfuzz.gpu.tma_driver import encode_tiled, result_name

    result, _ = encode_tiled(encoding_of(p, _buffer()))
    return result_name(result) if result else ""


class TmaEncode(GpuTarget):
    name = "tma.encode"
    layer = "the CUDA driver's cuTensorMapEncodeTiled"
    description = "cuTensorMapEncodeTiled's accept or refuse vs its documented requirements (tensor-map validity oracle)"
    requires = ("cuda device sm_90", "cuda.core", "cuda.bindings")
    needs = ("cuda.core", "cuda.bindings")
    preload = ("cuda.core", "cuda.bindings.driver")
    max_batch = 8192

    def generate(self, source: Source) -> dict[str, Any]:
        return tiled_encoding(source)

    def validate(self, case: Case) -> None:
        """Every argument present, as integers the driver's types can hold (rank up to 6: one past the limit)."""
        p = case.params
        try:
            values = [p[k] for k in KEYS]
        except KeyError as exc:
            raise ValueError(f"an encoding needs {', '.join(KEYS)}: {exc} is missing") from None
        flat = [v for v in values if not isinstance(v, list)] + [x for v in values if isinstance(v, list) for x in v]
        if any(not isinstance(x, int) or isinstance(x, bool) or not 0 <= x < 1 << 63 for x in flat):
            raise ValueError("every argument is an integer in 0..2^63")
        if any(len(p[k]) > 6 for k in ("global_dims", "box_dims", "element_strides")) or len(p["global_strides"]) > 5:
            raise ValueError("at most 6 dims")
        if not all(0 <= p[k] < 16 for k in ("data_type", "interleave", "swizzle", "l2_promotion", "oob_fill")):
            raise ValueError("enum values 0..15")

    def family(self, case: Case) -> str:
        p = case.params
        return p.get("broken") or f"valid:{SWIZZLES[p['swizzle']] if 0 <= p['swizzle'] < len(SWIZZLES) else p['swizzle']}"

    def attribute(self, outcome: str, signature: str) -> Attribution | None:
        if outcome == "diverge":
            return Attribution("specification", self.layer, "the driver's answer differs from its own documented requirements "
                               "(the text, or the driver, is wrong; nothing runs on the GPU)")
        return None

    def expected(self, case: Case) -> Any:
        problems = encoding_problems(encoding_of(case.params), compute_capability())
        return {"accepted": not problems, "problems": [what for _, what in problems], "rules": sorted({r for r, _ in problems})}

    def observed(self, case: Case) -> Any:
        """The driver's own answer (``encode_raw``): cuda.bindings refuses every rank-1 encoding the driver accepts
        (docs/findings.md), so it is not the layer asked."""
        error = encode_raw(case.params)
        return {"accepted": not error, "error": error}

    def compare(self, case: Case, expected: Any, observed: Any) -> Comparison:
        if expected["accepted"] == observed["accepted"]:
            return Comparison(True)
        if observed["accepted"]:
            rules = ", ".join(expected["rules"])
            return Comparison(False, 1, tuple(expected["problems"]), f"accepted what the documentation refuses: {rules}",
                              f"the driver accepted an encoding that breaks: {'; '.join(expected['problems'])}")
        return Comparison(False, 1, (observed["error"],), f"refused what the documentation allows: {observed['error']}",
                          f"the driver refused ({observed['error']}) an encoding that breaks no documented requirement")

    def shrink(self, case: Case) -> Iterator[dict[str, Any]]:
        """Outer dims dropped, box and dims halved, strides and fill and promotion to their simplest."""
        p = case.params
        rank = len(p["global_dims"])
        for i in range(rank - 1, 0, -1):
            yield replaced(p, global_dims=p["global_dims"][:i], box_dims=p["box_dims"][:i], element_strides=p["element_strides"][:i],
                           global_strides=p["global_strides"][:i - 1])
        for key in ("l2_promotion", "oob_fill", "global_address"):
            if p[key]:
                yield replaced(p, **{key: 0})
        for i, t in enumerate(p["element_strides"]):
            if t > 1:
                yield replaced(p, element_strides=p["element_strides"][:i] + [1] + p["element_strides"][i + 1:])
        for i, d in enumerate(p["global_dims"]):
            if d > 1:
                yield replaced(p, global_dims=p["global_dims"][:i] + [d // 2] + p["global_dims"][i + 1:])

    def parameter_space(self) -> Space:
        api = "CUDA driver API: cuTensorMapEncodeTiled"

        def dim_bin(d: int) -> str:
            return "0" if d == 0 else "past 2^32" if d > 1 << 32 else bin_of(d, ("1-256", "257-65535", "65536-4294967296"))

        return Space((
            Parameter("data type", DATA_TYPE_NAMES + PACKED, f"{api}: CUtensorMapDataType",
                      lambda p: DATA_TYPE_NAMES[p["data_type"]] if p["data_type"] < len(DATA_TYPE_NAMES) else None,
                      dict.fromkeys(PACKED, "packed 4- and 6-bit types: their byte size, which the 16-byte inner-row rule needs, is not stated")),
            Parameter("rank", (1, 2, 3, 4, 5), f"{api}: tensorRank 1-5", lambda p: len(p["global_dims"]) if len(p["global_dims"]) <= 5 else None),
            Parameter("interleave", INTERLEAVES, f"{api}: CUtensorMapInterleave", lambda p: _enum(INTERLEAVES, p["interleave"])),
            Parameter("swizzle", SWIZZLES, f"{api}: CUtensorMapSwizzle", lambda p: _enum(SWIZZLES, p["swizzle"])),
            Parameter("L2 promotion", L2_PROMOTIONS, f"{api}: CUtensorMapL2promotion", lambda p: _enum(L2_PROMOTIONS, p["l2_promotion"])),
            Parameter("out-of-bound fill", OOB_FILLS, f"{api}: CUtensorMapFloatOOBfill", lambda p: _enum(OOB_FILLS, p["oob_fill"])),
            Parameter("largest global dim", DIM_BINS, f"{api}: globalDim 1..2^32", lambda p: dim_bin(max(p["global_dims"]))),
            Parameter("element stride", tuple(range(1, 9)), f"{api}: elementStrides 1..8",
                      lambda p: max(p["element_strides"]) if 1 <= max(p["element_strides"]) <= 8 else None),
            Parameter("rule broken on purpose", ("",) + BREAKS, f"{api}: its requirements, one at a time", lambda p: p["broken"]),
        ), _cannot_meet)
