"""The base of the GPU targets (``GpuTarget``: the hardware as the system under test for the PTX oracles), whether a
CUDA device is here, and a worker's CUDA context; whom a raw driver's divergence is blamed on."""

from __future__ import annotations

import contextlib
import importlib.util
import os
import sys
import threading
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

from layoutfuzz.harness.target import Attribution, Availability, Target


def cuda_device_count() -> int | None:
    """CUDA devices visible to this process; None without cuda.bindings."""
    try:
        from cuda.bindings import runtime
    except Exception:
        return None
    try:
        err, count = runtime.cudaGetDeviceCount()
    except RuntimeError:  # cuda-bindings 13 raises where no driver is installed ("Failed to dlopen libcuda.so.1")
        return 0
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
    for name in needs:  # found, not imported: torch takes seconds to import, and only the workers use it
        try:
            found = importlib.util.find_spec(name) is not None
        except Exception as exc:  # a parent package that fails to import
            return Availability(False, f"needs {name}: {exc}")
        if not found:
            return Availability(False, f"needs {name}: not installed")
    return Availability(True)


def quietly(call: Callable[[], Any]) -> None:
    """``call()`` on a worker's start-up thread: a failure is met again, and reported, by the first case that needs
    what it made (a traceback from the thread would land in the middle of that case's log, and its crash signature)."""
    with contextlib.suppress(Exception):
        call()


def retain_primary_context(ordinal: int = 0) -> None:
    """Device ``ordinal``'s primary context made and held for this process's life (the driver's calls give up the GIL)."""
    from cuda.bindings import driver

    (err,) = driver.cuInit(0)
    if err == driver.CUresult.CUDA_SUCCESS:
        err, device = driver.cuDeviceGet(ordinal)
    if err == driver.CUresult.CUDA_SUCCESS:
        driver.cuDevicePrimaryCtxRetain(device)


class GpuTarget(Target):
    """Base of the targets that run on an sm_90 device. Package versions are in every report
    already (``reports.report.environment_versions``); this adds the device's name."""

    needs: ClassVar[tuple[str, ...]] = ("torch", "cuda.core")
    preload = ("numpy", "torch", "cuda.core", "cuda.bindings.driver")  # imported once by the fork server (no CUDA call)
    imports = ("cuda.bindings.driver",)  # what warm_up_worker's thread imports; a worker imports it first

    def availability(self) -> Availability:
        return cuda_device_availability(9, self.needs)

    def warm_up_worker(self) -> None:
        """The worker's CUDA context (device 0's primary context, which torch and cuda.core then share), made on a
        thread while the first batch is generated (and compiled): 0.3 s alone, up to 1.6 s with 16 workers at once."""
        threading.Thread(target=quietly, args=(retain_primary_context,), name="CUDA context", daemon=True).start()

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
        from layoutfuzz.gpu.device import DeviceFault

        try:
            return run()
        except DeviceFault as exc:
            sys.stderr.write(f"device fault: {exc}\n")
            sys.stderr.flush()
            os._exit(70)


def hardware_attribution(target: Target, outcome: str) -> Attribution | None:
    """A raw driver's divergence or crash is the hardware's (behaviour the PTX text does not state):
    nothing but the oracle stands above it, and nothing below it can be replayed."""
    if outcome in ("diverge", "crash"):
        return Attribution("hardware", target.layer, "a raw PTX kernel through cuda.core disagrees with the PTX text's oracle")
    return None


