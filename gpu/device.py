"""The CUDA side of the drivers: NVRTC compilation of gpu/kernels (no GPU needed) and a kernel
runner on the current device whose faults end the process's usefulness (``DeviceFault``)."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

KERNELS = Path(__file__).parent / "kernels"
ARCH = "sm_90a"  # wgmma needs the 'a' target; TMA runs on plain sm_90 too
THREADS = 128


@cache
def compile_kernel(filename: str, arch: str = ARCH):
    """The cubin (cuda.core ObjectCode) of ``gpu/kernels/FILENAME`` for ``arch``."""
    return compile_source((KERNELS / filename).read_text(), filename, arch)


@cache
def compile_source(source: str, name: str, arch: str = ARCH):
    """The cubin (cuda.core ObjectCode) of CUDA C++ ``source`` for ``arch``, compiled once per machine
    (``cached_cubin``)."""
    from cuda.core import ObjectCode

    return ObjectCode.from_cubin(cached_cubin(source, name, arch), name=name)


def cached_cubin(source: str, name: str, arch: str = ARCH) -> bytes:
    """The cubin of CUDA C++ ``source`` for ``arch``, compiled once per machine by NVRTC (no GPU context): filed under
    the cache folder by the hash of source, arch and NVRTC version, and concurrent workers wait for the one compiling
    (NVRTC takes the wgmma probe's every-N instructions most of a minute, and a second of every campaign worker for the
    TMA kernels). Where the cache folder cannot be written, each process compiles its own."""
    import fcntl
    import hashlib

    from cuda.core import Program, ProgramOptions

    from layoutfuzz.harness.triton_compat import cache_root
    from layoutfuzz.reports.files import write_atomically

    def build() -> bytes:
        program = Program(source, code_type="c++", options=ProgramOptions(arch=arch, std="c++17", name=name))
        return bytes(program.compile("cubin").code)

    key = hashlib.sha256(f"{arch}\0{_nvrtc_version()}\0{source}".encode()).hexdigest()[:20]
    folder = cache_root() / "cubins"
    path = folder / f"{Path(name).stem}-{key}.cubin"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        lock = open(folder / f"{path.name}.lock", "w")  # noqa: SIM115  (closed below)
    except OSError:
        return build()
    with lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one process compiles, the others then read its cubin
        if not path.exists():
            write_atomically(path, build())
    return path.read_bytes()


def _nvrtc_version() -> str:
    from cuda.bindings import nvrtc

    _, major, minor = nvrtc.nvrtcVersion()
    return f"{major}.{minor}"


@cache
def compute_capability() -> tuple[int, int]:
    """The current device's compute capability (what the tensor-map validity oracle knows of the device)."""
    from cuda.core import Device

    major, minor = Device().compute_capability
    return int(major), int(minor)


@cache
def libcuda():
    """The CUDA driver library through ctypes (for the calls the bindings make dearer or refuse)."""
    import ctypes

    return ctypes.CDLL("libcuda.so.1")


class DeviceFault(RuntimeError):
    """The kernel faulted: the CUDA context is unusable and the process must end."""


SHARED_DEFAULT = 48 * 1024  # dynamic shared memory a kernel gets without asking
SHARED_MAX_SM90 = 227 * 1024  # the most one block can ask for on sm_90


def allow_dynamic_shared(function: Any, nbytes: int) -> None:
    """Lets ``function`` (a cuda.core Kernel) launch with ``nbytes`` of dynamic shared memory, past the 48 KiB default."""
    if nbytes <= SHARED_DEFAULT:
        return
    from cuda.bindings import driver

    attribute = driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
    handle = function._handle
    if isinstance(handle, driver.CUkernel):  # cuda.core loads code as a library: its kernels are CUkernels, per device
        err, device = driver.cuCtxGetDevice()
        if err == driver.CUresult.CUDA_SUCCESS:
            (err,) = driver.cuKernelSetAttribute(attribute, nbytes, handle, device)
    else:
        (err,) = driver.cuFuncSetAttribute(handle, attribute, nbytes)
    if err != driver.CUresult.CUDA_SUCCESS:
        raise RuntimeError(f"setting the kernel's dynamic shared memory to {nbytes} bytes: {err.name}")


class KernelRunner:
    """One compiled kernel of gpu/kernels on the current device, with torch for buffers."""

    def __init__(self, filename: str, name: str, source: str | None = None) -> None:
        import torch
        from cuda.core import Device

        self.torch = torch
        self.device = Device()
        self.device.set_current()
        self.stream = self.device.create_stream()
        code = compile_kernel(filename) if source is None else compile_source(source, filename)
        self.kernel = code.get_kernel(name)

    def launch(self, grid: int, shmem: int, *args, kernel=None, cluster: int | None = None) -> None:
        """One launch of ``grid`` blocks (clusters of ``cluster`` blocks, if given) of THREADS threads of ``kernel`` (the
        runner's own by default), waited for; tensors are passed by address."""
        from cuda.core import LaunchConfig, launch

        args = tuple(np.uint64(a.data_ptr()) if isinstance(a, self.torch.Tensor) else a for a in args)
        self.torch.cuda.synchronize()  # buffers filled through torch's stream
        try:
            config = LaunchConfig(grid=grid, block=THREADS, shmem_size=shmem, cluster=cluster)
            launch(self.stream, config, kernel or self.kernel, *args)
            self.stream.sync()
        except Exception as exc:
            raise DeviceFault(f"{type(exc).__name__}: {exc}") from exc

    def host(self, out) -> np.ndarray:
        """``out`` (a device tensor) copied to page-locked host memory, as a NumPy array: one DMA, no staging copy
        (torch's caching host allocator reuses a block once no view of it is left)."""
        host = self.torch.empty(out.shape, dtype=out.dtype, pin_memory=True)
        host.copy_(out)
        return host.numpy()
