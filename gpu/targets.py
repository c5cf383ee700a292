"""GPU targets: the hardware as the system under test for the PTX oracles."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping
from functools import cache
from typing import Any, ClassVar

import numpy as np

from generators.case import Case
from generators.source import Source
from generators.tma import device_box
from harness.compare import Comparison
from harness.target import Attribution, Availability, Target, Unsupported
from oracles.tma import SwizzleMode, TiledBox

WINDOW = 24 * 1024  # shared-memory bytes dumped per case: the largest offset plus the largest box


def cuda_device_count() -> int | None:
    """CUDA devices visible to this process; None without cuda.bindings."""
    try:
        from cuda.bindings import runtime
    except Exception:
        return None
    err, count = runtime.cudaGetDeviceCount()
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
    for name in needs:
        try:
            __import__(name)
        except Exception as exc:
            return Availability(False, f"needs {name}: {exc}")
    return Availability(True)


class GpuTarget(Target):
    """Base of the targets that run on an sm_90 device. Package versions are in every report
    already (``reports.report.environment_versions``); this adds the device's name."""

    needs: ClassVar[tuple[str, ...]] = ("torch", "cuda.core")

    def availability(self) -> Availability:
        return cuda_device_availability(9, self.needs)

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
        from gpu.device import DeviceFault

        try:
            return run()
        except DeviceFault as exc:
            sys.stderr.write(f"device fault: {exc}\n")
            sys.stderr.flush()
            os._exit(70)


def box_from_params(p: Mapping[str, Any]) -> TiledBox:
    return TiledBox(tuple(p["box_dims"]), p["element_bytes"], tuple(p["element_strides"]), SwizzleMode[p["swizzle"]], p["dst"])


@cache
def _tma_runner():
    from gpu.tma import TmaRunner

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

    def attribute(self, outcome: str, signature: str) -> Attribution | None:
        return hardware_attribution(self, outcome)
    description = "TMA tiled copies on the GPU (cp.async.bulk.tensor into shared memory) vs the 5.5.7 swizzle oracle"
    requires = ("cuda device sm_90", "cuda.core", "cuda.bindings", "torch")

    def generate(self, source: Source) -> dict[str, Any]:
        box = device_box(source)
        return {"box_dims": list(box.box_dims), "element_bytes": box.element_bytes,
                "element_strides": list(box.element_strides), "swizzle": box.swizzle.name, "dst": box.dst}

    def validate(self, case: Case) -> None:
        box = box_from_params(case.params)
        if box.dst + box.footprint_bytes > WINDOW:
            raise ValueError(f"box of {box.footprint_bytes} bytes at {box.dst} does not fit the {WINDOW}-byte window")

    def family(self, case: Case) -> str:
        return f"{case.params.get('swizzle', '?')}:{case.params.get('element_bytes', '?')}B"

    def expected(self, case: Case) -> Any:
        from gpu.tma import expected_window

        return {"window": expected_window(box_from_params(case.params), WINDOW).tobytes().hex()}

    def observed(self, case: Case) -> Any:
        (result,) = self.on_device(lambda: _tma_runner().run([box_from_params(case.params)], WINDOW))
        if isinstance(result, str):
            raise Unsupported(f"the CUDA driver refused the tensor map: {result}")
        return {"window": result.tobytes().hex()}

    def compare(self, case: Case, expected: Any, observed: Any) -> Comparison:
        from gpu.tma import FILL

        return compare_windows(bytes.fromhex(expected["window"]), bytes.fromhex(observed["window"]), FILL)


def compare_windows(expected: bytes, observed: bytes, fill: int | None = None) -> Comparison:
    """Byte-wise comparison of two windows, reported by 16-byte cell. The signature says what went
    wrong in TMA's terms, never how often: with ``fill`` (the value of bytes nothing should write),
    cells are "written outside the box", "not written" or "wrong data"."""
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
    return Comparison(False, int(bad.size), lines, ", ".join(sorted(kinds)), f"{bad.size} bytes differ in {len(cells)} 16-byte cells")


def _cell_kind(want: np.ndarray, got: np.ndarray, fill: int) -> str:
    """What happened to one 16-byte cell, in TMA's terms."""
    untouched = want == fill
    if np.all(got[untouched] == want[untouched]):  # only bytes that should have been written are wrong
        return "not written" if np.all(got[~untouched] == fill) else "wrong data"
    return "written outside the box" if np.all(untouched) else "wrong data"


@cache
def _wgmma_runner():
    from gpu.wgmma import WgmmaRunner

    return WgmmaRunner()


class WgmmaDescriptor(GpuTarget):
    name = "wgmma.descriptor"
    layer = "the tensor cores (raw wgmma.mma_async, no compiler in between)"

    def attribute(self, outcome: str, signature: str) -> Attribution | None:
        return hardware_attribution(self, outcome)
    description = "wgmma.mma_async (sm_90a) reading an operand through a matrix descriptor vs the canonical-layout oracle"
    requires = ("cuda device sm_90a", "cuda.core", "cuda.bindings", "torch")

    def generate(self, source: Source) -> dict[str, Any]:
        from generators.wgmma import device_case

        return device_case(source)

    def validate(self, case: Case) -> None:
        from gpu.wgmma import WINDOW, probe_descriptor, probe_layout

        layout = probe_layout(case.params)
        probe_descriptor(case.params)
        if max(max(row) for row in layout.addresses()) + 16 > WINDOW:
            raise ValueError(f"the operand reaches past the {WINDOW}-byte window")

    def family(self, case: Case) -> str:
        p = case.params
        return f"{p.get('operand', '?')}/{p.get('major', '?')}/{p.get('swizzle', '?')}"

    def expected(self, case: Case) -> Any:
        from gpu.wgmma import probe_layout

        return probe_layout(case.params).addresses()

    def observed(self, case: Case) -> Any:
        return self.on_device(lambda: _wgmma_runner().run([case.params])[0])
