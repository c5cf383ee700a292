"""``tma.copy``: TMA tiled loads and stores over a global tensor from any start coordinates, against ``oracles.tma_copy``.

Where ``tma.swizzle`` checks where a box lands in shared memory (from coordinate 0 of a tensor the box's size), this
target checks the global side: bounds cut by the box in every dimension, the zero fill of loads, which bytes a store
writes past the innermost bound, outer rows out of bounds, start coordinates before (loads) and past the bounds, padded
strides. Every tensor has guard zones around it, and a store's shared-memory window and a load's tensor must come
through unchanged, so a byte written anywhere it should not be is a wrong result.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np

from layoutfuzz.generators.case import Case
from layoutfuzz.generators.shrink import replaced
from layoutfuzz.generators.source import Source
from layoutfuzz.generators.space import Parameter, Space
from layoutfuzz.generators.tma_copy import MAX_TENSOR_BYTES, strides, tensor_copy
from layoutfuzz.gpu.targets.base import GpuTarget, hardware_attribution
from layoutfuzz.gpu.targets.tma_swizzle import WINDOW, Refused, TmaSwizzle, compare_refusals, refusal, validate_box
from layoutfuzz.harness.compare import Comparison
from layoutfuzz.harness.target import Attribution
from layoutfuzz.oracles.linear_layout import LayoutError
from layoutfuzz.oracles.tma import INTERLEAVE_BYTES, box_from_params
from layoutfuzz.oracles.tma import SwizzleMode as TmaMode
from layoutfuzz.oracles.tma_copy import GRANULE, TensorCopy, moves, multicast_windows, stored_tensor


def copy_from_params(p: Mapping[str, Any]) -> TensorCopy:
    return TensorCopy(box_from_params(p), tuple(p["global_dims"]), tuple(p["global_strides"]), tuple(p["coords"]), p["direction"],
                      p.get("cluster", 1), p.get("multicast", 1), p.get("issuer", 0), p.get("data_type"), p.get("oob_fill", 0))


@cache
def _runner():
    from layoutfuzz.gpu.tma_driver import TensorCopyRunner

    return TensorCopyRunner()


@dataclass(frozen=True, eq=False)
class CopyResult:
    """A copy's shared-memory windows (every CTA's of its cluster, rank 0 first) and its region of global memory (guard,
    tensor, guard) after the kernel."""

    window: np.ndarray
    region: np.ndarray

    def __json__(self) -> dict[str, str]:
        return {"window": self.window.tobytes().hex(), "region": self.region.tobytes().hex()}


def expected_result(copy: TensorCopy) -> CopyResult:
    """The oracle's windows and region: a load's windows from the tensor (its region unchanged), a store's tensor from
    the window (its window unchanged)."""
    from layoutfuzz.gpu.tma_driver import GUARD, initial_region, shared_pattern
    from layoutfuzz.oracles.tma_windows import FILL

    region = initial_region(copy).copy()
    if copy.direction == "load":
        tensor = region[GUARD:GUARD + copy.global_bytes]
        return CopyResult(multicast_windows(copy, tensor, WINDOW, FILL), region)
    pattern = shared_pattern(WINDOW)
    end = len(region) - GUARD
    region[GUARD:end] = stored_tensor(copy, pattern, region[GUARD:end])
    return CopyResult(pattern, region)


def byte_roles(copy: TensorCopy, region_size: int) -> tuple[np.ndarray, np.ndarray]:
    """What each byte is to the oracle, for naming a difference: in a window 0 untouched, 1 an element inside the
    tensor, 2 one outside it, 3 any byte of a CTA outside the multicast mask; in the region 0 a guard zone, 1 tensor bytes nothing writes, 2 an element written inside
    the bounds, 3 one written past the innermost bound (the granule rule)."""
    from layoutfuzz.gpu.tma_driver import GUARD

    m = moves(copy)
    e = m.size
    window = np.zeros(WINDOW, dtype=np.int8)
    spread = np.arange(e)
    window[(m.shared[:, None] + spread).ravel()] = np.repeat(np.where(m.inside, 1, 2), e)
    window = np.concatenate([window if copy.multicast >> r & 1 else np.full(WINDOW, 3, np.int8) for r in range(copy.cluster)])
    region = np.zeros(region_size, dtype=np.int8)
    region[GUARD:GUARD + copy.global_bytes] = 1
    if copy.direction == "store":
        region[(GUARD + m.global_offset[m.stored][:, None] + spread).ravel()] = np.repeat(np.where(m.inside[m.stored], 2, 3), e)
    return window, region


WINDOW_KINDS = {0: "wrote outside the box in shared memory", 1: "wrong data in the box", 2: "out-of-bound fill differs",
                3: "multicast reached a CTA outside its mask"}
REGION_KINDS = {0: "wrote past the tensor (guard zone)", 1: "wrote where nothing belongs", 2: "in-bound element wrong",
                3: "granule past the innermost bound differs"}


def compare_copy(copy: TensorCopy, expected: CopyResult, observed: CopyResult) -> Comparison:
    """Window and region byte for byte; the signature names, in TMA's terms, which roles of bytes differ."""
    bad_window = np.flatnonzero(expected.window != observed.window)
    bad_region = np.flatnonzero(expected.region != observed.region)
    if not bad_window.size and not bad_region.size:
        return Comparison(True)
    window_roles, region_roles = byte_roles(copy, expected.region.size)
    kinds = {WINDOW_KINDS[int(r)] for r in np.unique(window_roles[bad_window])}
    if copy.direction == "load" and bad_region.size:
        kinds.add("a load wrote global memory")
    else:
        kinds |= {REGION_KINDS[int(r)] for r in np.unique(region_roles[bad_region])}
    lines = tuple(
        [f"window byte {b:#07x}: expected {expected.window[b]:#04x} got {observed.window[b]:#04x}" for b in bad_window[:4]]
        + [f"region byte {b:#07x}: expected {expected.region[b]:#04x} got {observed.region[b]:#04x}" for b in bad_region[:4]])
    return Comparison(False, int(bad_window.size + bad_region.size), lines, f"{copy.direction}: {', '.join(sorted(kinds))}",
                      f"{bad_window.size} window bytes and {bad_region.size} global bytes differ ({', '.join(sorted(kinds))})")


