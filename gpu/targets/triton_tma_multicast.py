"""``triton.tma_multicast``: Gluon's multicast TMA loads over a cluster of 2 or 4 CTAs (Triton 3.7.1 on), checked one
layer down on a CPU: the kernel is compiled for sm_90a and its PTX evaluated (``gpu.ptx_eval``) for every thread of
every CTA, giving each ``cp.async.bulk.tensor ... .multicast::cluster`` issued: its coordinates, its destination and
its ``ctaMask``.

It draws ``triton.tma_cluster``'s cases (one case model): an NVMMA layout whose CGA layout splits the block by rows
or columns or holds copies (a zero CTA base), loaded into buffer ``slot`` of ``buffers``. The oracle is the CGA
layout's definition and PTX 9.7.9.25.5.2's multicast rule (the box lands at the same CTA-relative offset in every
CTA of the mask): every CTA must receive each box of its own part of the block exactly once, each box at its offset
in the part (``oracles.tma.block_boxes``). Where several CTAs hold the same part, one load may serve them all. The
offsets are read relative to the lowest destination of the kernel's loads: where Triton put the buffer is its
allocator's choice, which the PTX does not state.

Triton 3.6.0's Gluon load has no multicast, and the Triton releases after it do not run on the device machine (no
wheel there), so this is the check of their multicast lowering that a CPU can make: what is sent where, not the
barrier's accounting nor the bytes.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any

from layoutfuzz.generators.case import Case
from layoutfuzz.gpu.targets.triton_tma_cluster import TritonTmaCluster, cga_bases, cta_part
from layoutfuzz.harness.compare import Comparison
from layoutfuzz.harness.target import Availability
from layoutfuzz.oracles.tma import block_boxes

CTA_OFFSET_BITS = 24  # a shared::cluster address holds the CTA-relative offset below bit 24 (the CTA's rank above)


def deliveries_expected(p: Mapping[str, Any]) -> dict[int, list[list[int]]]:
    """For each CTA of the cluster, the boxes it must receive: [inner coordinate, outer coordinate, offset in its
    part], from its part of the block (the CGA layout's bases times a CTA tile) and ``block_boxes``."""
    e = p["elem_bits"] // 8
    rows, columns = cta_part(p)
    bases = cga_bases(p["splits"])
    out = {}
    for cta in range(1 << len(bases)):
        tile = [sum((cta >> k & 1) * base[d] for k, base in enumerate(bases)) for d in range(2)]
        row, column = p["coord"][0] + tile[0] * rows, p["coord"][1] + tile[1] * columns
        out[cta] = sorted([column + first, row, box.dst] for first, box in block_boxes([rows, columns], e, p["swizzle"]))
    return out


def multicast_missing() -> str | None:
    """Why this process's Triton cannot compile a Gluon multicast TMA load (no Gluon, or 3.6.0's load without
    ``multicast``), or None."""
    try:
        import triton

        from layoutfuzz.harness.triton_compat.gluon_ops import tma_load
    except Exception as exc:
        return f"needs Triton with Gluon: {exc}"
    if "multicast" not in inspect.signature(tma_load).parameters:
        return f"Gluon's TMA load has no multicast in Triton {triton.__version__} (3.7.1 on)"
    return None


class TritonTmaMulticast(TritonTmaCluster):
    name = "triton.tma_multicast"
    layer = "Triton's TMA lowering of multicast loads over a cluster (ctaMask, coordinates, destination)"
    description = ("Gluon multicast TMA loads over clusters of 2 and 4 CTAs, compiled on the CPU: every CTA's boxes "
                   "in the PTX (coordinates, destination, ctaMask) against its part of the CGA layout")
    requires = ("triton 3.7.1 or later (Gluon's multicast TMA load)",)
    needs = ("triton",)
    prebuilt = False  # it runs nothing: the PTX is its answer
    probe_name = "tma_multicast_probe"
    case_model = "triton.tma_cluster"  # the same cases as triton.tma_cluster, side by side

    def availability(self) -> Availability:
        missing = multicast_missing()
        return Availability(False, missing) if missing else Availability(True)

    def expected(self, case: Case) -> dict[str, Any]:
        return {"deliveries": {str(cta): boxes for cta, boxes in deliveries_expected(case.params).items()}}

    def observed(self, case: Case) -> dict[str, Any]:
        from layoutfuzz.gpu.kernel_cache import scratch_triton_cache
        from layoutfuzz.gpu.ptx_eval import Kernel
        from layoutfuzz.gpu.targets.gluon_kernel import compile_for_sm90, single_threaded_mlir
        from layoutfuzz.harness.capture import stderr_text
        from layoutfuzz.reports.signatures import compile_error

        p = case.params
        single_threaded_mlir()
        spec = self.kernel_spec(case)
        ctas = spec.num_ctas
        diagnostics: list[str] = []
        try:
            with scratch_triton_cache(), stderr_text() as diagnostics:
                compiled = compile_for_sm90(spec.kernel, spec.signature, spec.constexprs, spec.num_warps, ctas)
        except Exception as exc:
            return {"rejected": compile_error(exc, "".join(diagnostics))}
        loads = Kernel(compiled.asm["ptx"]).tensor_loads(32 * p["num_warps"], ctas)
        base = min((load.dst & ((1 << CTA_OFFSET_BITS) - 1) for load in loads), default=0)
        received: dict[str, list[list[int]]] = {str(cta): [] for cta in range(ctas)}
        issued = []
        for load in loads:
            offset = (load.dst & ((1 << CTA_OFFSET_BITS) - 1)) - base
            mask = (1 << load.rank) if load.mask is None else load.mask  # no multicast: its own CTA only
            issued.append([load.rank, load.tid, *load.coords, offset, mask])
            for cta in range(ctas):
                if mask >> cta & 1:
                    received[str(cta)].append([*load.coords, offset])
        return {"deliveries": {cta: sorted(boxes) for cta, boxes in received.items()}, "issued": issued}

    def compare_results(self, case: Case, expected: Any, observed: Any) -> Comparison:
        """Each CTA's boxes: one missing or received twice, or at the wrong coordinates or offset."""
        wrong = []
        for cta, want in expected["deliveries"].items():
            got = observed["deliveries"].get(cta, [])
            if got != want:
                wrong.append(f"CTA {cta}: expected boxes {want}, got {got}")
        if not wrong:
            return Comparison(True)
        counts = {cta: len(boxes) for cta, boxes in observed["deliveries"].items()}
        want_counts = {cta: len(boxes) for cta, boxes in expected["deliveries"].items()}
        if counts != want_counts:
            kind = "some CTAs receive a box twice or never"
        else:
            kind = "boxes at the wrong coordinates or offset"
        return Comparison(False, len(wrong), tuple(wrong[:8]), f"multicast: {kind}",
                          f"{len(wrong)} of {len(expected['deliveries'])} CTAs receive other boxes than their part")
