"""The Gluon kernel ``triton.layout_ops`` compiles for sm_90a on a CPU: one M x N tile loaded in a distributed layout
``A``, one layout-sensitive operation on it, the result stored from the layout Gluon gives it (a reduction's slice,
a permutation's or reshape's inferred layout, a gather's index layout), as a Gluon user writes each operation."""

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