class TmaCopy(GpuTarget):
    name = "tma.copy"
    layer = "the TMA unit (raw cp.async.bulk.tensor both directions, no compiler in between)"
    description = "TMA tiled loads and stores over a global tensor at any start coordinates vs the PTX 5.5.3 bounds rules"
    requires = ("cuda device sm_90", "cuda.core", "cuda.bindings", "torch")
    max_batch = 1024  # copies per launch (a tensor of up to 256 KiB each)
    batch_seconds = 0.5

    def attribute(self, outcome: str, signature: str) -> Attribution | None:
        return hardware_attribution(self, outcome)

    def generate(self, source: Source) -> dict[str, Any]:
        return tensor_copy(source)

    def validate(self, case: Case) -> None:
        """The box as ``tma.swizzle`` checks it, a tensor of up to 256 KiB whose dims and coordinates fit the box's rank,
        dim 0 starting on a 16-byte granule, and no store before a bound (it traps the device)."""
        p = case.params
        if p.get("interleave", 0) not in (0, 1, 2):
            raise ValueError("interleave is 0 (none), 1 (16B) or 2 (32B)")
        if not p.get("interleave"):
            validate_box(p, lowest_rank=1)
        try:
            copy = copy_from_params(p)
        except (KeyError, TypeError, ValueError, LayoutError) as exc:
            raise ValueError(f"not a TMA copy: {exc}") from None
        if copy.box.interleave and (copy.box.dst % 128 or copy.box.dst + copy.box.footprint_bytes > WINDOW):
            raise ValueError(f"an interleaved box at a 128-byte multiple within the {WINDOW}-byte window")
        if copy.global_bytes > MAX_TENSOR_BYTES or any(d > 1 << 20 for d in copy.global_dims):
            raise ValueError(f"the tensor takes {copy.global_bytes} bytes, more than {MAX_TENSOR_BYTES}")
        if any(pad < 0 for pad in _paddings(copy)):
            raise ValueError("each global stride holds the dimension below it (a row rounded up to 16 bytes)")
        if copy.direction == "store" and min(copy.coords) < 0:
            raise ValueError("a store at a negative coordinate traps the device (docs/findings.md): not run")
        if copy.cluster not in (1, 2, 4):
            raise ValueError("a cluster of 1, 2 or 4 CTAs")
        if any(abs(c) > 1 << 16 for c in copy.coords):
            raise ValueError("coordinates within +-65536")

    def shrink(self, case: Case) -> Iterator[dict[str, Any]]:
        """No cluster, the box's simplifications (``tma.swizzle``'s) with the tensor kept around it, coordinates towards
        0, dims towards the box, padding dropped (an interleaved copy's dim 0 in slices)."""
        p = case.params
        e = copy_from_params(p).box.unit_bytes  # dim 0's unit: an element, or an interleaved slice
        rank = len(p["box_dims"])
        if p.get("cluster", 1) > 1:  # one CTA, or the issuer alone in the mask
            yield replaced(p, cluster=1, multicast=1, issuer=0)
            if p["multicast"] != 1 << p["issuer"]:
                yield replaced(p, multicast=1 << p["issuer"])
        for i in range(rank - 1, 0, -1):  # an outer dim dropped, with its tensor dim and coordinate
            dropped = {key: p[key][:i] + p[key][i + 1:] for key in ("box_dims", "element_strides", "global_dims", "coords", "places")}
            yield replaced(p, **dropped, global_strides=strides(dropped["global_dims"], e, [0] * (rank - 2)))
        for c in TmaSwizzle().shrink(case):  # the box's other simplifications, the tensor kept
            if len(c["box_dims"]) == rank:
                yield c
        for i, c in enumerate(p["coords"]):
            if c:
                step = max(1, 16 // e) if i == 0 else 1
                yield replaced(p, coords=p["coords"][:i] + [c // 2 // step * step] + p["coords"][i + 1:])
        plain = strides(p["global_dims"], e, [0] * (len(p["global_dims"]) - 1))
        if plain != p["global_strides"]:
            yield replaced(p, global_strides=plain)
        for i, d in enumerate(p["global_dims"]):
            if d > 1:
                dims = p["global_dims"][:i] + [d - 1] + p["global_dims"][i + 1:]
                yield replaced(p, global_dims=dims, global_strides=strides(dims, e, _paddings(copy_from_params(p))))

    def family(self, case: Case) -> str:
        p = case.params
        cluster = f":cluster {p['cluster']}" if p.get("cluster", 1) > 1 else ""
        interleave = f":interleave {16 * p['interleave']}B" if p.get("interleave") else ""
        return f"{p.get('direction', '?')}:{p.get('swizzle', '?')}:{(p.get('places') or ['?'])[0]}{cluster}{interleave}"

    def parameter_space(self) -> Space:
        return tma_copy_space()

    def expected(self, case: Case) -> Any:
        copy = copy_from_params(case.params)
        refused = _refusal(copy)
        return {"refused": refused} if refused else expected_result(copy).__json__()

    def observed(self, case: Case) -> Any:
        from layoutfuzz.gpu.tma_driver import INCOMPLETE

        (result,) = self.on_device(lambda: _runner().run([copy_from_params(case.params)], WINDOW))
        if result == INCOMPLETE:
            return {"incomplete": result}
        return {"refused": result} if isinstance(result, str) else CopyResult(*result).__json__()

    def compare(self, case: Case, expected: Any, observed: Any) -> Comparison:
        if "incomplete" in observed:
            return compare_incomplete(copy_from_params(case.params))
        if "refused" in expected or "refused" in observed:
            return compare_refusals(expected.get("refused"), observed.get("refused"))

        def result(d: Mapping[str, str]) -> CopyResult:
            return CopyResult(np.frombuffer(bytes.fromhex(d["window"]), np.uint8), np.frombuffer(bytes.fromhex(d["region"]), np.uint8))

        return compare_copy(copy_from_params(case.params), result(expected), result(observed))

    # ---- a batch a launch: the oracle's arrays made and compared in the worker, hex only for reports ------------

    def expected_batch(self, cases: Sequence[Case]) -> list[Any]:
        return [_Expected(copy, _refusal(copy)) for copy in (copy_from_params(c.params) for c in cases)]

    def observed_batch(self, cases: Sequence[Case]) -> list[Any]:
        from layoutfuzz.gpu.tma_driver import INCOMPLETE

        results = self.on_device(lambda: _runner().run([copy_from_params(c.params) for c in cases], WINDOW))
        return [Incomplete() if r == INCOMPLETE else Refused(r) if isinstance(r, str) else CopyResult(*r) for r in results]

    def compare_batch(self, cases: Sequence[Case], expected: Sequence[Any], observed: Sequence[Any]) -> list[Comparison]:
        verdicts = []
        for e, o in zip(expected, observed):
            if isinstance(o, Incomplete):
                verdicts.append(compare_incomplete(e.copy))
            elif e.refused or isinstance(o, Refused):
                verdicts.append(compare_refusals(e.refused, o.refused if isinstance(o, Refused) else None))
            else:
                verdicts.append(compare_copy(e.copy, e.result, o))
        return verdicts


@dataclass(frozen=True)
class Incomplete:
    """A load whose bytes never completed its mbarrier's transaction count (the oracle's count of the box's bytes)."""

    def __json__(self) -> dict[str, str]:
        from layoutfuzz.gpu.tma_driver import INCOMPLETE

        return {"incomplete": INCOMPLETE}


def compare_incomplete(copy: TensorCopy) -> Comparison:
    """A load that never completed: the TMA unit delivered another number of bytes than the oracle's box holds."""
    why = f"no completion of {copy.box.size_bytes} transaction bytes"
    return Comparison(False, 1, (why,), "load: transaction count never reached",
                      f"the load's mbarrier expected {copy.box.size_bytes} bytes (the oracle's box) and never completed")


def _paddings(copy: TensorCopy) -> list[int]:
    """The padding of each outer dimension's stride (what ``generators.tma_copy.strides`` adds)."""
    e = copy.box.unit_bytes
    out, pitch = [], -(-copy.global_dims[0] * e // GRANULE) * GRANULE
    for d, s in zip(copy.global_dims[1:], copy.global_strides):
        out.append(s - pitch)
        pitch = s * d
    return out


def _refusal(copy: TensorCopy) -> str:
    from layoutfuzz.gpu.tma_driver import copy_encoding

    return refusal(copy_encoding(copy))


@dataclass(frozen=True, eq=False)
class _Expected:
    copy: TensorCopy
    refused: str = ""

    @property
    def result(self) -> CopyResult:
        return expected_result(self.copy)

    def __json__(self) -> dict[str, str]:
        return {"refused": self.refused} if self.refused else self.result.__json__()


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
