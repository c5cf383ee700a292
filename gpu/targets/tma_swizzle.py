"""The ``tma.swizzle`` target: TMA tiled copies into shared memory on the GPU against the 5.5.7 swizzle oracle;
the window comparison the other TMA targets share."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np

from layoutfuzz.generators.case import Case
from layoutfuzz.generators.shrink import replaced
from layoutfuzz.generators.source import Source
from layoutfuzz.generators.space import BOX_DIM_BINS, INNER_BINS, Parameter, Space, bin_of
from layoutfuzz.generators.tma import MAX_DST_OFFSET, device_box
from layoutfuzz.gpu.targets.base import GpuTarget, hardware_attribution
from layoutfuzz.harness.compare import Comparison
from layoutfuzz.harness.target import Attribution
from layoutfuzz.oracles.tensor_map import TiledEncoding
from layoutfuzz.oracles.tma import SwizzleMode as TmaMode
from layoutfuzz.oracles.tma import TiledBox, box_from_params

WINDOW = 24 * 1024  # shared-memory bytes dumped per case: the largest offset plus the largest box


def validate_box(p: Mapping[str, Any], lowest_rank: int = 2) -> TiledBox:
    """The generator's rules (``generators.tma.device_box``): rank ``lowest_rank``-5, a CUDA swizzle mode, 1-8-byte
    elements, an inner row of whole 16-byte units within the span, outer dims up to 256 with strides 1-8, a
    128-byte-multiple destination, the box within the window."""
    try:
        box = box_from_params(p)
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"not a TMA box: {exc}") from None
    e, inner = box.element_bytes, box.box_dims[0]
    span = box.swizzle.spec.span or 256 * e
    if box.swizzle.spec.cuda is None or e not in (1, 2, 4, 8) or not lowest_rank <= len(box.box_dims) <= 5:
        raise ValueError(f"a CUDA swizzle mode, 1-8-byte elements, rank {lowest_rank}-5")
    if inner * e % 16 or not 16 <= inner * e <= min(span, 256 * e) or box.element_strides[0] != 1:
        raise ValueError("the inner row is whole 16-byte units within the swizzle span, with element stride 1")
    if any(not 1 <= d <= 256 for d in box.box_dims[1:]) or any(not 1 <= t <= 8 for t in box.element_strides[1:]):
        raise ValueError("outer dims 1-256, element strides 1-8")
    if box.dst % 128 or not 0 <= box.dst < MAX_DST_OFFSET:
        raise ValueError(f"dst is a multiple of 128 below {MAX_DST_OFFSET}")
    if box.dst + box.footprint_bytes > WINDOW:
        raise ValueError(f"box of {box.footprint_bytes} bytes at {box.dst} does not fit the {WINDOW}-byte window")
    return box


@cache
def _tma_runner():
    from layoutfuzz.gpu.tma_driver import TmaRunner

    return TmaRunner()


class TmaSwizzle(GpuTarget):
    name = "tma.swizzle"
    layer = "the TMA unit (raw cp.async.bulk.tensor, no compiler in between)"
    description = "TMA tiled copies on the GPU (cp.async.bulk.tensor into shared memory) vs the 5.5.7 swizzle oracle"
    requires = ("cuda device sm_90", "cuda.core", "cuda.bindings", "torch")
    max_batch = 4096  # boxes per launch
    batch_seconds = 0.5  # a launch, a device comparison and a transaction a batch: 0.5 s of work gave 1.36x 0.1 s (H100)
    plain_params = True

    def attribute(self, outcome: str, signature: str) -> Attribution | None:
        return hardware_attribution(self, outcome)

    def generate(self, source: Source) -> dict[str, Any]:
        box = device_box(source)
        return {"box_dims": list(box.box_dims), "element_bytes": box.element_bytes,
                "element_strides": list(box.element_strides), "swizzle": box.swizzle.name, "dst": box.dst}

    def validate(self, case: Case) -> None:
        validate_box(case.params)

    def shrink(self, case: Case) -> Iterator[dict[str, Any]]:
        """An outer dim dropped or halved, element strides of 1, a narrower row, base offset 0 (dst 0)."""
        p = case.params
        dims, strides = list(p["box_dims"]), list(p["element_strides"])
        for i in range(len(dims) - 1, 0, -1):
            yield replaced(p, box_dims=dims[:i] + dims[i + 1:], element_strides=strides[:i] + strides[i + 1:])
        for i in range(1, len(dims)):
            if dims[i] > 1:
                yield replaced(p, box_dims=dims[:i] + [dims[i] // 2] + dims[i + 1:])
            if strides[i] > 1:
                yield replaced(p, element_strides=strides[:i] + [1] + strides[i + 1:])
        if dims[0] * p["element_bytes"] > 16:
            yield replaced(p, box_dims=[max(16 // p["element_bytes"], dims[0] // 2)] + dims[1:])
        if p["dst"]:
            yield replaced(p, dst=0)

    def family(self, case: Case) -> str:
        return f"{case.params.get('swizzle', '?')}:{case.params.get('element_bytes', '?')}B"

    def parameter_space(self) -> Space:
        return tma_space()

    def expected(self, case: Case) -> Any:
        from layoutfuzz.oracles.tma_windows import box_encoding

        box = box_from_params(case.params)
        return _ExpectedWindow(box, refusal(box_encoding(box))).__json__()

    def observed(self, case: Case) -> Any:
        (result,) = self.on_device(lambda: _tma_runner().run([box_from_params(case.params)], WINDOW))
        return {"refused": result} if isinstance(result, str) else {"window": result.tobytes().hex()}

    def compare(self, case: Case, expected: Any, observed: Any) -> Comparison:
        """The windows byte for byte; a tensor map the validity oracle (``oracles.tensor_map``) refuses must be refused."""
        from layoutfuzz.oracles.tma_windows import FILL

        if "refused" in expected or "refused" in observed:
            return compare_refusals(expected.get("refused"), observed.get("refused"))
        return compare_windows(bytes.fromhex(expected["window"]), bytes.fromhex(observed["window"]), FILL)

    # ---- many cases at once: one launch, the oracle and the comparison over arrays ---------------------------

    _made: tuple[list[Case], dict[int, TiledBox]] | None = None  # the last batch's cases and boxes (``boxes``)

    def boxes(self, cases: Sequence[Case]) -> list[TiledBox]:
        """Each case's box, made once a batch (the oracle's call and the launch's both need them): the boxes of the
        last call are kept with its cases, whose ids stay theirs while they are kept."""
        known = self._made[1] if self._made is not None else {}
        boxes = [known.get(id(c)) or box_from_params(c.params) for c in cases]
        self._made = (list(cases), {id(c): box for c, box in zip(cases, boxes)})
        return boxes

    def expected_batch(self, cases: Sequence[Case]) -> list[Any]:
        """The oracle's windows, computed over all boxes at once in ``compare_batch``; a report's from the box."""
        from layoutfuzz.oracles.tma_windows import box_encoding

        return [_ExpectedWindow(box, refusal(box_encoding(box))) for box in self.boxes(cases)]

    def observed_batch(self, cases: Sequence[Case]) -> list[Any]:
        """One launch for every box (``TmaRunner.run_on_device``), the windows left on the device; a refused
        tensor map is the driver's answer for that case (``compare_batch`` checks it against the validity oracle)."""
        boxes = self.boxes(cases)
        rows, windows = self.on_device(lambda: _tma_runner().run_on_device(boxes, WINDOW))
        return [Refused(r) if isinstance(r, str) else _DeviceWindow(windows, r) for r in rows]

    def compare_batch(self, cases: Sequence[Case], expected: Sequence[Any], observed: Sequence[Any]) -> list[Comparison]:
        """The oracle's placements over all boxes (``oracles.tma_windows``), checked against the windows where they
        are: on the device for one launch's windows, else on the host (``window_mismatches``); only a case that
        differs is compared again, cell by cell, on the host."""
        from layoutfuzz.oracles.tma_windows import FILL, placements, source_words, window_mismatches

        verdicts: list[Comparison | None] = [None] * len(cases)
        copied = []  # positions of windows to compare: both sides say the map was accepted
        for k, (e, o) in enumerate(zip(expected, observed)):
            if e.refused or isinstance(o, Refused):
                verdicts[k] = compare_refusals(e.refused, o.refused if isinstance(o, Refused) else None)
            else:
                copied.append(k)
        if copied:
            boxes = [expected[k].box for k in copied]
            placed = placements(boxes)
            shown = [observed[k] for k in copied]
            if len({id(o.windows) for o in shown if isinstance(o, _DeviceWindow)}) == 1 and all(isinstance(o, _DeviceWindow) for o in shown):
                rows = np.array([o.row for o in shown])
                wrong = self.on_device(lambda: shown[0].windows.mismatches(rows, placed, FILL))
            else:
                wrong = window_mismatches(placed, source_words(boxes), np.stack([o.window for o in shown]), FILL)
            for k, bad in zip(copied, wrong):
                verdicts[k] = self.compare(cases[k], expected[k].__json__(), observed[k].__json__()) if bad else Comparison(True)
        return verdicts  # type: ignore[return-value]


