"""NumPy arrays on the device between guard zones (``gpu.guards``), without torch: what the kernels launched through
cuda.core (``gpu.prebuilt``) take. Importing torch costs a campaign's fork server seconds, and initialising its CUDA
state about a second a worker, for buffers that only need an allocation and two copies.

An array is uploaded on a stream and waited for, so that a kernel launched on any stream sees it; ``read`` waits for
the device, takes it back and checks the guards. Triton's JIT takes a ``DeviceArray`` too: it has ``data_ptr()`` and a
``dtype`` whose name Triton knows (``int8`` ... ``float64``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from layoutfuzz.gpu.guards import CANARY, GUARD_BYTES, check_guards, guard_image, poison_bytes


@dataclass(frozen=True, eq=False)
class DeviceArray:
    """An array's bytes in device memory between guard zones of ``pattern``; ``memory`` is the whole allocation."""

    memory: Any  # cuda.core Buffer: guard, the array, padding to 256 bytes, guard
    dtype: np.dtype
    shape: tuple[int, ...]
    pattern: bytes
    name: str

    @property
    def size(self) -> int:
        """The array's bytes."""
        return int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize

    def data_ptr(self) -> int:
        """The array's device address (256-byte aligned, as the allocation is)."""
        return int(self.memory.handle) + GUARD_BYTES

    def read(self, stream: Any) -> np.ndarray:
        """The array as the kernels left it, on whatever stream they ran (the device is waited for), copied back on
        ``stream``; ``GuardFault`` if a guard byte changed."""
        from cuda.bindings import driver

        _checked(driver.cuCtxSynchronize(), "waiting for the kernel before copying back " + self.name)
        whole = np.empty(self.memory.size, dtype=np.uint8)
        _checked(driver.cuMemcpyDtoHAsync(whole.ctypes.data, int(self.memory.handle), whole.size, int(stream.handle)),
                 "copying back " + self.name)
        stream.sync()
        check_guards(whole, self.pattern, self.size, self.name)
        return whole[GUARD_BYTES:GUARD_BYTES + self.size].view(self.dtype).reshape(self.shape)


def to_device(values: np.ndarray, pattern: bytes, name: str, stream: Any) -> DeviceArray:
    """``values`` copied to the device of ``stream`` between guard zones of ``pattern``, waited for."""
    from cuda.bindings import driver

    whole = guard_image(values, pattern)
    memory = stream.device.allocate(whole.size, stream=stream)
    _checked(driver.cuMemcpyHtoDAsync(int(memory.handle), whole.ctypes.data, whole.size, int(stream.handle)),
             "copying " + name)
    stream.sync()
    return DeviceArray(memory, values.dtype, tuple(values.shape), pattern, name)


def device_input(values: np.ndarray, name: str, stream: Any) -> DeviceArray:
    """An input between zones of its type's poison (a read past it computes with poison)."""
    return to_device(values, poison_bytes(values.dtype), name, stream)


def device_output(values: np.ndarray, name: str, stream: Any) -> DeviceArray:
    """An output (its initial values) between zones of canary bytes, checked by ``read``."""
    return to_device(values, bytes([CANARY]), name, stream)


def zeros(size: int, stream: Any) -> Any:
    """``size`` zero bytes of device memory (a kernel's scratch), allocated and cleared on ``stream``."""
    from cuda.bindings import driver

    memory = stream.device.allocate(size, stream=stream)
    _checked(driver.cuMemsetD8Async(int(memory.handle), 0, size, int(stream.handle)), "clearing scratch memory")
    return memory


def _checked(answer: tuple, what: str) -> None:
    """A driver call's error as a ``DeviceFault`` (a fault earlier in the context makes every later call fail)."""
    from cuda.bindings import driver

    from layoutfuzz.gpu.device import DeviceFault

    (err, *_) = answer
    if err != driver.CUresult.CUDA_SUCCESS:
        raise DeviceFault(f"{what}: {err.name}")
