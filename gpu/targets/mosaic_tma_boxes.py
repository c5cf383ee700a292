"""Target ``mosaic.tma_boxes``: the tma_boxes case model through Mosaic GPU's async_copy."""

from __future__ import annotations

from typing import Any

from layoutfuzz.generators.case import Case
from layoutfuzz.gpu.targets.mosaic_gpu import MosaicGpu
from layoutfuzz.gpu.targets.tma_boxes import TmaBoxModel
from layoutfuzz.harness.compare import Comparison


class MosaicTmaBoxes(TmaBoxModel, MosaicGpu):
    name = "mosaic.tma_boxes"
    description = "the tma_boxes case model through Mosaic GPU's async_copy: the shared-memory bytes vs PTX 5.5.7"
    system = "Mosaic GPU"

    @staticmethod
    def mosaic_case(case: Case) -> Case:
        return Case(MosaicGpu.name, case.seed, case.index, {"family": "tma", **case.params})

    def expected(self, case: Case) -> Any:
        return MosaicGpu.expected(self, self.mosaic_case(case))

    def observed(self, case: Case) -> Any:
        return MosaicGpu.observed(self, self.mosaic_case(case))

    def compare(self, case: Case, expected: Any, observed: Any) -> Comparison:
        return MosaicGpu.compare(self, self.mosaic_case(case), expected, observed)
