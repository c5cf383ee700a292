"""Two targets that share workers the way the Triton GPU targets do: one whose ``warm_up_worker`` thread imports a
slow module (as a JIT target's thread imports torch), one whose cases read that module from ``sys.modules`` (as the
prebuilt launcher reads torch). They pass only where each worker imported both targets' ``imports`` on its main
thread, sorted, before any thread started and before its first case."""

from __future__ import annotations

import importlib
import sys
import threading

from tests.faulty_target import ValueTarget

PROBES = ("tests.import_probe_quick", "tests.import_probe_slow")  # sorted: the order a worker imports them in


def _import_slow_probe() -> None:
    importlib.import_module("tests.import_probe_slow")


class ThreadImporter(ValueTarget):
    """Imports the slow probe on a thread of its own as a worker starts (``warm_up_worker``)."""

    name = "test.thread_importer"
    imports = ("tests.import_probe_slow",)

    def warm_up_worker(self) -> None:
        threading.Thread(target=_import_slow_probe, name="slow import", daemon=True).start()

    def observed(self, case):
        return case.params["value"]


class ModulesPeeker(ValueTarget):
    """Answers, for each probe module, whether ``sys.modules`` holds it whole, half (its import under way) or not at
    all and whether it was imported on the main thread, and the probes in the order they were imported."""

    name = "test.modules_peeker"
    imports = ("tests.import_probe_quick",)

    def expected(self, case):
        return {"value": case.params["value"], "state": ["whole", "whole"], "on main thread": [True, True],
                "import order": list(PROBES)}

    def observed(self, case):
        modules = [sys.modules.get(name) for name in PROBES]
        state = ["absent" if m is None else "whole" if hasattr(m, "READY") else "half" for m in modules]
        on_main = [m is not None and getattr(m, "ON_MAIN_THREAD", False) for m in modules]
        found = [(m.IMPORTED_NS, name) for name, m in zip(PROBES, modules) if hasattr(m, "IMPORTED_NS")]
        return {"value": case.params["value"], "state": state, "on main thread": on_main,
                "import order": [name for _, name in sorted(found)]}
