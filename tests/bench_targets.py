"""Targets whose first case builds something slowly, as the GPU targets' NVRTC builds do on a fresh machine: for the
benchmarks' tests (a benchmark survives a start that outlasts its budget, and times the builds apart)."""

from __future__ import annotations

import time

from layoutfuzz.harness.triton_compat import cache_root
from tests.faulty_target import ValueTarget

BUILD_S = 6.0  # longer than a 2 s budget and the 2 s its cases in flight get past it


class BuiltOncePerMachine(ValueTarget):
    """Its first case on a machine builds for ``BUILD_S`` seconds, kept in the machine's cache (as NVRTC's cubins
    are, in ``$LAYOUTFUZZ_CACHE/cubins``); every later case is instant."""

    name = "test.built_once_per_machine"

    def observed(self, case):
        built = cache_root() / "cubins" / "test-build.cubin"
        if not built.exists():
            time.sleep(BUILD_S)
            built.parent.mkdir(parents=True, exist_ok=True)
            built.write_text("built\n")
        return case.params["value"]


class BuiltEveryStart(ValueTarget):
    """Its first case in every process builds for ``BUILD_S`` seconds, kept nowhere."""

    name = "test.built_every_start"
    built = False

    def observed(self, case):
        if not BuiltEveryStart.built:
            time.sleep(BUILD_S)
            BuiltEveryStart.built = True
        return case.params["value"]
