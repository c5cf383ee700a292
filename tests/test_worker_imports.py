"""Workers that cannot race on imports: each imports what its targets declare (``preload`` and ``imports``), one
sorted union, on its main thread before any ``warm_up_worker`` thread starts and before its first case."""

from __future__ import annotations

import os

import pytest

from layoutfuzz.harness.runner import run_cases, share
from layoutfuzz.harness.target import Target
from layoutfuzz.harness.worker import worker_imports
from layoutfuzz.reports.outcome import Outcome
from tests.worker_import_targets import ModulesPeeker, ThreadImporter


class _Declares(Target):
    def __init__(self, preload: tuple[str, ...], imports: tuple[str, ...]) -> None:
        self.preload, self.imports = preload, imports  # type: ignore[misc]


def test_a_worker_s_imports_are_the_sorted_union_of_its_targets_whatever_their_order():
    jit = _Declares(("numpy", "torch", "cuda.core"), ("cuda.bindings.driver",))
    prebuilt = _Declares(("numpy", "cuda.core"), ("cuda.bindings.driver",))
    mosaic = _Declares(("numpy",), ("jax", "cuda.bindings.driver"))
    union = ("cuda.bindings.driver", "cuda.core", "jax", "numpy", "torch")
    assert worker_imports([jit, prebuilt, mosaic]) == union
    assert worker_imports([mosaic, prebuilt, jit]) == union
    assert worker_imports([prebuilt]) == ("cuda.bindings.driver", "cuda.core", "numpy")
    assert worker_imports([]) == ()


@pytest.mark.parametrize("first", ["peeker", "importer"])
def test_targets_sharing_workers_never_see_a_module_half_imported(first):
    # regression: a JIT target's worker thread imported torch while a prebuilt target's case read it from sys.modules
    # ("partially initialized module 'torch' has no attribute 'cuda'"): both targets' imports are made on the
    # worker's main thread, sorted, before the thread starts and before the first case
    targets = {"peeker": ("tests.worker_import_targets:ModulesPeeker", ModulesPeeker()),
               "importer": ("tests.worker_import_targets:ThreadImporter", ThreadImporter())}
    order = [targets[first], *(t for name, t in targets.items() if name != first)]
    results = []
    run_cases([share(spec, target, 0, range(6), batch=1) for spec, target in order], results.extend, jobs=1,
              timeout_s=30)
    names = ("test.modules_peeker", "test.thread_importer")
    counts = {name: sum(r.case.target == name for r in results) for name in names}
    assert counts == {"test.modules_peeker": 6, "test.thread_importer": 6}, counts
    failed = [(r.outcome.value, r.detail, r.mismatches) for r in results if r.outcome != Outcome.PASS]
    assert not failed, failed[:3]


_THREAD_IMPORTS = """
import sys, threading
from layoutfuzz.harness import registry
from layoutfuzz.harness.worker import import_ahead, worker_imports
target = registry.load(sys.argv[1])
import_ahead(worker_imports([target]))
before = set(sys.modules)
target.warm_up_worker()
for thread in threading.enumerate():
    if thread is not threading.main_thread():
        thread.join(120)
print(sorted(set(sys.modules) - before))
"""


def _gpu_targets_by_start_up() -> dict[tuple, str]:
    """One built-in GPU target per kind of worker start-up (its warm_up_worker, what it preloads and imports)."""
    from layoutfuzz.harness import registry

    groups: dict[tuple, str] = {}
    for name, spec in registry.BUILTIN.items():
        if spec.startswith("layoutfuzz.gpu."):
            target = registry.load(spec)
            start_up = type(target).warm_up_worker.__qualname__, getattr(target, "prebuilt", None)
            key = (*start_up, target.preload, target.imports)
            groups.setdefault(key, name)
    return groups


def test_a_gpu_target_s_start_up_thread_imports_nothing_its_worker_did_not_import_first():
    # the thread a GPU worker begins its CUDA context on (and torch's, for a JIT target) finds every module it needs
    # imported already, so it cannot be half-way through an import that a case reads; on a CPU the thread fails at
    # cuInit, after its imports, as on a GPU
    import subprocess
    import sys

    pytest.importorskip("cuda.bindings.driver", reason="the GPU targets' start-up needs cuda-bindings")
    names = sorted(_gpu_targets_by_start_up().values())
    assert {"mosaic.gpu", "triton.convert_layout", "triton.tma_multicast", "tma.encode"} <= set(names), names
    started = {name: subprocess.Popen([sys.executable, "-c", _THREAD_IMPORTS, name], stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True) for name in names}
    for name, process in started.items():
        out, err = process.communicate(timeout=300)
        assert process.returncode == 0, err[-2000:]
        assert out.strip() == "[]", f"{name}'s start-up thread imported {out.strip()}"


def test_the_fork_server_imports_what_every_worker_runs_then_the_targets_preload_sorted(monkeypatch):
    from layoutfuzz.harness import forkserver

    monkeypatch.setenv(forkserver.PRELOAD_ENV, "")
    monkeypatch.setenv(forkserver.WARM_ENV, "")
    monkeypatch.setenv(forkserver.MAIN_ENV, "")
    forkserver.context(["torch", "layoutfuzz.gpu.targets.triton_tma", "numpy", "cuda.core", "numpy"])
    assert os.environ[forkserver.PRELOAD_ENV].split(",") == [
        "layoutfuzz.harness.pool", "layoutfuzz.harness.worker", "cuda.core", "layoutfuzz.gpu.targets.triton_tma", "numpy",
        "torch"]


def test_the_device_test_still_mixes_torch_free_targets_with_torch_using_ones_every_release_runs():
    # tests/gpu/test_mixed_workers.py's choice of targets, checked on a CPU: it stays a test of the race it is for
    from layoutfuzz.harness import registry
    from tests.gpu.test_mixed_workers import TORCH_FREE, TORCH_USING

    assert all("torch" not in worker_imports([registry.load(name)]) for name in TORCH_FREE)
    assert all("torch" in worker_imports([registry.load(name)]) for name in TORCH_USING)
    assert all(name.split(".")[0] in ("tma", "wgmma") for name in TORCH_USING)  # raw kernels: any Triton release
