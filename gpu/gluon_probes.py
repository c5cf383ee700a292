"""Gluon kernels that run generated layouts on the GPU and report what the hardware did.

``convert_probe_{1,2,3}d``: load a tensor in layout A, record each element's holder
(its thread in the cluster) in A, ``convert_layout`` to B, store the data and each element's holder in B.
``shared_probe_2d``: a shared-memory round trip with a flat dump of the raw placement.
``tma_probe``: a TMA load (flat dump of what arrived) and a TMA store of known bytes.
``tma_cluster_probe``: a TMA load over a cluster of CTAs into a subview of a multi-buffer, read back in registers.
``tma_cluster_store_probe``: its mirror, a TMA store over a cluster of CTAs from such a subview.
``wgmma_probe``: one ``warpgroup_mma`` over operands in chosen layouts and types, between guard zones.
"""

from __future__ import annotations

from triton.experimental import gluon
from triton.experimental.gluon import language as ttgl
from triton.experimental.gluon.language.nvidia.hopper import fence_async_shared, mbarrier, tma, warpgroup_mma

from layoutfuzz.harness.triton_compat.barriers import barrier_of_each_cta, publish_barrier_init
from layoutfuzz.harness.triton_compat.gluon_ops import reinterpret, tma_load, tma_store


@gluon.jit
def _tid_like(offsets):
    """Whoever holds each element of ``offsets`` (same layout), as a thread of the cluster: ``%tid.x`` plus the CTA's
    ``%cluster_ctarank`` times its threads (a kernel without a cluster is a cluster of one CTA: rank 0)."""
    return ttgl.inline_asm_elementwise(
        "{ .reg .u32 c, n, t; mov.u32 c, %cluster_ctarank; mov.u32 n, %ntid.x; mov.u32 t, %tid.x; mad.lo.u32 $0, c, n, t; }",
        "=r,r", [offsets], dtype=ttgl.int32, is_pure=False, pack=1)


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
    flat = reinterpret(smem, src.dtype.element_ty, [S0 * S1], ttgl.SwizzledSharedLayout(1, 1, 1, [0]))
    of = ttgl.arange(0, S0 * S1, layout=F)
    ttgl.store(raw + of, flat.load(F))


@gluon.jit
def shared_permute_probe_2d(src, dst, A: ttgl.constexpr, B: ttgl.constexpr, S: ttgl.constexpr, S0: ttgl.constexpr,
                            S1: ttgl.constexpr):
    """Store an S0 x S1 tile from layout A into shared layout S, load its permuted view (S1 x S0) as B."""
    x = ttgl.load(src + _offsets_2d(A, S0, S1))
    smem = ttgl.allocate_shared_memory(src.dtype.element_ty, [S0, S1], S, x)
    y = smem.permute([1, 0]).load(B)
    ttgl.store(dst + _offsets_2d(B, S1, S0), y)


@gluon.jit
def tma_probe(in_desc, out_desc, raw, fill, COORD: ttgl.constexpr, N: ttgl.constexpr, F: ttgl.constexpr):
    """TMA-load a block at ``COORD`` into shared memory and dump the buffer flat into ``raw``;
    write ``fill`` flat into a second buffer of the same layout and TMA-store it at ``COORD``."""
    flat_layout: ttgl.constexpr = ttgl.SwizzledSharedLayout(1, 1, 1, [0])
    smem = ttgl.allocate_shared_memory(in_desc.dtype, in_desc.block_type.shape, in_desc.layout)
    bar = ttgl.allocate_shared_memory(ttgl.int64, [1], mbarrier.MBarrierLayout())
    mbarrier.init(bar, count=1)
    mbarrier.expect(bar, in_desc.block_type.nbytes)
    tma_load(in_desc, COORD, bar, smem)
    mbarrier.wait(bar, phase=0)
    mbarrier.invalidate(bar)
    flat = ttgl.arange(0, N, layout=F)
    ttgl.store(raw + flat, reinterpret(smem, in_desc.dtype, [N], flat_layout).load(F))
    out = ttgl.allocate_shared_memory(out_desc.dtype, out_desc.block_type.shape, out_desc.layout)
    reinterpret(out, out_desc.dtype, [N], flat_layout).store(ttgl.load(fill + flat))
    fence_async_shared()
    tma_store(out_desc, COORD, out)
    tma.store_wait(0)


