"""The Gluon kernel ``triton.layout_ops`` compiles for sm_90a on a CPU: one M x N tile loaded in a distributed layout
``A``, one layout-sensitive operation on it, the result stored from the layout Gluon gives it (a reduction's slice,
a permutation's or reshape's inferred layout, a gather's index layout), as a Gluon user writes each operation; and the
kernels of the operations added since (user-written combines, rank-3 tiles, histograms), at the end."""

from __future__ import annotations

from triton.experimental import gluon
from triton.experimental.gluon import language as ttgl


@gluon.jit
def layout_op_kernel(src, dst, M: ttgl.constexpr, N: ttgl.constexpr, A: ttgl.constexpr, OP: ttgl.constexpr,
                     AXIS: ttgl.constexpr):
    rows = ttgl.arange(0, M, layout=ttgl.SliceLayout(1, A))
    cols = ttgl.arange(0, N, layout=ttgl.SliceLayout(0, A))
    offs = rows[:, None] * N + cols[None, :]
    x = ttgl.load(src + offs)
    if OP == "sum":
        y = ttgl.sum(x, AXIS)
        if AXIS == 0:
            ttgl.store(dst + cols, y)
        else:
            ttgl.store(dst + rows, y)
    elif OP == "max":
        y = ttgl.max(x, AXIS)
        if AXIS == 0:
            ttgl.store(dst + cols, y)
        else:
            ttgl.store(dst + rows, y)
    elif OP == "cumsum":
        ttgl.store(dst + offs, ttgl.cumsum(x, AXIS))
    elif OP == "permute":
        t = ttgl.permute(x, (1, 0))
        T: ttgl.constexpr = t.type.layout
        t_rows = ttgl.arange(0, N, layout=ttgl.SliceLayout(1, T))
        t_cols = ttgl.arange(0, M, layout=ttgl.SliceLayout(0, T))
        ttgl.store(dst + t_rows[:, None] * M + t_cols[None, :], t)
    elif OP == "reshape":
        flat = ttgl.reshape(x, [M * N])
        F: ttgl.constexpr = flat.type.layout
        ttgl.store(dst + ttgl.arange(0, M * N, layout=F), flat)
    elif OP == "join_split":
        a, b = ttgl.split(ttgl.join(x, x + 1))
        ttgl.store(dst + offs, ttgl.convert_layout(a + b, A))
    elif OP == "gather":
        index = (offs * 7) % (M if AXIS == 0 else N)
        ttgl.store(dst + offs, ttgl.gather(x, index, AXIS))
    else:  # broadcast: a reduction expanded back and broadcast against its operand
        ttgl.store(dst + offs, x - ttgl.expand_dims(ttgl.max(x, AXIS), AXIS))


# The operations with a user-written combine function, rank-3 operands and histograms (``triton.layout_ops``'s
# ``generators.gluon_ops.EXTRA_OPS`` and rank-3 cases); ``layout_op_kernel`` above stays the rank-2 kernel of the
# original operations (``triton.layout_ops_run`` runs it on the device).


@gluon.jit
def max_combine(a, b):
    return ttgl.maximum(a, b)


@gluon.jit
def argmax_combine(value_a, index_a, value_b, index_b):
    pick_a = (value_a > value_b) | ((value_a == value_b) & (index_a < index_b))
    return ttgl.where(pick_a, value_a, value_b), ttgl.where(pick_a, index_a, index_b)