def refusal(encoding: TiledEncoding) -> str:
    """Why the driver must refuse the tensor map on this device ("" if it must accept it): ``oracles.tensor_map``."""
    from layoutfuzz.gpu.device import compute_capability
    from layoutfuzz.oracles.tensor_map import encoding_problems

    try:
        device = compute_capability()
    except Exception:  # no device here (the oracle on a CPU, in the self-test): the Hopper this target is for
        device = (9, 0)
    return "; ".join(what for _, what in encoding_problems(encoding, device))


def compare_refusals(expected: str | None, observed: str | None) -> Comparison:
    """A tensor map's refusal: the driver refuses exactly what the validity oracle refuses."""
    if bool(expected) == bool(observed):
        return Comparison(True)
    if observed:
        return Comparison(False, 1, (observed,), "tensor map refused", f"the driver refused ({observed}) a tensor map its documentation allows")
    return Comparison(False, 1, (expected or "",), "tensor map accepted", f"the driver accepted a tensor map its documentation refuses: {expected}")


@dataclass(frozen=True)
class _ExpectedWindow:
    """The oracle's window of a box (or why its tensor map must be refused), made only where a report needs it."""

    box: TiledBox
    refused: str = ""

    def __json__(self) -> dict[str, str]:
        from layoutfuzz.oracles.tma_windows import expected_window

        if self.refused:
            return {"refused": self.refused}
        return {"window": expected_window(self.box, WINDOW).tobytes().hex()}