@gluon.jit
def _load_over_cluster(in_desc, out, BUFFERS: ttgl.constexpr, SLOT: ttgl.constexpr, COORD: ttgl.constexpr,
                       L: ttgl.constexpr, BYTES: ttgl.constexpr, S0: ttgl.constexpr, S1: ttgl.constexpr,
                       MULTICAST: ttgl.constexpr):
    """A TMA load over a cluster as Triton's own tests of it write one: a barrier of each CTA's own, initialised and
    published to the cluster, each CTA expecting its part's ``BYTES``, waiting on its own barrier."""
    smem = ttgl.allocate_shared_memory(in_desc.dtype, [BUFFERS, S0, S1], in_desc.layout)
    bar = barrier_of_each_cta()
    mbarrier.init(bar, count=1)
    publish_barrier_init()
    mbarrier.expect(bar, BYTES)
    if MULTICAST:
        tma_load(in_desc, COORD, bar, smem.index(SLOT), multicast=True)
    else:
        tma_load(in_desc, COORD, bar, smem.index(SLOT))
    mbarrier.wait(bar, phase=0, deps=[smem])
    ttgl.store(out + _offsets_2d(L, S0, S1), smem.index(SLOT).load(L))
    mbarrier.invalidate(bar)


@gluon.jit
def tma_cluster_probe(in_desc, out, BUFFERS: ttgl.constexpr, SLOT: ttgl.constexpr, COORD: ttgl.constexpr,
                      L: ttgl.constexpr, BYTES: ttgl.constexpr, S0: ttgl.constexpr, S1: ttgl.constexpr):
    """Over a cluster (``num_ctas``): TMA-load the block at ``COORD`` into buffer ``SLOT`` of ``BUFFERS`` (a subview of
    one allocation, the descriptor's CTA-split NVMMA layout), each CTA its part (``BYTES`` on its own barrier); read
    the subview in ``L`` (the same CTA split) and store it to ``out``, row-major."""
    _load_over_cluster(in_desc, out, BUFFERS, SLOT, COORD, L, BYTES, S0, S1, False)


@gluon.jit
def tma_multicast_probe(in_desc, out, BUFFERS: ttgl.constexpr, SLOT: ttgl.constexpr, COORD: ttgl.constexpr,
                        L: ttgl.constexpr, BYTES: ttgl.constexpr, S0: ttgl.constexpr, S1: ttgl.constexpr):
    """``tma_cluster_probe`` with a multicast load: the CTAs that hold the same part of the block get it from one load
    (Triton 3.7.1 on)."""
    _load_over_cluster(in_desc, out, BUFFERS, SLOT, COORD, L, BYTES, S0, S1, True)


@gluon.jit
def tma_cluster_store_probe(out_desc, src, BUFFERS: ttgl.constexpr, SLOT: ttgl.constexpr, COORD: ttgl.constexpr,
                            L: ttgl.constexpr, S0: ttgl.constexpr, S1: ttgl.constexpr):
    """Over a cluster (``num_ctas``): load the block row-major from ``src`` in ``L`` (the descriptor's CTA split), write
    it into buffer ``SLOT`` of ``BUFFERS`` (a subview of one allocation in the descriptor's CTA-split NVMMA layout), and
    TMA-store that buffer at ``COORD``: each CTA its part."""
    smem = ttgl.allocate_shared_memory(out_desc.dtype, [BUFFERS, S0, S1], out_desc.layout)
    smem.index(SLOT).store(ttgl.load(src + _offsets_2d(L, S0, S1)))
    fence_async_shared()
    tma_store(out_desc, COORD, smem.index(SLOT))
    tma.store_wait(0)


@gluon.jit
def _to_mma(x, MMA: ttgl.constexpr, ROUND: ttgl.constexpr):
    """Storage type -> MMA type through fp32 (exact for the small integers the cases use)."""
    if ROUND is None:
        return x.to(ttgl.float32).to(MMA)
    else:
        return x.to(ttgl.float32).to(MMA, fp_downcast_rounding=ROUND)


