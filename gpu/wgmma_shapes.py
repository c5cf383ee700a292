"""The probe's wgmma instructions, one device function per N: the inline PTX of every m64nNkK shape that
``gpu/kernels/wgmma_probe.cu`` runs, generated because each N names N/2 accumulator registers in its text.

``probe_source`` is the probe's whole CUDA source; compiling it needs no GPU."""

from __future__ import annotations

from functools import cache

from layoutfuzz.gpu.device import KERNELS
from layoutfuzz.oracles.wgmma import WGMMA_N

# element type -> (the kernel's type code, K of one instruction, the PTX type, accumulator type, what follows the descriptors)
SHAPES = {
    "f16": ("F16", 16, "f16", "f32", "p, 1, 1, {ta}, {tb}"),  # 16-bit operands take imm-trans-a/b (PTX 9.7.15.5.2)
    "bf16": ("BF16", 16, "bf16", "f32", "p, 1, 1, {ta}, {tb}"),
    "tf32": ("TF32", 8, "tf32", "f32", "p, 1, 1"),  # tf32 and fp8: scales, no transpose
    "e4m3": ("E4M3", 32, "e4m3", "f32", "p, 1, 1"),
    "e5m2": ("E5M2", 32, "e5m2", "f32", "p, 1, 1"),
    "s8": ("S8", 32, "s8", "s32", "p"),  # integers: neither scales nor transpose
    "u8": ("U8", 32, "u8", "s32", "p"),
}
PROBE_N = tuple(sorted({n for dtype in SHAPES for n in WGMMA_N[dtype]}))  # every N some probed type allows


def instruction(dtype: str, n: int, ta: int = 0, tb: int = 0) -> str:
    """One ``asm volatile`` statement: wgmma.mma_async m64nNkK of ``dtype`` into ``d[0 .. N/2)``, descriptors da, db."""
    _, k, ptx, acc, tail = SHAPES[dtype]
    regs = n // 2
    names = ",".join(f"%{i}" for i in range(regs))
    constraint = "+f" if acc == "f32" else "+r"
    outputs = ", ".join(f'"{constraint}"(d[{i}])' for i in range(regs))
    text = (f"{{ .reg .pred p; setp.ne.b32 p, %{regs + 2}, 0;\\n wgmma.mma_async.sync.aligned.m64n{n}k{k}.{acc}.{ptx}.{ptx} "
            f"{{{names}}}, %{regs}, %{regs + 1}, {tail.format(ta=ta, tb=tb)}; }}")
    return f'asm volatile("{text}" : {outputs} : "l"(da), "l"(db), "r"(0));'


def mma_function(n: int) -> str:
    """``mma_nN``: the instruction of the block's type and transposes, waited for, its accumulators emitted."""
    cases = []
    for dtype, (code, _, _, acc, tail) in SHAPES.items():
        if n not in WGMMA_N[dtype]:
            continue
        if "{ta}" in tail:
            body = " else ".join(f"if (ta == {ta} && tb == {tb}) {instruction(dtype, n, ta, tb)}"
                                 for ta, tb in ((0, 0), (1, 0), (0, 1))) + f" else {instruction(dtype, n, 1, 1)}"
        else:
            body = instruction(dtype, n)
        ctype = "float" if acc == "f32" else "int"
        cases.append(f"    case {code}: {{\n      {ctype} d[{n // 2}] = {{}};\n      WGMMA_BEGIN;\n      {body}\n"
                     f"      WGMMA_END;\n      emit<{n}>(d, operand, kdim, o, extent);\n      break;\n    }}")
    return (f"__device__ __noinline__ void mma_n{n}(int type, int ta, int tb, u64 da, u64 db, int operand, int kdim, float* o, "
            f"int extent) {{\n  switch (type) {{\n" + "\n".join(cases) + "\n  }\n}\n")


@cache
def probe_source(n_values: tuple[int, ...] = PROBE_N) -> str:
    """The probe's source with an ``mma_nN`` for every N (of ``n_values``: fewer compile faster) and ``mma``, which
    picks the case's."""
    functions = "\n".join(mma_function(n) for n in n_values)
    dispatch = "\n".join(f"    case {n}: mma_n{n}(type, ta, tb, da, db, operand, kdim, o, extent); break;" for n in n_values)
    generated = (
        '#define WGMMA_BEGIN asm volatile("wgmma.fence.sync.aligned;" ::: "memory")\n'
        '#define WGMMA_END asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); '
        'asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory")\n\n'
        f"{functions}\n__device__ __forceinline__ void mma(int n, int type, int ta, int tb, u64 da, u64 db, int operand, "
        f"int kdim, float* o, int extent) {{\n  switch (n) {{\n{dispatch}\n  }}\n}}\n")
    return (KERNELS / "wgmma_probe.cu").read_text().replace("// @MMA@\n", generated)