@gluon.jit
def store_tile(ptr, y):
    # y stored at its row-major offsets, built in its own layout (rank 1 to 3)
    L: ttgl.constexpr = y.type.layout
    if len(y.shape) == 1:
        ttgl.store(ptr + ttgl.arange(0, y.shape[0], layout=L), y)
    elif len(y.shape) == 2:
        r = ttgl.arange(0, y.shape[0], layout=ttgl.SliceLayout(1, L))
        c = ttgl.arange(0, y.shape[1], layout=ttgl.SliceLayout(0, L))
        ttgl.store(ptr + r[:, None] * y.shape[1] + c[None, :], y)
    else:
        d0 = ttgl.arange(0, y.shape[0], layout=ttgl.SliceLayout(1, ttgl.SliceLayout(2, L)))
        d1 = ttgl.arange(0, y.shape[1], layout=ttgl.SliceLayout(0, ttgl.SliceLayout(2, L)))
        d2 = ttgl.arange(0, y.shape[2], layout=ttgl.SliceLayout(0, ttgl.SliceLayout(1, L)))
        ttgl.store(ptr + d0[:, None, None] * (y.shape[1] * y.shape[2]) + d1[None, :, None] * y.shape[2]
                   + d2[None, None, :], y)


@gluon.jit
def apply_op(dst, x, offs, A: ttgl.constexpr, OP: ttgl.constexpr, AXIS: ttgl.constexpr, REVERSE: ttgl.constexpr):
    # one operation on the tile x (rank 2 or 3, layout A, row-major offsets offs), its result stored
    if OP == "sum":
        store_tile(dst, ttgl.sum(x, AXIS))
    elif OP == "max":
        store_tile(dst, ttgl.max(x, AXIS))
    elif OP == "cumsum":
        ttgl.store(dst + offs, ttgl.cumsum(x, AXIS))
    elif OP == "scan_max":  # a scan with a user-written combine
        ttgl.store(dst + offs, ttgl.associative_scan(x, AXIS, max_combine, reverse=REVERSE))
    elif OP == "scan_pair":  # a two-operand (value, index) scan: the running argmax
        value, index = ttgl.associative_scan((x, offs), AXIS, argmax_combine, reverse=REVERSE)
        ttgl.store(dst + offs, value + index.to(ttgl.float32))
    elif OP == "reduce_pair":  # a two-operand (value, index) reduction: argmax
        value, index = ttgl.reduce((x, offs), AXIS, argmax_combine)
        store_tile(dst, value + index.to(ttgl.float32))
    elif OP == "permute":
        if len(x.shape) == 2:
            store_tile(dst, ttgl.permute(x, (1, 0)))
        elif AXIS == 0:
            store_tile(dst, ttgl.permute(x, (1, 2, 0)))
        elif AXIS == 1:
            store_tile(dst, ttgl.permute(x, (2, 0, 1)))
        else:
            store_tile(dst, ttgl.permute(x, (0, 2, 1)))
    elif OP == "reshape":
        store_tile(dst, ttgl.reshape(x, [x.numel]))
    elif OP == "join_split":
        a, b = ttgl.split(ttgl.join(x, x + 1))
        ttgl.store(dst + offs, ttgl.convert_layout(a + b, A))
    elif OP == "gather":
        ttgl.store(dst + offs, ttgl.gather(x, (offs * 7) % x.shape[AXIS], AXIS))
    elif OP == "atomic_add":  # each element added once, however many threads the layout gives it; a third masked
        ttgl.atomic_add(dst + offs, x, mask=offs % 3 != 1)
    else:  # broadcast: a reduction expanded back and broadcast against its operand
        ttgl.store(dst + offs, x - ttgl.expand_dims(ttgl.max(x, AXIS), AXIS))


@gluon.jit
def rank2_op_kernel(src, dst, M: ttgl.constexpr, N: ttgl.constexpr, A: ttgl.constexpr, OP: ttgl.constexpr,
                    AXIS: ttgl.constexpr, REVERSE: ttgl.constexpr):
    rows = ttgl.arange(0, M, layout=ttgl.SliceLayout(1, A))
    cols = ttgl.arange(0, N, layout=ttgl.SliceLayout(0, A))
    offs = rows[:, None] * N + cols[None, :]
    apply_op(dst, ttgl.load(src + offs), offs, A, OP, AXIS, REVERSE)


