"""Gluon kernels that run generated layouts on the GPU and report what the hardware did.

``convert_probe_{1,2,3}d``: load a tensor in layout A, record each element's holder
(``%tid.x``) in A, ``convert_layout`` to B, store the data and each element's holder in B.
"""

from __future__ import annotations

from triton.experimental import gluon
from triton.experimental.gluon import language as ttgl


@gluon.jit
def _tid_like(offsets):
    """The thread index of whoever holds each element of ``offsets`` (same layout)."""
    return ttgl.inline_asm_elementwise("mov.u32 $0, %tid.x;", "=r,r", [offsets], dtype=ttgl.int32, is_pure=False, pack=1)


@gluon.jit
def _offsets_1d(L: ttgl.constexpr, S0: ttgl.constexpr):
    return ttgl.arange(0, S0, layout=L)


@gluon.jit
def _offsets_2d(L: ttgl.constexpr, S0: ttgl.constexpr, S1: ttgl.constexpr):
    i = ttgl.arange(0, S0, layout=ttgl.SliceLayout(1, L))
    j = ttgl.arange(0, S1, layout=ttgl.SliceLayout(0, L))
    return ttgl.expand_dims(i, 1) * S1 + ttgl.expand_dims(j, 0)


@gluon.jit
def _offsets_3d(L: ttgl.constexpr, S0: ttgl.constexpr, S1: ttgl.constexpr, S2: ttgl.constexpr):
    i = ttgl.arange(0, S0, layout=ttgl.SliceLayout(1, ttgl.SliceLayout(2, L)))
    j = ttgl.arange(0, S1, layout=ttgl.SliceLayout(0, ttgl.SliceLayout(2, L)))
    k = ttgl.arange(0, S2, layout=ttgl.SliceLayout(0, ttgl.SliceLayout(1, L)))
    ii = ttgl.expand_dims(ttgl.expand_dims(i, 1), 2)
    jj = ttgl.expand_dims(ttgl.expand_dims(j, 0), 2)
    kk = ttgl.expand_dims(ttgl.expand_dims(k, 0), 1)
    return ii * (S1 * S2) + jj * S2 + kk


@gluon.jit
def convert_probe_1d(src, dst, tid_a, tid_b, A: ttgl.constexpr, B: ttgl.constexpr, S0: ttgl.constexpr):
    oa = _offsets_1d(A, S0)
    x = ttgl.load(src + oa)
    ttgl.store(tid_a + oa, _tid_like(oa))
    y = ttgl.convert_layout(x, B)
    ob = _offsets_1d(B, S0)
    ttgl.store(dst + ob, y)
    ttgl.store(tid_b + ob, _tid_like(ob))


@gluon.jit
def convert_probe_2d(src, dst, tid_a, tid_b, A: ttgl.constexpr, B: ttgl.constexpr, S0: ttgl.constexpr, S1: ttgl.constexpr):
    oa = _offsets_2d(A, S0, S1)
    x = ttgl.load(src + oa)
    ttgl.store(tid_a + oa, _tid_like(oa))
    y = ttgl.convert_layout(x, B)
    ob = _offsets_2d(B, S0, S1)
    ttgl.store(dst + ob, y)
    ttgl.store(tid_b + ob, _tid_like(ob))


@gluon.jit
def convert_probe_3d(src, dst, tid_a, tid_b, A: ttgl.constexpr, B: ttgl.constexpr, S0: ttgl.constexpr,
                     S1: ttgl.constexpr, S2: ttgl.constexpr):
    oa = _offsets_3d(A, S0, S1, S2)
    x = ttgl.load(src + oa)
    ttgl.store(tid_a + oa, _tid_like(oa))
    y = ttgl.convert_layout(x, B)
    ob = _offsets_3d(B, S0, S1, S2)
    ttgl.store(dst + ob, y)
    ttgl.store(tid_b + ob, _tid_like(ob))


CONVERT_PROBES = {1: convert_probe_1d, 2: convert_probe_2d, 3: convert_probe_3d}


@gluon.jit
def shared_probe_2d(src, dst, raw, A: ttgl.constexpr, B: ttgl.constexpr, S: ttgl.constexpr, F: ttgl.constexpr,
                    S0: ttgl.constexpr, S1: ttgl.constexpr):
    """Store a tile from layout A into shared layout S, load it as B, and dump shared memory flat."""
    oa = _offsets_2d(A, S0, S1)
    x = ttgl.load(src + oa)
    smem = ttgl.allocate_shared_memory(src.dtype.element_ty, [S0, S1], S, x)
    y = smem.load(B)
    ttgl.store(dst + _offsets_2d(B, S0, S1), y)
    flat = smem._reinterpret(src.dtype.element_ty, [S0 * S1], ttgl.SwizzledSharedLayout(1, 1, 1, [0]))
    of = ttgl.arange(0, S0 * S1, layout=F)
    ttgl.store(raw + of, flat.load(F))
