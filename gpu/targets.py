"""GPU targets: the hardware as the system under test for the PTX oracles."""

from __future__ import annotations

import contextlib
import importlib.util
import os
import sys
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any, ClassVar

import numpy as np

from layoutfuzz.generators.case import Case
from layoutfuzz.generators.shrink import replaced
from layoutfuzz.generators.source import Source
from layoutfuzz.generators.space import Space
from layoutfuzz.generators.tma import MAX_DST_OFFSET, device_box
from layoutfuzz.harness.compare import Comparison
from layoutfuzz.harness.target import Attribution, Availability, Target
from layoutfuzz.oracles.tensor_map import TiledEncoding
from layoutfuzz.oracles.tma import SwizzleMode, TiledBox

WINDOW = 24 * 1024  # shared-memory bytes dumped per case: the largest offset plus the largest box


def cuda_device_count() -> int | None:
    """CUDA devices visible to this process; None without cuda.bindings."""
    try:
        from cuda.bindings import runtime
    except Exception:
        return None
    try:
        err, count = runtime.cudaGetDeviceCount()
    except RuntimeError:  # cuda-bindings 13 raises where no driver is installed ("Failed to dlopen libcuda.so.1")
        return 0
    return count if err == runtime.cudaError_t.cudaSuccess else 0


def cuda_device_availability(min_major: int = 9, needs: tuple[str, ...] = ("torch", "cuda.core")) -> Availability:
    """A CUDA device of compute capability >= ``min_major``, and the Python packages ``needs``."""
    count = cuda_device_count()
    if count is None:
        return Availability(False, "no CUDA device (cuda.bindings is not installed)")
    if count == 0:
        return Availability(False, "no CUDA device")
    from cuda.bindings import runtime

    err, major = runtime.cudaDeviceGetAttribute(runtime.cudaDeviceAttr.cudaDevAttrComputeCapabilityMajor, 0)
    if major < min_major:
        return Availability(False, f"needs compute capability {min_major}.0 or newer, device 0 has {major}.x")
    for name in needs:  # found, not imported: torch takes seconds to import, and only the workers use it
        try:
            found = importlib.util.find_spec(name) is not None
        except Exception as exc:  # a parent package that fails to import
            return Availability(False, f"needs {name}: {exc}")
        if not found:
            return Availability(False, f"needs {name}: not installed")
    return Availability(True)


def quietly(call: Callable[[], Any]) -> None:
    """``call()`` on a worker's start-up thread: a failure is met again, and reported, by the first case that needs
    what it made (a traceback from the thread would land in the middle of that case's log, and its crash signature)."""
    with contextlib.suppress(Exception):
        call()


def retain_primary_context(ordinal: int = 0) -> None:
    """Device ``ordinal``'s primary context made and held for this process's life (the driver's calls give up the GIL)."""
    from cuda.bindings import driver

    (err,) = driver.cuInit(0)
    if err == driver.CUresult.CUDA_SUCCESS:
        err, device = driver.cuDeviceGet(ordinal)
    if err == driver.CUresult.CUDA_SUCCESS:
        driver.cuDevicePrimaryCtxRetain(device)


class GpuTarget(Target):
    """Base of the targets that run on an sm_90 device. Package versions are in every report
    already (``reports.report.environment_versions``); this adds the device's name."""

    needs: ClassVar[tuple[str, ...]] = ("torch", "cuda.core")
    preload = ("numpy", "torch", "cuda.core", "cuda.bindings.driver")  # imported once by the fork server (no CUDA call)

    def availability(self) -> Availability:
        return cuda_device_availability(9, self.needs)

    def warm_up_worker(self) -> None:
        """The worker's CUDA context (device 0's primary context, which torch and cuda.core then share), made on a
        thread while the first batch is generated (and compiled): 0.3 s alone, up to 1.6 s with 16 workers at once."""
        threading.Thread(target=quietly, args=(retain_primary_context,), name="CUDA context", daemon=True).start()

    def versions(self) -> Mapping[str, str]:
        try:
            from cuda.core import Device

            return {"device": Device().name}
        except Exception:
            return {}

    @staticmethod
    def on_device(run: Callable[[], Any]) -> Any:
        """``run()``; a device fault poisons the CUDA context, so it ends this worker (the harness
        records a crash and starts a fresh one)."""
        from layoutfuzz.gpu.device import DeviceFault

        try:
            return run()
        except DeviceFault as exc:
            sys.stderr.write(f"device fault: {exc}\n")
            sys.stderr.flush()
            os._exit(70)


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