@gluon.jit
def rank3_op_kernel(src, dst, M: ttgl.constexpr, N: ttgl.constexpr, K: ttgl.constexpr, A: ttgl.constexpr,
                    OP: ttgl.constexpr, AXIS: ttgl.constexpr, REVERSE: ttgl.constexpr):
    d0 = ttgl.arange(0, M, layout=ttgl.SliceLayout(1, ttgl.SliceLayout(2, A)))
    d1 = ttgl.arange(0, N, layout=ttgl.SliceLayout(0, ttgl.SliceLayout(2, A)))
    d2 = ttgl.arange(0, K, layout=ttgl.SliceLayout(0, ttgl.SliceLayout(1, A)))
    offs = d0[:, None, None] * (N * K) + d1[None, :, None] * K + d2[None, None, :]
    apply_op(dst, ttgl.load(src + offs), offs, A, OP, AXIS, REVERSE)


@gluon.jit
def apply_atomic(dst, x, offs, OP: ttgl.constexpr, SEM: ttgl.constexpr, SCOPE: ttgl.constexpr):
    # an atomic of the tile x into dst (zeros) at its row-major offsets offs, in memory order SEM and scope SCOPE, a
    # third masked: a max; an exchange (a compare-and-swap, unmasked) of x + 8 whose returned old values (zeros, one
    # per element however many threads hold it) are added back, so that a wrong old value shows in dst. The swap
    # compares bits: its zeros are x - x (+0.0), not x * 0 (-0.0 where x < 0, which no zero in dst equals)
    keep = offs % 3 != 1
    if OP == "atomic_max":
        ttgl.atomic_max(dst + offs, x, mask=keep, sem=SEM, scope=SCOPE)
    elif OP == "atomic_xchg":
        old = ttgl.atomic_xchg(dst + offs, x + 8, mask=keep, sem=SEM, scope=SCOPE)
        ttgl.atomic_add(dst + offs, old, mask=keep, sem=SEM, scope=SCOPE)
    else:
        old = ttgl.atomic_cas(dst + offs, x - x, x + 8, sem=SEM, scope=SCOPE)
        ttgl.atomic_add(dst + offs, old, mask=keep, sem=SEM, scope=SCOPE)


@gluon.jit
def rank2_atomic_kernel(src, dst, M: ttgl.constexpr, N: ttgl.constexpr, A: ttgl.constexpr, OP: ttgl.constexpr,
                        SEM: ttgl.constexpr, SCOPE: ttgl.constexpr):
    rows = ttgl.arange(0, M, layout=ttgl.SliceLayout(1, A))
    cols = ttgl.arange(0, N, layout=ttgl.SliceLayout(0, A))
    offs = rows[:, None] * N + cols[None, :]
    apply_atomic(dst, ttgl.load(src + offs), offs, OP, SEM, SCOPE)


@gluon.jit
def rank3_atomic_kernel(src, dst, M: ttgl.constexpr, N: ttgl.constexpr, K: ttgl.constexpr, A: ttgl.constexpr,
                        OP: ttgl.constexpr, SEM: ttgl.constexpr, SCOPE: ttgl.constexpr):
    d0 = ttgl.arange(0, M, layout=ttgl.SliceLayout(1, ttgl.SliceLayout(2, A)))
    d1 = ttgl.arange(0, N, layout=ttgl.SliceLayout(0, ttgl.SliceLayout(2, A)))
    d2 = ttgl.arange(0, K, layout=ttgl.SliceLayout(0, ttgl.SliceLayout(1, A)))
    offs = d0[:, None, None] * (N * K) + d1[None, :, None] * K + d2[None, None, :]
    apply_atomic(dst, ttgl.load(src + offs), offs, OP, SEM, SCOPE)


@gluon.jit
def histogram_kernel(src, dst, M: ttgl.constexpr, B: ttgl.constexpr, A: ttgl.constexpr, H: ttgl.constexpr):
    # a histogram of B bins of M int32 values in the 1-D layout A (the last one masked off), into the layout H
    offs = ttgl.arange(0, M, layout=A)
    counts = ttgl.histogram(ttgl.load(src + offs), B, mask=offs < M - 1, layout=H)
    ttgl.store(dst + ttgl.arange(0, B, layout=H), counts)


