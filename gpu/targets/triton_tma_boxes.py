"""Target ``triton.tma_boxes``: the tma_boxes case model through Gluon's TMA load (``triton.tma``'s probe)."""

from __future__ import annotations

from typing import Any

from layoutfuzz.generators.case import Case
from layoutfuzz.gpu.targets.tma_boxes import TmaBoxModel
from layoutfuzz.gpu.targets.triton_tma import TritonTma
from layoutfuzz.harness.compare import Comparison
from layoutfuzz.harness.target import Unsupported


class TritonTmaBoxes(TmaBoxModel, TritonTma):
    name = "triton.tma_boxes"
    description = "the tma_boxes case model through Gluon's TMA load (triton.tma's probe): tensor maps and the block read back"
    system = "Triton"

    def triton_case(self, case: Case) -> Case:
        """The case as ``triton.tma`` draws its own: the window as a block at (row_offset, 0) of a tensor two rows
        longer, no row padding, 4 warps; ``Unsupported`` where Triton's API cannot take the box."""
        p = case.params
        e = p["element_bytes"]
        mapped = {"elem_bits": 8 * e, "swizzle": p["swizzle"], "block": [p["rows"], p["columns"]],
                  "global_shape": [p["row_offset"] + p["rows"] + 2, p["columns"]], "coord": [p["row_offset"], 0],
                  "row_pad": 0, "num_warps": 4}
        if p["rows"] & (p["rows"] - 1):
            raise Unsupported("Triton's TMA blocks have power-of-two dims")
        own = Case(TritonTma.name, case.seed, case.index, mapped)
        try:
            TritonTma.validate(self, own)
        except ValueError as exc:
            raise Unsupported(f"Triton's TMA takes no such block: {exc}") from None
        return own

    def kernel_case(self, case: Case) -> Case:
        """The case whose kernel this target runs and ``layoutfuzz kernels`` files: ``triton_case``."""
        return self.triton_case(case)

    def expected(self, case: Case) -> Any:
        return TritonTma.expected(self, self.triton_case(case))

    def observed(self, case: Case) -> Any:
        return TritonTma.observed(self, self.triton_case(case))

    def compare_results(self, case: Case, expected: Any, observed: Any) -> Comparison:
        return TritonTma.compare_results(self, self.triton_case(case), expected, observed)