@dataclass(frozen=True)
class Refused:
    """The driver's refusal of a tensor map (its error's name), as a batch's observed entry."""

    refused: str

    def __json__(self) -> dict[str, str]:
        return {"refused": self.refused}


@dataclass(frozen=True, eq=False)
class _DeviceWindow:
    """An observed window still on the device (row ``row`` of a launch's windows), copied to the host only
    where a report needs it."""

    windows: Any  # gpu.tma_driver.DeviceWindows
    row: int

    @property
    def window(self) -> np.ndarray:
        return self.windows.row(self.row)

    def __json__(self) -> dict[str, str]:
        return {"window": self.window.tobytes().hex()}


@dataclass(frozen=True, eq=False)
class _Window:
    """An observed window, as hex only where a report needs it."""

    window: np.ndarray

    def __json__(self) -> dict[str, str]:
        return {"window": self.window.tobytes().hex()}


def compare_windows(expected: bytes, observed: bytes, fill: int | None = None) -> Comparison:
    """Byte-wise comparison of two windows, reported by 16-byte cell. The signature says what went
    wrong in TMA's terms, never how often: with ``fill`` (the value of bytes nothing should write),
    "misplaced data" (some cell holds other data, or data went outside the box while the box was left
    unwritten), else "written outside the box" or "not written"."""
    want, got = np.frombuffer(expected, np.uint8), np.frombuffer(observed, np.uint8)
    bad = np.flatnonzero(want != got)
    if bad.size == 0:
        return Comparison(True)
    cells = sorted({int(b) // 16 for b in bad})
    lines = tuple(
        f"cell {c * 16:#07x}: expected {want[c * 16:c * 16 + 16].tobytes().hex()} got {got[c * 16:c * 16 + 16].tobytes().hex()}"
        for c in cells[:8]
    )
    kinds = {"cells differ"} if fill is None else {_cell_kind(want[c * 16:c * 16 + 16], got[c * 16:c * 16 + 16], fill) for c in cells}
    if "wrong data" in kinds or {"written outside the box", "not written"} <= kinds:
        kind = "misplaced data"  # data where other data (or nothing) belongs: one placement error
    else:
        kind = next(k for k in ("written outside the box", "not written", "cells differ") if k in kinds)
    return Comparison(False, int(bad.size), lines, kind, f"{bad.size} bytes differ in {len(cells)} 16-byte cells ({', '.join(sorted(kinds))})")


def _cell_kind(want: np.ndarray, got: np.ndarray, fill: int) -> str:
    """What happened to one 16-byte cell, in TMA's terms."""
    untouched = want == fill
    if np.all(got[untouched] == want[untouched]):  # only bytes that should have been written are wrong
        return "not written" if np.all(got[~untouched] == fill) else "wrong data"
    return "written outside the box" if np.all(untouched) else "wrong data"


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