@gluon.jit
def _guarded_operand(x, MMA: ttgl.constexpr, LAYOUT: ttgl.constexpr, POISON: ttgl.constexpr, POISON_INT: ttgl.constexpr,
                     AT: ttgl.constexpr = 1):
    """``x`` in the middle one of three adjacent shared buffers of ``LAYOUT`` (one allocation, as a multi-buffer), the
    two around it holding ``POISON`` (the bits of a NaN of ``MMA``, or a large integer): the operand's guard zones, so
    that an MMA reading past it computes with poison. Returns buffer ``AT``: the operand (a guard zone, to test it)."""
    buffers = ttgl.allocate_shared_memory(MMA, [3, x.shape[0], x.shape[1]], LAYOUT)
    poison = ttgl.full(x.shape, POISON, POISON_INT, x.type.layout).to(MMA, bitcast=True)
    buffers.index(0).store(poison)
    buffers.index(2).store(poison)
    buffers.index(1).store(x)
    return buffers.index(AT)


@gluon.jit
def wgmma_probe(a_ptr, b_ptr, c_ptr, d_ptr, M: ttgl.constexpr, N: ttgl.constexpr, K: ttgl.constexpr,
                MMA: ttgl.constexpr, ROUND: ttgl.constexpr, ACC: ttgl.constexpr, LOAD: ttgl.constexpr,
                A_SMEM: ttgl.constexpr, B_SMEM: ttgl.constexpr, A_IN_REGS: ttgl.constexpr, K_WIDTH: ttgl.constexpr,
                A_MN_MAJOR: ttgl.constexpr, B_K_MAJOR: ttgl.constexpr, USE_ACC: ttgl.constexpr,
                POISON: ttgl.constexpr, POISON_INT: ttgl.constexpr):
    """D = A @ B (+ C) with ``warpgroup_mma``: A [M, K] from registers (DotOperandLayout) or shared
    memory, B [K, N] from shared memory, each K- or MN-major (a permuted view of the other order), each shared operand
    between guard zones of poison (``_guarded_operand``)."""
    a = _to_mma(ttgl.load(a_ptr + _offsets_2d(LOAD, M, K)), MMA, ROUND)
    if A_IN_REGS:
        a_op = ttgl.convert_layout(a, ttgl.DotOperandLayout(0, ACC, K_WIDTH))
    elif A_MN_MAJOR:
        a_op = _guarded_operand(ttgl.permute(a, (1, 0)), MMA, A_SMEM, POISON, POISON_INT).permute((1, 0))
    else:
        a_op = _guarded_operand(a, MMA, A_SMEM, POISON, POISON_INT)
    b = _to_mma(ttgl.load(b_ptr + _offsets_2d(LOAD, K, N)), MMA, ROUND)
    if B_K_MAJOR:
        b_op = _guarded_operand(ttgl.permute(b, (1, 0)), MMA, B_SMEM, POISON, POISON_INT).permute((1, 0))
    else:
        b_op = _guarded_operand(b, MMA, B_SMEM, POISON, POISON_INT)
    fence_async_shared()
    oc = _offsets_2d(ACC, M, N)
    d = warpgroup_mma(a_op, b_op, ttgl.load(c_ptr + oc), use_acc=USE_ACC)
    ttgl.store(d_ptr + oc, d)


@gluon.jit
def convert_probe_packed_2d(src, dst, tid_a, tid_b, AS: ttgl.constexpr, BS: ttgl.constexpr, S0S: ttgl.constexpr,
                            S1S: ttgl.constexpr, OFFS: ttgl.constexpr):
    """``convert_probe_2d`` for several cases in one kernel (same element type and warps): case i
    converts AS[i] -> BS[i] over an S0S[i] x S1S[i] tile at element offset OFFS[i]. Measured against
    one kernel per case by ``benchmarks/packed_compile.py``."""
    for i in ttgl.static_range(len(AS)):
        oa = _offsets_2d(ttgl.constexpr(AS[i]), ttgl.constexpr(S0S[i]), ttgl.constexpr(S1S[i])) + OFFS[i]
        x = ttgl.load(src + oa)
        ttgl.store(tid_a + oa, _tid_like(oa))
        y = ttgl.convert_layout(x, ttgl.constexpr(BS[i]))
        ob = _offsets_2d(ttgl.constexpr(BS[i]), ttgl.constexpr(S0S[i]), ttgl.constexpr(S1S[i])) + OFFS[i]
        ttgl.store(dst + ob, y)
        ttgl.store(tid_b + ob, _tid_like(ob))
