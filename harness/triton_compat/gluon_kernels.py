"""Gluon kernels the ``triton.compile`` target compiles for sm_90a (on a CPU, never run): a layout conversion and a
shared-memory round trip of one M x N tile. Layouts arrive as constexpr arguments. (The GPU targets run the probes
of ``gpu.gluon_probes``.)"""

from __future__ import annotations

from triton.experimental import gluon
from triton.experimental.gluon import language as ttgl


@gluon.jit
def convert_layout_kernel(src, dst, M: ttgl.constexpr, N: ttgl.constexpr, A: ttgl.constexpr, B: ttgl.constexpr):
    """dst = src, loaded in layout A, converted to B (ttgl.convert_layout), stored from B."""
    rows = ttgl.arange(0, M, layout=ttgl.SliceLayout(1, A))
    cols = ttgl.arange(0, N, layout=ttgl.SliceLayout(0, A))
    x = ttgl.load(src + rows[:, None] * N + cols[None, :])
    y = ttgl.convert_layout(x, B)
    rows_b = ttgl.arange(0, M, layout=ttgl.SliceLayout(1, B))
    cols_b = ttgl.arange(0, N, layout=ttgl.SliceLayout(0, B))
    ttgl.store(dst + rows_b[:, None] * N + cols_b[None, :], y)


@gluon.jit
def shared_roundtrip_kernel(src, dst, M: ttgl.constexpr, N: ttgl.constexpr, A: ttgl.constexpr, B: ttgl.constexpr, S: ttgl.constexpr):
    """dst = src through shared memory: stored from layout A into shared layout S, loaded as B."""
    rows = ttgl.arange(0, M, layout=ttgl.SliceLayout(1, A))
    cols = ttgl.arange(0, N, layout=ttgl.SliceLayout(0, A))
    x = ttgl.load(src + rows[:, None] * N + cols[None, :])
    smem = ttgl.allocate_shared_memory(src.dtype.element_ty, [M, N], S, x)
    y = smem.load(B)
    rows_b = ttgl.arange(0, M, layout=ttgl.SliceLayout(1, B))
    cols_b = ttgl.arange(0, N, layout=ttgl.SliceLayout(0, B))
    ttgl.store(dst + rows_b[:, None] * N + cols_b[None, :], y)
