"""Guard zones around the buffers a GPU probe hands its kernel.

An input sits between zones of *poison* (a NaN of its float type, bytes 0x5A/0xA5 otherwise): a kernel that reads past
its operand computes with poison, and its result is wrong instead of right by luck (an unguarded read past a tensor
usually finds zeros or a neighbour's data). An output sits between zones of *canary* bytes that the probe checks after
the kernel: a write past it is a ``GuardFault``, a crash of the case in the system under test. The zones are
``GUARD_BYTES`` long, so the tensor handed over keeps the 16-byte (here 256-byte) alignment kernels specialise on.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

GUARD_BYTES = 4096
CANARY = 0xC3  # an output's guard byte
# a quiet NaN of each float type, little-endian (IEEE 754 binary16/binary32, bfloat16, OCP FP8: E4M3 has S.1111.111 alone,
# E5M2 S.11111.mm with mm != 0)
NAN_BYTES = {"float16": b"\x00\x7e", "bfloat16": b"\xc0\x7f", "float32": b"\x00\x00\xc0\x7f", "float64": b"\x00" * 6 + b"\xf8\x7f",
             "float8_e4m3fn": b"\x7f", "float8_e5m2": b"\x7e"}
INTEGER_POISON = b"\x5a\xa5"  # distinct bytes: in no element an arithmetic identity


class GuardFault(BaseException):
    """A kernel wrote into the guard zone of an output (raised in the system under test: the harness records a crash)."""


def poison_bytes(dtype: Any) -> bytes:
    """The poison pattern of a torch or NumPy dtype: one NaN element of a float type, else ``INTEGER_POISON``."""
    return NAN_BYTES.get(str(dtype).removeprefix("torch."), INTEGER_POISON)


@dataclass(frozen=True, eq=False)
class Guarded:
    """A tensor inside a larger buffer of the same device, with ``GUARD_BYTES`` of ``pattern`` before and after it."""

    buffer: Any  # torch uint8: guard, tensor, padding to 256 bytes and guard
    tensor: Any  # the view handed to the kernel
    pattern: bytes
    name: str
    size: int  # the tensor's bytes

    def check(self) -> None:
        """Raises ``GuardFault`` if a byte outside the tensor changed (the guards, and the padding after the tensor)."""
        check_guards(self.buffer.cpu().numpy(), self.pattern, self.size, self.name)


def guard_image(data: np.ndarray, pattern: bytes) -> np.ndarray:
    """The bytes of a guarded buffer holding ``data`` (its bytes, C order): ``GUARD_BYTES`` of ``pattern`` (repeated),
    the data, ``pattern`` up to the next multiple of 256 bytes, and ``GUARD_BYTES`` of ``pattern`` again."""
    raw = np.ascontiguousarray(data).reshape(-1).view(np.uint8)
    padded = -(-raw.size // 256) * 256
    whole = np.frombuffer(_tiled(pattern, GUARD_BYTES + padded + GUARD_BYTES), dtype=np.uint8).copy()
    whole[GUARD_BYTES:GUARD_BYTES + raw.size] = raw
    return whole


def check_guards(whole: np.ndarray, pattern: bytes, size: int, name: str) -> None:
    """Raises ``GuardFault`` if a byte of ``whole`` (a guarded buffer's bytes, read back after the kernel) outside its
    ``size`` data bytes differs from ``pattern``."""
    want = np.frombuffer(_tiled(pattern, whole.size), dtype=np.uint8)
    changed = np.flatnonzero(whole != want)
    changed = changed[(changed < GUARD_BYTES) | (changed >= GUARD_BYTES + size)].tolist()
    if changed:
        where = ", ".join(f"{GUARD_BYTES - i} before" if i < GUARD_BYTES else f"{i - GUARD_BYTES - size + 1} after"
                          for i in changed[:4])
        raise GuardFault(f"the kernel wrote past its output {name}: {len(changed)} guard bytes changed ({where} it)")


def _tiled(pattern: bytes, size: int) -> bytes:
    return (pattern * (size // len(pattern) + 1))[:size]


def guarded(values: Any, pattern: bytes, name: str = "buffer") -> Guarded:
    """``values`` (a torch tensor) copied into the middle of a buffer on its device whose guard zones hold ``pattern``
    (repeated; the tensor's size rounded up to 256 bytes is padded with it too)."""
    import torch

    size = values.numel() * values.element_size()
    padded = -(-size // 256) * 256
    host = torch.frombuffer(bytearray(_tiled(pattern, GUARD_BYTES + padded + GUARD_BYTES)), dtype=torch.uint8)
    buffer = host.to(values.device)
    buffer[GUARD_BYTES:GUARD_BYTES + size] = values.contiguous().reshape(-1).view(torch.uint8)
    tensor = buffer[GUARD_BYTES:GUARD_BYTES + size].view(values.dtype).view(values.shape)
    return Guarded(buffer, tensor, pattern, name, size)


def guarded_input(values: Any, name: str = "input") -> Guarded:
    """An input between zones of its type's poison."""
    return guarded(values, poison_bytes(values.dtype), name)


def guarded_output(values: Any, name: str = "output") -> Guarded:
    """An output (its initial values) between zones of canary bytes; ``check`` it after the kernel."""
    return guarded(values, bytes([CANARY]), name)