# Chains of operations (``triton.layout_chains``): each step takes the layout Gluon inferred for the step before.


@gluon.jit
def add_combine(a, b):
    return a + b


@gluon.jit
def chain_step(x, STEP: ttgl.constexpr, AXIS: ttgl.constexpr, B: ttgl.constexpr):
    # one step of a chain (generators.gluon_chains.STEPS) on x in whatever layout it has; "none" leaves it
    if STEP == "sum":
        y = ttgl.sum(x, AXIS)
    elif STEP == "max":
        y = ttgl.max(x, AXIS)
    elif STEP == "keep":  # a reduction expanded back: expand_dims takes only the layout sliced on its axis
        y = ttgl.expand_dims(ttgl.sum(x, AXIS), AXIS)
    elif STEP == "center":
        y = x - ttgl.expand_dims(ttgl.max(x, AXIS), AXIS)
    elif STEP == "cumsum":  # a running sum as associative_scan with an add combine (every release has it)
        y = ttgl.associative_scan(x, AXIS, add_combine)
    elif STEP == "trans":
        if len(x.shape) == 2:
            y = ttgl.permute(x, (1, 0))
        else:
            y = ttgl.permute(x, (2, 1, 0))
    elif STEP == "rot":
        y = ttgl.permute(x, (1, 2, 0))
    elif STEP == "flat":
        y = ttgl.reshape(x, [x.numel])
    elif STEP == "unflat":
        if len(x.shape) == 1:
            y = ttgl.reshape(x, [2, x.shape[0] // 2])
        else:
            y = ttgl.reshape(x, [x.shape[0], 2, x.shape[1] // 2])
    elif STEP == "join":
        y = ttgl.join(x, x + 1)
    elif STEP == "split":
        a, b = ttgl.split(x)
        y = a * 2 + b
    elif STEP == "convert":
        y = ttgl.convert_layout(x, B)
    else:
        y = x
    return y


@gluon.jit
def chain_rank2_kernel(src, dst, M: ttgl.constexpr, N: ttgl.constexpr, A: ttgl.constexpr, B: ttgl.constexpr,
                       S1: ttgl.constexpr, X1: ttgl.constexpr, S2: ttgl.constexpr, X2: ttgl.constexpr,
                       S3: ttgl.constexpr, X3: ttgl.constexpr):
    rows = ttgl.arange(0, M, layout=ttgl.SliceLayout(1, A))
    cols = ttgl.arange(0, N, layout=ttgl.SliceLayout(0, A))
    x = ttgl.load(src + rows[:, None] * N + cols[None, :])
    store_tile(dst, chain_step(chain_step(chain_step(x, S1, X1, B), S2, X2, B), S3, X3, B))


@gluon.jit
def chain_rank3_kernel(src, dst, M: ttgl.constexpr, N: ttgl.constexpr, K: ttgl.constexpr, A: ttgl.constexpr,
                       B: ttgl.constexpr, S1: ttgl.constexpr, X1: ttgl.constexpr, S2: ttgl.constexpr,
                       X2: ttgl.constexpr, S3: ttgl.constexpr, X3: ttgl.constexpr):
    d0 = ttgl.arange(0, M, layout=ttgl.SliceLayout(1, ttgl.SliceLayout(2, A)))
    d1 = ttgl.arange(0, N, layout=ttgl.SliceLayout(0, ttgl.SliceLayout(2, A)))
    d2 = ttgl.arange(0, K, layout=ttgl.SliceLayout(0, ttgl.SliceLayout(1, A)))
    x = ttgl.load(src + d0[:, None, None] * (N * K) + d1[None, :, None] * K + d2[None, None, :])
    store_tile(dst, chain_step(chain_step(chain_step(x, S1, X1, B), S2, X2, B), S3, X3, B))


EXTRA_KERNELS = (max_combine, argmax_combine, store_tile, apply_op, rank2_op_kernel, rank3_op_kernel, histogram_kernel,
                 add_combine, chain_step, chain_rank2_kernel, chain_rank3_kernel)
