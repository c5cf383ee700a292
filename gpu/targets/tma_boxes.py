"""Targets of one case model, ``tma_boxes``: a 2-D TMA load of a window into swizzled shared memory
(``generators.mosaic_gpu.tma_box``), through the raw driver (``tma.boxes``), Triton's Gluon TMA
(``triton.tma_boxes``) and JAX Mosaic GPU (``mosaic.tma_boxes``), each against the PTX 5.5.7 oracle
(``oracles.tma``). A campaign of them shows the three systems side by side on the same boxes.

Each system is asked the way its own target asks it, and answers at its own level:

- the raw driver (``gpu/kernels/tma_copy.cu``): the shared-memory window byte for byte, the box loaded from
  coordinate 0 of a tensor of its own hashed bytes;
- Triton: the tensor map it encodes, and the block as its kernel reads it back through the NVMMA layout
  (``triton.tma``'s probe, with its raw-driver replay of the same box);
- Mosaic: the shared-memory bytes after its ``async_copy``, stored out unswizzled (``mosaic.gpu``'s ``tma`` kernel).

A box that a system's API cannot express (Triton takes power-of-two block dims) is ``unsupported`` there, and
the side-by-side table leaves it out.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from layoutfuzz.generators.case import Case
from layoutfuzz.generators.mosaic_gpu import ELEMENT_BYTES, MAX_BOX_BYTES, ROWS, SWIZZLES, tma_box
from layoutfuzz.generators.shrink import replaced
from layoutfuzz.generators.source import Source
from layoutfuzz.generators.space import Parameter, Space
from layoutfuzz.gpu.targets.base import GpuTarget, hardware_attribution
from layoutfuzz.gpu.targets.tma_swizzle import WINDOW, _tma_runner, compare_windows
from layoutfuzz.harness.compare import Comparison
from layoutfuzz.harness.target import Attribution, Target
from layoutfuzz.oracles.tma import NVMMA_MODES, TiledBox

CASE_MODEL = "tma_boxes"
ROW_OFFSETS = (0, 1, 3, 7)


class TmaBoxModel(Target):
    """The case model the three systems share: its generator, its rules, its families and its space."""

    case_model = CASE_MODEL

    def generate(self, source: Source) -> dict[str, Any]:
        return {**tma_box(source), "data_seed": source.integer(0, (1 << 31) - 1)}

    def validate(self, case: Case) -> None:
        p = case.params
        if p.get("element_bytes") not in ELEMENT_BYTES or p.get("swizzle") not in SWIZZLES:
            raise ValueError(f"element bytes {ELEMENT_BYTES}, swizzle {SWIZZLES}")
        if p.get("rows") not in ROWS or p.get("row_offset") not in ROW_OFFSETS:
            raise ValueError(f"rows one of {ROWS} (one kernel a shape), a row offset of {ROW_OFFSETS}")
        inner = p.get("columns", 0) * p["element_bytes"]
        span = p["swizzle"] or 128
        if not isinstance(p.get("columns"), int) or inner % 16 or not 16 <= inner <= span:
            raise ValueError("a row of whole 16-byte units, up to the swizzle span (128 bytes without a swizzle)")
        if p["rows"] * inner > MAX_BOX_BYTES:
            raise ValueError(f"a box of at most {MAX_BOX_BYTES} bytes (the probes' shared-memory window)")

    def family(self, case: Case) -> str:
        p = case.params
        return f"{p['swizzle'] or 'no'} swizzle, {p['element_bytes']}-byte"

    def shrink(self, case: Case) -> Iterator[dict[str, Any]]:
        """The window at row 0, fewer rows, a narrower unswizzled row."""
        p = case.params
        if p["row_offset"]:
            yield replaced(p, row_offset=0)
        for rows in ROWS:
            if rows < p["rows"]:
                yield replaced(p, rows=rows)
        if not p["swizzle"] and p["columns"] * p["element_bytes"] > 16:
            yield replaced(p, columns=p["columns"] // 2)

    def parameter_space(self) -> Space:
        return Space((
            Parameter("swizzle", SWIZZLES, "PTX 5.5.7 swizzle modes (bytes, 0 none)", lambda p: p["swizzle"]),
            Parameter("element bytes", ELEMENT_BYTES, "element sizes the three systems share", lambda p: p["element_bytes"]),
            Parameter("rows", ROWS, "box rows (the driver's 1-256: its edges, primes, powers of two)", lambda p: p["rows"]),
            Parameter("row bytes", tuple(range(16, 129, 16)), "whole 16-byte units up to the swizzle span",
                      lambda p: p["columns"] * p["element_bytes"]),
            Parameter("row offset", ROW_OFFSETS, "the window's first row in the larger array", lambda p: p["row_offset"]),
        ))

    def box(self, p: Mapping[str, Any]) -> TiledBox:
        """The box in ``cuTensorMapEncodeTiled``'s terms (innermost first), at the start of shared memory."""
        return TiledBox((p["columns"], p["rows"]), p["element_bytes"], (1, 1), NVMMA_MODES[p["swizzle"]], 0)

    def picture(self, report: dict[str, Any]) -> Any:
        """None: its reports get the shared pictures (the box picture is ``triton.tma``'s)."""
        return None


class RawTmaBoxes(TmaBoxModel, GpuTarget):
    name = "tma.boxes"
    layer = "the TMA unit (raw cp.async.bulk.tensor, no compiler in between)"
    description = "the tma_boxes case model through the raw TMA driver: the shared-memory window vs PTX 5.5.7"
    requires = ("cuda device sm_90", "cuda.core", "cuda.bindings", "torch")
    system = "raw driver"

    def expected(self, case: Case) -> dict[str, str]:
        from layoutfuzz.oracles.tma_windows import expected_window

        return {"window": expected_window(self.box(case.params), WINDOW).tobytes().hex()}

    def observed(self, case: Case) -> dict[str, str]:
        (window,) = self.on_device(lambda: _tma_runner().run([self.box(case.params)], WINDOW))
        return {"refused": window} if isinstance(window, str) else {"window": window.tobytes().hex()}

    def compare(self, case: Case, expected: dict[str, str], observed: dict[str, str]) -> Comparison:
        from layoutfuzz.oracles.tma_windows import FILL

        if "refused" in observed:
            return Comparison(False, 1, (observed["refused"],), "tensor map refused", "the driver refused a box PTX allows")
        return compare_windows(bytes.fromhex(expected["window"]), bytes.fromhex(observed["window"]), FILL)

    def attribute(self, outcome: str, signature: str) -> Attribution | None:
        return hardware_attribution(self, outcome)
