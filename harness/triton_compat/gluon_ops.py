"""Gluon functions that were renamed between releases, under one name each for layoutfuzz's kernels.

- TMA copies: ``tma.async_copy_global_to_shared`` / ``async_copy_shared_to_global`` up to 3.7.x,
  ``tma.async_load`` / ``async_store`` from 3.8.0 (3.9.0 removed the old names).
- A shared-memory view with another type, shape or layout: ``shared_memory_descriptor._reinterpret``
  up to 3.8.0, ``reinterpret`` from 3.9.0.
"""

from __future__ import annotations

from triton.experimental.gluon.language._core import builtin
from triton.experimental.gluon.language.nvidia.hopper import tma

tma_load = getattr(tma, "async_load", None) or tma.async_copy_global_to_shared
tma_store = getattr(tma, "async_store", None) or tma.async_copy_shared_to_global


@builtin
def reinterpret(smem, dtype, shape, layout, _semantic=None):
    """``smem`` viewed as ``dtype`` elements of ``shape`` in shared ``layout`` (no data moves)."""
    view = getattr(smem, "reinterpret", None) or smem._reinterpret
    return view(dtype, shape, layout, _semantic=_semantic)