def box_from_params(p: Mapping[str, Any]) -> TiledBox:
    return TiledBox(tuple(p["box_dims"]), p["element_bytes"], tuple(p["element_strides"]), SwizzleMode[p["swizzle"]], p["dst"],
                    p.get("interleave", 0))


@cache
def _tma_runner():
    from layoutfuzz.gpu.tma import TmaRunner

    return TmaRunner()


def hardware_attribution(target: Target, outcome: str) -> Attribution | None:
    """A raw driver's divergence or crash is the hardware's (behaviour the PTX text does not state):
    nothing but the oracle stands above it, and nothing below it can be replayed."""
    if outcome in ("diverge", "crash"):
        return Attribution("hardware", target.layer, "a raw PTX kernel through cuda.core disagrees with the PTX text's oracle")
    return None


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
        from layoutfuzz.gpu.spaces import tma_space

        return tma_space()

    def expected(self, case: Case) -> Any:
        from layoutfuzz.gpu.tma import box_encoding

        box = box_from_params(case.params)
        return _ExpectedWindow(box, refusal(box_encoding(box))).__json__()

    def observed(self, case: Case) -> Any:
        (result,) = self.on_device(lambda: _tma_runner().run([box_from_params(case.params)], WINDOW))
        return {"refused": result} if isinstance(result, str) else {"window": result.tobytes().hex()}

    def compare(self, case: Case, expected: Any, observed: Any) -> Comparison:
        """The windows byte for byte; a tensor map the validity oracle (``oracles.tensor_map``) refuses must be refused."""
        from layoutfuzz.gpu.tma import FILL

        if "refused" in expected or "refused" in observed:
            return compare_refusals(expected.get("refused"), observed.get("refused"))
        return compare_windows(bytes.fromhex(expected["window"]), bytes.fromhex(observed["window"]), FILL)

    # ---- many cases at once: one launch, the oracle and the comparison over arrays (issue 16) ----------------

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
        from layoutfuzz.gpu.tma import box_encoding

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
        from layoutfuzz.gpu.tma import FILL, source_words
        from layoutfuzz.oracles.tma_windows import placements, window_mismatches

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
        from layoutfuzz.gpu.tma import expected_window

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

    windows: Any  # gpu.tma.DeviceWindows
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


@cache
def _wgmma_runner():
    from layoutfuzz.gpu.wgmma import WgmmaRunner

    return WgmmaRunner()


