"""A test-only target with root causes switched by environment variables, for the triage tests.

Always: every case with ``value % 4 == 0`` diverges (root cause A, "register bit dropped"), unless
``PLANTED_FIX_A`` is set. With ``PLANTED_NEW``: every case with ``value % 3 == 0`` aborts (root cause
B). Each case is tiny and runs in milliseconds, so a nightly of a few seconds sees hundreds.
"""

from __future__ import annotations

import os
import sys

from layoutfuzz.harness.compare import Comparison
from layoutfuzz.harness.target import Target


class PlantedTarget(Target):
    name = "test.planted"
    description = "test-only: root causes planted and fixed through environment variables"

    def generate(self, source):
        return {"value": source.integer(0, 1 << 16), "width": 1 << source.integer(0, 6)}

    def validate(self, case):
        if not isinstance(case.params.get("value"), int) or case.params.get("width") not in [1 << i for i in range(7)]:
            raise ValueError("value must be an int and width a power of two up to 64")

    def family(self, case):
        return f"w{case.params['width']}"

    def expected(self, case):
        return case.params["value"]

    def observed(self, case):
        value = case.params["value"]
        if os.environ.get("PLANTED_NEW") and value % 3 == 0:
            print("planted: the new fault", file=sys.stderr, flush=True)
            os.abort()
        if value % 4 == 0 and not os.environ.get("PLANTED_FIX_A"):
            return value ^ 4
        return value

    def compare(self, case, expected, observed):
        if expected == observed:
            return Comparison(True)
        return Comparison(False, 1, (f"expected {expected}, observed {observed}",), "register bit 2 dropped")


from layoutfuzz.harness.targets.triton_bank_conflicts import TritonBankConflicts  # noqa: E402


class PlantedBankConflicts(TritonBankConflicts):
    """``triton.bank_conflicts`` itself, until ``PLANTED_NEW`` plants a fault in its oracle: one more
    conflict (and a larger Lemma 9.4 c) for 64-bit elements, a root cause no night has seen."""

    def expected(self, case):
        out = super().expected(case)
        if os.environ.get("PLANTED_NEW") and case.params["elem_bits"] == 64:
            out = {**out, "bank_conflicts": out["bank_conflicts"] + 1, "lemma_c": out["lemma_c"] + 1}
        return out


from layoutfuzz.gpu.targets.triton_shared_memory import TritonSharedMemory  # noqa: E402


class PlantedSharedMemory(TritonSharedMemory):
    """``triton.shared_memory`` itself on the GPU, until ``PLANTED_NEW`` plants a fault in what the kernel gives
    back: for 16-bit elements, the elements at shared offsets 0 and 1 trade places (a root cause no night has
    seen)."""

    def run(self, case):
        out = super().run(case)
        if os.environ.get("PLANTED_NEW") and case.params["elem_bits"] == 16:
            placement = list(out["placement"])
            placement[0], placement[1] = placement[1], placement[0]
            out = {**out, "placement": placement}
        return out
