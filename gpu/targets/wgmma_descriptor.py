"""The ``wgmma.descriptor`` target: wgmma.mma_async reading an operand through a matrix descriptor against the
canonical-layout oracle."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np

from layoutfuzz.generators.case import Case
from layoutfuzz.generators.source import Source
from layoutfuzz.generators.space import FIELD_BINS, Parameter, Space, bin_of
from layoutfuzz.gpu.targets.base import GpuTarget, hardware_attribution
from layoutfuzz.gpu.wgmma_probe import probe_descriptor
from layoutfuzz.harness.compare import Comparison
from layoutfuzz.harness.target import Attribution
from layoutfuzz.oracles.wgmma import WGMMA_N, WGMMA_TYPES, Major, SwizzleMode, probe_base_offset

BUILD_PROBE = ("from layoutfuzz.gpu.device import cached_cubin; from layoutfuzz.gpu.wgmma_probe import probe_source; "
               "cached_cubin(probe_source(), 'wgmma_probe.cu')")
BUILD_LIMIT_S = 600  # NVRTC takes the probe's every-N instructions about 41 s on an H100's host


@cache
def _wgmma_runner():
    from layoutfuzz.gpu.wgmma_probe import WgmmaRunner

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

    def warm_up(self) -> None:
        """The probe's cubin, built once per machine before any worker starts (the fork server runs this): most of a
        minute on a fresh machine, which no case's time limit may cut short, or every worker's first case would start
        the build again and wait on it. Built in a process of its own: NVRTC through cuda.core initialises the CUDA
        driver, and a worker forked from a process that has cannot use the GPU (CUDA_ERROR_NOT_INITIALIZED)."""
        subprocess.run([sys.executable, "-c", BUILD_PROBE], capture_output=True, timeout=BUILD_LIMIT_S, check=False)

    def generate(self, source: Source) -> dict[str, Any]:
        from layoutfuzz.generators.wgmma import device_case

        return device_case(source)

    def validate(self, case: Case) -> None:
        from layoutfuzz.generators.wgmma import WIDE_WINDOW
        from layoutfuzz.gpu.wgmma_probe import WINDOW, probe_descriptor
        from layoutfuzz.gpu.wgmma_shapes import SHAPES
        from layoutfuzz.oracles.wgmma import WGMMA_N, probe_layout
        from layoutfuzz.oracles.wgmma_addresses import highest_address

        p = case.params
        if p.get("dtype", "f16") not in SHAPES or p.get("n") not in WGMMA_N[p.get("dtype", "f16")]:
            raise ValueError(f"dtype {p.get('dtype')!r} with N {p.get('n')!r} is not a wgmma shape the probe runs")
        if not isinstance(p.get("start"), int) or p["start"] < 0 or p["start"] % 16:
            raise ValueError("start is a byte offset into the window, a multiple of 16 from 0")
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
        return wgmma_space()

    def expected(self, case: Case) -> Any:
        from layoutfuzz.oracles.wgmma import probe_layout

        return probe_layout(case.params).addresses()

    def observed(self, case: Case) -> Any:
        return self.on_device(lambda: _wgmma_runner().run([case.params])[0])

    def compare(self, case: Case, expected: Any, observed: Any) -> Comparison:
        verdict = super().compare(case, expected, observed)
        if verdict.ok or np.shape(expected) != np.shape(observed):
            return verdict
        return Comparison(False, verdict.mismatch_count, verdict.mismatches, address_bits_signature(expected, observed), verdict.note)

    # ---- many cases at once: the address oracle over arrays, a launch per digit for all cases ------------------

    def expected_batch(self, cases: Sequence[Case]) -> list[Any]:
        """``canonical_addresses`` of every operand at once; a case whose layout is refused gets its error."""
        from layoutfuzz.oracles.wgmma import probe_layout
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