class WgmmaDescriptor(GpuTarget):
    name = "wgmma.descriptor"
    layer = "the tensor cores (raw wgmma.mma_async, no compiler in between)"
    description = "wgmma.mma_async (sm_90a) reading an operand through a matrix descriptor vs the canonical-layout oracle"
    requires = ("cuda device sm_90a", "cuda.core", "cuda.bindings", "torch")
    max_batch = 4096  # operands per launch
    batch_seconds = 0.5  # as tma.swizzle's: 0.5 s of work a batch gave 1.28x 0.1 s (H100)
    plain_params = True

    def attribute(self, outcome: str, signature: str) -> Attribution | None:
        return hardware_attribution(self, outcome)

    def generate(self, source: Source) -> dict[str, Any]:
        from layoutfuzz.generators.wgmma import device_case

        return device_case(source)

    def validate(self, case: Case) -> None:
        from layoutfuzz.generators.wgmma import WIDE_WINDOW
        from layoutfuzz.gpu.wgmma import WINDOW, probe_descriptor, probe_layout
        from layoutfuzz.gpu.wgmma_shapes import SHAPES
        from layoutfuzz.oracles.wgmma import WGMMA_N
        from layoutfuzz.oracles.wgmma_addresses import highest_address

        p = case.params
        if p.get("dtype", "f16") not in SHAPES or p.get("n") not in WGMMA_N[p.get("dtype", "f16")]:
            raise ValueError(f"dtype {p.get('dtype')!r} with N {p.get('n')!r} is not a wgmma shape the probe runs")
        layout = probe_layout(p)
        probe_descriptor(p)
        window, offset = p.get("window", WINDOW), p.get("window_offset", 0)
        if not isinstance(window, int) or window % 1024 or not WINDOW <= window <= WIDE_WINDOW:
            raise ValueError(f"window is a multiple of 1024 from {WINDOW} to {WIDE_WINDOW}")
        if highest_address(layout) + 16 > window:
            raise ValueError(f"the operand reaches past the {window}-byte window")
        if not isinstance(offset, int) or offset % 1024 or not 0 <= offset <= WIDE_WINDOW - window:
            raise ValueError(f"window_offset is a multiple of 1024 from 0 to {WIDE_WINDOW - window}")
        rows, cols = layout.shape
        if p["operand"] == "A" and not cols <= p["n"] <= 64:  # D = A x I shows A's K columns; the identity has 64 rows
            raise ValueError(f"A is seen through D = A x I: N {p['n']} must be from K ({cols}) to 64")
        if rows != (64 if p["operand"] == "A" else p["n"]):
            raise ValueError(f"the operand's MN extent {rows} is not {'64 (A)' if p['operand'] == 'A' else 'N (B)'}")

    def family(self, case: Case) -> str:
        p = case.params
        return f"{p.get('operand', '?')}/{p.get('major', '?')}/{p.get('swizzle', '?')}"

    def parameter_space(self) -> Space:
        from layoutfuzz.gpu.spaces import wgmma_space

        return wgmma_space()

    def expected(self, case: Case) -> Any:
        from layoutfuzz.gpu.wgmma import probe_layout

        return probe_layout(case.params).addresses()

    def observed(self, case: Case) -> Any:
        return self.on_device(lambda: _wgmma_runner().run([case.params])[0])

    def compare(self, case: Case, expected: Any, observed: Any) -> Comparison:
        verdict = super().compare(case, expected, observed)
        if verdict.ok or np.shape(expected) != np.shape(observed):
            return verdict
        return Comparison(False, verdict.mismatch_count, verdict.mismatches, address_bits_signature(expected, observed), verdict.note)

    # ---- many cases at once: the address oracle over arrays, a launch per digit for all cases (issue 16) -------

    def expected_batch(self, cases: Sequence[Case]) -> list[Any]:
        """``canonical_addresses`` of every operand at once; a case whose layout is refused gets its error."""
        from layoutfuzz.gpu.wgmma import probe_layout
        from layoutfuzz.oracles.wgmma_addresses import canonical_addresses

        layouts: list[Any] = []
        for case in cases:
            try:
                layouts.append(probe_layout(case.params))
            except Exception as exc:
                layouts.append(exc)
        good = [i for i, layout in enumerate(layouts) if not isinstance(layout, Exception)]
        tables = canonical_addresses([layouts[i] for i in good])
        for i, table in zip(good, tables):
            layouts[i] = _Addresses(table)
        return layouts

    def observed_batch(self, cases: Sequence[Case]) -> list[Any]:
        """One launch per digit for all cases of an element type (``WgmmaRunner.run_arrays``)."""
        tables = self.on_device(lambda: _wgmma_runner().run_arrays([c.params for c in cases]))
        return [_Addresses(t) for t in tables]

    def compare_batch(self, cases: Sequence[Case], expected: Sequence[Any], observed: Sequence[Any]) -> list[Comparison]:
        """Whole tables compared as arrays; only a case that differs is compared again, element by element."""
        return [Comparison(True) if np.array_equal(e.table, o.table) else self.compare(c, e.__json__(), o.__json__())
                for c, e, o in zip(cases, expected, observed)]


@dataclass(frozen=True, eq=False)
class _Addresses:
    """An [mn][k] table of byte addresses; as nested lists (what the per-case methods give) only where a report needs it."""

    table: np.ndarray

    def __json__(self) -> list[list[int]]:
        return self.table.tolist()


def address_bits_signature(expected: Any, observed: Any) -> str:
    """What a wrong read got wrong, in the descriptor's terms (the XOR of expected and observed
    addresses): the order of elements inside a 16-byte chunk (bits 0-3), the row or stride (LBO, SBO,
    start: bits 7 and up), else only the 16-byte chunk within its row (bits 4-6: the swizzle)."""
    xor = int(np.bitwise_or.reduce((np.asarray(expected, dtype=np.int64) ^ np.asarray(observed, dtype=np.int64)).ravel()))
    if xor & 0xF:
        return "wrong element within a 16-byte chunk"
    if xor >> 7:
        return "wrong row or stride (LBO, SBO, start)"
    return "wrong 16-byte chunk (swizzle)"
