"""GPU target ``triton.wgmma``: one Gluon ``warpgroup_mma`` over operands in random shared
layouts (swizzle, K- or MN-major), A from registers or shared memory, for pairs of storage types
converted to an MMA type, against an exact integer reference (the paper's Table 5, per pair).

Each shared operand is the middle one of three adjacent buffers of its layout, the two around it poisoned (a NaN of
the MMA type, or a large integer; ``gluon_probes._guarded_operand``): an MMA that reads past its operand's bytes in
shared memory computes with poison, and a float product comes out NaN. The global buffers sit between guard zones too
(``gpu.guards``). The kernel is compiled ahead or cached and launched through cuda.core on NumPy's buffers
(``gpu.prebuilt``), or through Triton's JIT with ``$LAYOUTFUZZ_TRITON_JIT=1``."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

from layoutfuzz.generators.case import Case
from layoutfuzz.generators.shrink import replaced
from layoutfuzz.generators.source import Source
from layoutfuzz.generators.space import Parameter, Space
from layoutfuzz.gpu.guards import poison_bytes
from layoutfuzz.gpu.targets.gluon_kernel import GluonKernelTarget, KernelSpec, cubin_launcher
from layoutfuzz.harness.compare import Comparison

# storage types -> (torch dtype name, Triton signature type)
STORAGE = {"i8": ("int8", "i8"), "i16": ("int16", "i16"), "i32": ("int32", "i32"), "e4m3": ("float8_e4m3fn", "fp8e4nv"),
           "e5m2": ("float8_e5m2", "fp8e5"), "f16": ("float16", "fp16"), "bf16": ("bfloat16", "bf16"), "f32": ("float32", "fp32")}
# storage types -> NumPy's (ml_dtypes' for the 8- and 16-bit floats NumPy lacks), the names gpu.guards poisons by
NUMPY_TYPES = {"i8": "int8", "i16": "int16", "i32": "int32", "e4m3": "float8_e4m3fn", "e5m2": "float8_e5m2",
               "f16": "float16", "bf16": "bfloat16", "f32": "float32"}
# MMA types -> bits; their accumulators (PTX 9.7.15.5.1: f16 may also accumulate in f16)
MMA_BITS = {"f16": 16, "bf16": 16, "tf32": 32, "e4m3": 8, "e5m2": 8, "i8": 8}
MMA_STORED_AS = {"f16": "f16", "bf16": "bf16", "tf32": "f32", "e4m3": "e4m3", "e5m2": "e5m2", "i8": "i8"}  # in shared memory
ACCUMULATORS = {"f16": ("f32", "f16"), "bf16": ("f32",), "tf32": ("f32",), "e4m3": ("f32",), "e5m2": ("f32",), "i8": ("i32",)}
SWIZZLES = (32, 64, 128)
# unswizzled NVMMA operands (swizzle 0), what Triton newly lowers from 3.8.0: 16-bit ones whose contiguous rows hold 32
# bytes (K-major with K = 16, MN-major with 16 columns); 3.6.0 and 3.7.1 refuse them ("failed to find valid wgmma
# layout"), and every release refuses other unswizzled operands (compiled on a CPU by each, docs/findings.md)
UNSWIZZLED_ROW_BYTES = 32
ALL_SWIZZLES = (0, *SWIZZLES)
VALUE_RANGE = 4  # |a|, |b| <= 4 and |c| <= 16: exact in every type, sums exact in every accumulator
SMEM_BYTES = 96 * 1024


def operand_data(case: Case) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A [M, K], B [K, N] and C [M, N] as small integers (int64), from the case's seed alone."""
    p = case.params
    rng = np.random.default_rng([case.seed, case.index])
    a = rng.integers(-VALUE_RANGE, VALUE_RANGE + 1, (p["M"], p["K"]))
    b = rng.integers(-VALUE_RANGE, VALUE_RANGE + 1, (p["K"], p["N"]))
    c = rng.integers(-16, 17, (p["M"], p["N"]))
    return a, b, c


def swizzles(bits: int, row: int) -> tuple[int, ...]:
    """The swizzles drawn for an operand of an MMA type of ``bits`` bits whose contiguous rows hold ``row`` bytes."""
    unswizzled = (0,) if bits == 16 and row == UNSWIZZLED_ROW_BYTES else ()
    return (*unswizzled, *(s for s in SWIZZLES if s <= row))


def numpy_type(kind: str) -> np.dtype:
    """The NumPy dtype of a storage type (``ml_dtypes`` for float8 and bfloat16)."""
    if kind in ("e4m3", "e5m2", "bf16"):
        import ml_dtypes

        return np.dtype(getattr(ml_dtypes, NUMPY_TYPES[kind]))
    return np.dtype(NUMPY_TYPES[kind])


def poison(mma: str) -> int:
    """The guard zones' element of an MMA type in shared memory, as a signed integer of its width: a NaN of a float
    type (``gpu.guards.NAN_BYTES``), ``gpu.guards``' integer poison for int8."""
    bits = MMA_BITS[mma]
    return int.from_bytes(poison_bytes(NUMPY_TYPES[MMA_STORED_AS[mma]])[:bits // 8], "little", signed=True)


def stored_rows(x: np.ndarray, contiguous_columns: bool) -> np.ndarray:
    """Operand ``x`` (A as M x K, B as K x N) as the matrix whose rows lie contiguous in shared memory: ``x`` itself
    where its columns are the contiguous dim (A K-major, B MN-major), else its transpose; its own inverse."""
    return x if contiguous_columns else x.T


def read_with_32_byte_swizzle(rows: np.ndarray) -> np.ndarray:
    """What an MMA sees of a row-major buffer of 32-byte rows when its descriptor says 32-byte swizzle: rows 4-7 of
    every 8 with their two 16-byte halves swapped (PTX 9.7.15.5.1.2: the 32B swizzle XORs byte bit 4 with bit 7)."""
    seen = rows.copy()
    odd = np.arange(len(rows)) % 8 >= 4
    seen[odd] = np.roll(rows[odd], rows.shape[1] // 2, axis=1)
    return seen


def read_as_transposed_core_matrices(rows: np.ndarray) -> np.ndarray:
    """What an MMA sees of a row-major buffer of 32-byte rows (16 elements) when it reads it unswizzled and transposed:
    each 128 contiguous bytes one 8 x 8 core matrix (PTX 9.7.15.5.1.2), taken column for row; the two core matrices of
    an 8-row block side by side."""
    flat, seen = rows.reshape(-1), np.empty_like(rows)
    for block in range(len(rows) // 8):
        for half in range(2):
            core = flat[64 * (2 * block + half):64 * (2 * block + half + 1)].reshape(8, 8)
            seen[8 * block:8 * block + 8, 8 * half:8 * half + 8] = core.T
    return seen


READ_PATTERNS = {"with a 32-byte swizzle": read_with_32_byte_swizzle,
                 "as transposed core matrices": read_as_transposed_core_matrices}
UNSWIZZLED_READ = "wrong-products:unswizzled operand read "  # the signature's head where a pattern explains them


def unswizzled_operands(params: Mapping[str, Any]) -> tuple[bool, bool]:
    """Whether A, and whether B, is an unswizzled operand in shared memory (A from registers is in none)."""
    return params["a_swizzle"] == 0 and not params["a_in_regs"], params["b_swizzle"] == 0


def unswizzled_read(params: Mapping[str, Any], a: np.ndarray, b: np.ndarray, c: np.ndarray, d: np.ndarray) -> str | None:
    """The name of the read pattern (``READ_PATTERNS``) that, applied to each unswizzled operand in shared memory,
    gives exactly the products ``d``; None when none does."""
    a_unswizzled, b_unswizzled = unswizzled_operands(params)
    for name, read in READ_PATTERNS.items():
        seen_a, seen_b = a, b
        if a_unswizzled:
            k_major = not params["a_mn_major"]
            seen_a = stored_rows(read(stored_rows(a, k_major)), k_major)
        if b_unswizzled:
            seen_b = stored_rows(read(stored_rows(b, not params["b_k_major"])), not params["b_k_major"])
        if np.array_equal(seen_a @ seen_b + (c if params["use_acc"] else 0), d):
            return name
    return None


class TritonWgmma(GluonKernelTarget):
    name = "triton.wgmma"
    layer = "Triton's lowering (warpgroup_mma)"
    description = "Gluon warpgroup_mma on the GPU over random operand layouts and type pairs vs exact integer products"
    requires = ("cuda device sm_90a", "triton", "ml_dtypes")
    needs = ("triton", "cuda.core", "ml_dtypes")
    prebuilt = True  # its kernel takes only pointers: compiled ahead or cached, launched through cuda.core

    def parameter_space(self) -> Space:
        """Every parameter this target draws with its legal range."""
        return triton_wgmma_space()

    def generate(self, source: Source) -> dict[str, Any]:
        a_dtype, b_dtype = source.choice(tuple(STORAGE)), source.choice(tuple(STORAGE))
        ints = {"i8", "i16", "i32"}
        mma = source.choice(tuple(m for m in MMA_BITS if m != "i8" or {a_dtype, b_dtype} <= ints))
        bits = MMA_BITS[mma]
        acc = source.choice(ACCUMULATORS[mma])
        num_warps = source.choice((4, 8))
        warps = [4, 1] if num_warps == 4 else list(source.choice(([8, 1], [4, 2])))
        M = source.choice((64, 128)) if warps[0] == 4 else 128
        instr_n = source.choice((8, 16, 32, 64, 128, 256))
        N = min(256, instr_n * warps[1] * source.choice((1, 2)))
        instr_n = min(instr_n, N // warps[1])
        k_instr = 256 // bits
        K = k_instr * source.choice((1, 2, 4))
        transposable = bits == 16  # wgmma reads MN-major operands only for 16-bit types (PTX 9.7.15.5.1)
        a_in_regs = source.choice((False, True))
        a_mn_major = transposable and not a_in_regs and source.choice((False, True))
        b_k_major = source.choice((False, True)) if transposable and N * bits // 8 >= min(SWIZZLES) else True
        a_row = (M if a_mn_major else K) * bits // 8
        b_row = (K if b_k_major else N) * bits // 8
        return {"a_dtype": a_dtype, "b_dtype": b_dtype, "mma": mma, "acc": acc, "M": M, "N": N, "K": K,
                "num_warps": num_warps, "warps_per_cta": warps, "instr_n": instr_n,
                "a_swizzle": source.choice(swizzles(bits, a_row)), "b_swizzle": source.choice(swizzles(bits, b_row)),
                "a_in_regs": a_in_regs, "a_mn_major": a_mn_major, "b_k_major": b_k_major,
                "use_acc": source.choice((True, False))}

    def validate(self, case: Case) -> None:
        """The generator's rules (swizzles of 32-128 bytes, M of 64 or 128, N up to 256, K of 1-4
        instructions, 4 or 8 warps as [4, 1], [8, 1] or [4, 2]) and what wgmma accepts."""
        p = case.params
        if p.get("a_swizzle") not in ALL_SWIZZLES or p.get("b_swizzle") not in ALL_SWIZZLES:
            raise ValueError(f"operand swizzles are one of {ALL_SWIZZLES}")
        if p.get("M") not in (64, 128) or not 8 <= p.get("N", 0) <= 256 or p.get("instr_n") not in (8, 16, 32, 64, 128, 256):
            raise ValueError("M is 64 or 128, N from 8 to 256, instr_n a power of two from 8 to 256")
        if (p.get("num_warps"), list(p.get("warps_per_cta", []))) not in ((4, [4, 1]), (8, [8, 1]), (8, [4, 2])):
            raise ValueError("4 warps as [4, 1], or 8 as [8, 1] or [4, 2]")
        if p.get("mma") in MMA_BITS and p.get("K") not in [256 // MMA_BITS[p["mma"]] * k for k in (1, 2, 4)]:
            raise ValueError("K is 1, 2 or 4 instructions deep")
        if p["a_dtype"] not in STORAGE or p["b_dtype"] not in STORAGE or p["mma"] not in MMA_BITS:
            raise ValueError(f"types: storage one of {sorted(STORAGE)}, mma one of {sorted(MMA_BITS)}")
        if p["acc"] not in ACCUMULATORS[p["mma"]]:
            raise ValueError(f"{p['mma']} accumulates in {ACCUMULATORS[p['mma']]}, not {p['acc']}")
        bits = MMA_BITS[p["mma"]]
        if bits != 16 and (p["a_mn_major"] or not p["b_k_major"]):
            raise ValueError("wgmma reads MN-major operands only for 16-bit types")
        if p["K"] % (256 // bits) or p["M"] % (16 * p["warps_per_cta"][0]) or p["N"] % (p["instr_n"] * p["warps_per_cta"][1]):
            raise ValueError("M, N, K must be multiples of the instruction shape times the warps")
        a_row = (p["M"] if p["a_mn_major"] else p["K"]) * bits // 8
        b_row = (p["K"] if p["b_k_major"] else p["N"]) * bits // 8
        if p["a_swizzle"] not in swizzles(bits, a_row) or p["b_swizzle"] not in swizzles(bits, b_row):
            raise ValueError("a swizzle is wider than its operand's contiguous rows, or an unswizzled operand is not "
                             f"16-bit with {UNSWIZZLED_ROW_BYTES}-byte rows")
        if (p["M"] * p["K"] + p["K"] * p["N"]) * bits // 8 > SMEM_BYTES:
            raise ValueError("the operands do not fit the shared-memory budget")

    def shrink(self, case: Case) -> Iterator[dict[str, Any]]:
        """A smaller N (with its instruction N), K or M, 4 warps, narrower swizzles; ``validate`` keeps
        the generator's rules."""
        p = case.params
        if p["N"] > 8:
            yield replaced(p, N=p["N"] // 2, instr_n=min(p["instr_n"], p["N"] // 2 // p["warps_per_cta"][1]))
        if p["instr_n"] > 8:
            yield replaced(p, instr_n=p["instr_n"] // 2)
        if p["K"] > 256 // MMA_BITS[p["mma"]]:
            yield replaced(p, K=p["K"] // 2)
        if p["M"] > 64:
            yield replaced(p, M=p["M"] // 2)
        if p["num_warps"] == 8:
            yield replaced(p, num_warps=4, warps_per_cta=[4, 1], M=64)
        for key in ("a_swizzle", "b_swizzle"):
            if p[key] > min(SWIZZLES):
                yield replaced(p, **{key: p[key] // 2})

    def family(self, case: Case) -> str:
        return f"{case.params.get('a_dtype', '?')}/{case.params.get('b_dtype', '?')}"

    def expected(self, case: Case) -> Any:
        a, b, c = operand_data(case)
        d = a @ b + (c if case.params["use_acc"] else 0)
        return d.reshape(-1).tolist()

    def constexprs(self, p: Mapping[str, Any]) -> dict[str, Any]:
        """The kernel's layouts and flags for case ``p`` (also used to compile it on a CPU)."""
        from triton.experimental.gluon import language as ttgl

        bits = MMA_BITS[p["mma"]]
        mma = {"f16": ttgl.float16, "bf16": ttgl.bfloat16, "tf32": ttgl.float32, "e4m3": ttgl.float8e4nv,
               "e5m2": ttgl.float8e5, "i8": ttgl.int8}[p["mma"]]
        acc = ttgl.NVMMADistributedLayout([3, 0], list(p["warps_per_cta"]), [16, p["instr_n"], 256 // bits])
        return {"M": p["M"], "N": p["N"], "K": p["K"], "MMA": mma, "ROUND": "rtne" if p["mma"] not in ("tf32", "i8") else None,
                "ACC": acc, "LOAD": ttgl.BlockedLayout([1, 4], [4, 8], [p["num_warps"], 1], [1, 0]),
                "A_SMEM": ttgl.NVMMASharedLayout(p["a_swizzle"], bits, 2), "B_SMEM": ttgl.NVMMASharedLayout(p["b_swizzle"], bits, 2),
                "A_IN_REGS": p["a_in_regs"], "K_WIDTH": 32 // bits, "A_MN_MAJOR": p["a_mn_major"],
                "B_K_MAJOR": p["b_k_major"], "USE_ACC": p["use_acc"], "POISON": poison(p["mma"]),
                "POISON_INT": getattr(ttgl, f"int{bits}")}

    def kernel_spec(self, case: Case) -> KernelSpec:
        from layoutfuzz.gpu.gluon_probes import wgmma_probe

        p = case.params
        kinds = (p["a_dtype"], p["b_dtype"], p["acc"], p["acc"])
        signature = {name: "*" + STORAGE[kind][1] for name, kind in zip(("a_ptr", "b_ptr", "c_ptr", "d_ptr"), kinds)}
        return KernelSpec(wgmma_probe, signature, self.constexprs(p), p["num_warps"])

    def run(self, case: Case) -> Any:
        """D's elements as integers (None for a NaN: a product of poison) after one launch: the kernel compiled ahead
        or cached, through cuda.core on NumPy's buffers, else Triton's JIT on torch's; inputs between their type's
        poison, D between canaries (a write past it is a crash)."""
        p = case.params
        a, b, c = operand_data(case)
        values = [(x.astype(np.float32).astype(numpy_type(kind)), name) for x, kind, name in
                  ((a, p["a_dtype"], "A"), (b, p["b_dtype"], "B"), (c, p["acc"], "C"), (np.zeros_like(c), p["acc"], "D"))]
        kernel = self.kernel_for(case)
        d = self._run_jit(case, values) if kernel is None else self._run_kernel(kernel, values)
        d = d.astype(np.float64).reshape(-1)
        return [None if np.isnan(x) else int(x) for x in d]

    def _run_kernel(self, kernel: Any, values: list[tuple[np.ndarray, str]]) -> np.ndarray:
        from layoutfuzz.gpu.device_arrays import device_input, device_output

        stream = cubin_launcher().stream
        *inputs, (d, name) = values
        arrays = [device_input(x, name, stream) for x, name in inputs] + [device_output(d, name, stream)]
        cubin_launcher().launch(kernel, *arrays)
        return arrays[-1].read(stream)

    def _run_jit(self, case: Case, values: list[tuple[np.ndarray, str]]) -> np.ndarray:
        import torch

        from layoutfuzz.gpu.guards import guarded_input, guarded_output

        def tensor(x: np.ndarray, name: str, guard: Any) -> Any:
            kind = next(k for k, n in NUMPY_TYPES.items() if n == x.dtype.name)
            on_device = torch.from_numpy(x.view(f"int{x.dtype.itemsize * 8}")).view(getattr(torch, STORAGE[kind][0])).cuda()
            return guard(on_device, name)

        *inputs, (d, name) = values
        guarded = [tensor(x, name, guarded_input) for x, name in inputs] + [tensor(d, name, guarded_output)]
        spec = self.kernel_spec(case)
        self.launch(spec.kernel, *(g.tensor for g in guarded), num_warps=spec.num_warps, **spec.constexprs)
        guarded[-1].check()
        return guarded[-1].tensor.cpu().view(getattr(torch, f"int{d.dtype.itemsize * 8}")).numpy().view(d.dtype)

    def reproducer_script(self, case: Case) -> str | None:
        """The probe written out (``gluon_probes.wgmma_probe`` and its helpers: each shared operand between guard
        buffers of poison), its layouts and types as literals, launched through Triton's JIT on torch tensors of the
        storage types; expected: A @ B (+ C) of the small integers, exact in every type and accumulator (the target's
        own comparison). A refusal is the finding, except for an unswizzled operand, which releases before 3.8.0 do
        not lower (exit 2 there). Needs a GPU (``gpu.script_parts``)."""
        return wgmma_script(case)

    def problem_script(self, case: Case, signature: str) -> str | None:
        """The reproducer, exiting 1 only while the products are exactly those of the problem's read pattern (the
        signature names it, ``unswizzled_read``): one case shows a pattern in some releases and another in others."""
        read = signature.partition(UNSWIZZLED_READ)[2]
        return wgmma_script(case, read if read in READ_PATTERNS else None)

    def compare_results(self, case: Case, expected: Any, observed: Any) -> Comparison:
        """The products element by element; a NaN among them (a float MMA that read an operand's guard zone) is its own
        root cause."""
        want = np.asarray(expected, dtype=np.float64)
        got = np.asarray([np.nan if x is None else x for x in observed], dtype=np.float64)
        bad = np.flatnonzero(want != got)
        if bad.size == 0:
            return Comparison(True)
        n = case.params["N"]
        lines = tuple(f"D[{i // n}, {i % n}]: expected {int(want[i])} got {got[i]:g}" for i in bad[:8])
        rows, cols = len({int(i) // n for i in bad}), len({int(i) % n for i in bad})
        if np.isnan(got).any():
            return Comparison(False, int(bad.size), lines, "poisoned-products",
                              f"{int(np.isnan(got).sum())} products NaN: the MMA read a guard zone beside an operand in "
                              f"shared memory ({bad.size} of {want.size} products wrong)")
        p, how = case.params, f"{bad.size} of {want.size} products wrong, in {rows} rows and {cols} columns"
        read = unswizzled_read(p, *operand_data(case), got.reshape(p["M"], n)) if any(unswizzled_operands(p)) else None
        if read is not None:
            return Comparison(False, int(bad.size), lines, f"{UNSWIZZLED_READ}{read}",
                              f"{how}: exactly the products of the unswizzled operand read {read}")
        return Comparison(False, int(bad.size), lines, f"wrong-products:{'all' if bad.size == want.size else 'some'}"
                          f"{':unswizzled operand' if 0 in (p['a_swizzle'], p['b_swizzle']) else ''}", how)


def wgmma_script(case: Case, read: str | None = None) -> str:
    """``TritonWgmma.reproducer_script``; where an operand is unswizzled, the script also names the read pattern that
    gives the products it saw, and with ``read`` (a ``READ_PATTERNS`` name) is about that pattern alone."""
    from layoutfuzz.gpu import gluon_probes
    from layoutfuzz.gpu.script_parts import gpu_script, source_of

    p = case.params
    bits = MMA_BITS[p["mma"]]
    mma = {"f16": "float16", "bf16": "bfloat16", "tf32": "float32", "e4m3": "float8e4nv", "e5m2": "float8e5",
           "i8": "int8"}[p["mma"]]
    rounding = "rtne" if p["mma"] not in ("tf32", "i8") else None
    layouts = [f"MMA = ttgl.{mma}",
               f"ACC = ttgl.NVMMADistributedLayout([3, 0], {list(p['warps_per_cta'])!r}, [16, {p['instr_n']}, {256 // bits}])",
               f"LOAD = ttgl.BlockedLayout([1, 4], [4, 8], [{p['num_warps']}, 1], [1, 0])",
               f"A_SMEM = ttgl.NVMMASharedLayout({p['a_swizzle']}, {bits}, 2)",
               f"B_SMEM = ttgl.NVMMASharedLayout({p['b_swizzle']}, {bits}, 2)",
               f"POISON_INT = ttgl.int{bits}"]
    flags = (f"M={p['M']}, N={p['N']}, K={p['K']}, MMA=MMA, ROUND={rounding!r}, ACC=ACC, LOAD=LOAD, A_SMEM=A_SMEM, "
             f"B_SMEM=B_SMEM, A_IN_REGS={p['a_in_regs']}, K_WIDTH={32 // bits}, A_MN_MAJOR={p['a_mn_major']}, "
             f"B_K_MAJOR={p['b_k_major']}, USE_ACC={p['use_acc']}, POISON={poison(p['mma'])}, POISON_INT=POISON_INT, "
             f"num_warps={p['num_warps']}")
    torch_type = {k: f"torch.{v[0]}" for k, v in STORAGE.items()}
    unswizzled = 0 in (p["a_swizzle"], p["b_swizzle"])
    where_a = "registers" if p["a_in_regs"] else f"shared memory ({'MN' if p['a_mn_major'] else 'K'}-major, swizzle {p['a_swizzle']})"
    return gpu_script(
        doc=(f"Gluon's warpgroup_mma (D = A @ B{' + C' if p['use_acc'] else ''}, M x N x K = {p['M']} x {p['N']} x "
             f"{p['K']}) in {p['mma']} with a {p['acc']} accumulator, instruction N = {p['instr_n']}, warps "
             f"{p['warps_per_cta']}: A ({p['a_dtype']} in memory) from {where_a}, B ({p['b_dtype']}) from shared memory "
             f"({'K' if p['b_k_major'] else 'MN'}-major, swizzle {p['b_swizzle']}); each shared operand sits between two "
             "buffers of poison (a NaN or a large integer), so an MMA that reads past it shows. The operands are small "
             "integers (|a|, |b| <= 4, |c| <= 16), exact in every type, so D must equal the integer product exactly."),
        child_imports="from triton.experimental.gluon.language.nvidia.hopper import fence_async_shared, warpgroup_mma",
        kernel=source_of(gluon_probes._offsets_2d, gluon_probes._to_mma, gluon_probes._guarded_operand,
                         gluon_probes.wgmma_probe),
        layouts=layouts,
        launch=[f'a = on_gpu(inputs["a"], {torch_type[p["a_dtype"]]})', f'b = on_gpu(inputs["b"], {torch_type[p["b_dtype"]]})',
                f'c = on_gpu(inputs["c"], {torch_type[p["acc"]]})', "d = torch.zeros_like(c)",
                f"launch(wgmma_probe, a, b, c, d, {flags})",
                'outputs = {"d": d.to(torch.float64).cpu().numpy()}'],
        inputs=[f"rng = np.random.default_rng([{case.seed}, {case.index}])",
                f"a = rng.integers(-{VALUE_RANGE}, {VALUE_RANGE + 1}, ({p['M']}, {p['K']})).astype(np.float32)",
                f"b = rng.integers(-{VALUE_RANGE}, {VALUE_RANGE + 1}, ({p['K']}, {p['N']})).astype(np.float32)",
                f"c = rng.integers(-16, 17, ({p['M']}, {p['N']})).astype(np.float32)",
                'return {"a": a, "b": b, "c": c}'],
        expected=['a, b, c = (inputs[k].astype(np.int64) for k in "abc")',
                  f'return {{"d": a @ b{" + c" if p["use_acc"] else ""}}}  # exact: small integers'],
        expected_text=f"D = A @ B{' + C' if p['use_acc'] else ''} exactly ({p['M']} x {p['N']} integer products)",
        diagnosis=read_diagnosis(p) if unswizzled else "",
        problem=f"the unswizzled operand read {read}" if read else None,
        refusal_exit=2 if unswizzled else 1,
        refusal_note=(" (releases before 3.8.0 do not lower warpgroup_mma from an unswizzled operand: the products "
                      "cannot be checked here)") if unswizzled else "")


def read_diagnosis(p: Mapping[str, Any]) -> str:
    """The script's ``diagnose``: ``unswizzled_read`` and its patterns written out, over the case's params."""
    from layoutfuzz.gpu.script_parts import source_of

    keys = ("a_swizzle", "b_swizzle", "a_in_regs", "a_mn_major", "b_k_major", "use_acc")
    patterns = ", ".join(f"{name!r}: {read.__name__}" for name, read in READ_PATTERNS.items())
    return "\n\n".join([
        source_of(stored_rows, read_with_32_byte_swizzle, read_as_transposed_core_matrices).strip(),
        f"READ_PATTERNS = {{{patterns}}}",
        source_of(unswizzled_operands, unswizzled_read).strip(),
        "def diagnose(inputs, got):\n"
        "    # which misread of the unswizzled operand gives exactly these products (None: none of READ_PATTERNS)\n"
        f"    params = {({k: p[k] for k in keys})!r}\n"
        '    a, b, c = (inputs[k].astype(np.int64) for k in "abc")\n'
        '    d = np.asarray(got["d"], np.float64).reshape(len(a), len(b[0]))\n'
        "    if np.isnan(d).any():\n"
        "        return None\n"
        "    read = unswizzled_read(params, a, b, c, d.astype(np.int64))\n"
        '    return None if read is None else f"the unswizzled operand read {read}"\n'])


def triton_wgmma_space() -> Space:
    """``triton.wgmma``: one Gluon warpgroup_mma over operands in swizzled shared memory (A possibly in registers)."""
    gluon = "Gluon: warpgroup_mma, NVMMADistributedLayout v3, NVMMASharedLayout"
    ptx = "PTX ISA 9.7.15.5: wgmma.mma_async"

    def illegal(a: str, x: Any, b: str, y: Any) -> bool:
        pair = {a: x, b: y}
        if "accumulator" in pair and "mma type" in pair:
            return pair["accumulator"] not in {"f16": ("f32", "f16"), "i8": ("i32",)}.get(pair["mma type"], ("f32",))
        if "A major" in pair and "mma type" in pair:  # only 16-bit types are read MN-major
            return pair["A major"] == "MN" and pair["mma type"] not in ("f16", "bf16")
        if "B major" in pair and "mma type" in pair:
            return pair["B major"] == "MN" and pair["mma type"] not in ("f16", "bf16")
        for swizzle in ("A swizzle", "B swizzle"):  # unswizzled operands: 16-bit types (and 32-byte rows)
            if swizzle in pair and "mma type" in pair:
                return pair[swizzle] == 0 and pair["mma type"] not in ("f16", "bf16")
        if "A from registers" in pair and "A major" in pair:  # registers hold A K-major
            return pair["A from registers"] == "yes" and pair["A major"] == "MN"
        if "warps" in pair and "M" in pair:  # [8, 1] warps need M = 128
            return False
        return False

    return Space((
        Parameter("mma type", ("f16", "bf16", "tf32", "e4m3", "e5m2", "i8"), f"{ptx}: .atype/.btype (Triton's dot types)",
                  lambda p: p["mma"]),
        Parameter("accumulator", ("f32", "f16", "i32"), f"{ptx}: .dtype", lambda p: p["acc"]),
        Parameter("M", (64, 128), f"{gluon}: warps_per_cta [4, 1] (64 rows a warpgroup) or [8, 1] / [4, 2]", lambda p: p["M"]),
        Parameter("instr N", (8, 16, 32, 64, 128, 256), f"{ptx}: .m64nNk shapes (Triton picks a power of two)",
                  lambda p: p["instr_n"]),
        Parameter("warps", (4, 8, 16, 32), f"{gluon}: whole warpgroups", lambda p: p["num_warps"],
                  {16: "a tile of at most 128 x 256: more warpgroups than its rows and columns need",
                   32: "a tile of at most 128 x 256: more warpgroups than its rows and columns need"}),
        Parameter("A from registers", ("no", "yes"), f"{ptx}: A from registers or shared memory",
                  lambda p: "yes" if p["a_in_regs"] else "no"),
        Parameter("A major", ("K", "MN"), f"{ptx}: imm-trans-a", lambda p: "MN" if p["a_mn_major"] else "K"),
        Parameter("B major", ("K", "MN"), f"{ptx}: imm-trans-b", lambda p: "K" if p["b_k_major"] else "MN"),
        Parameter("A swizzle", ALL_SWIZZLES, f"{gluon}: NVMMASharedLayout.swizzle_byte_width (0: 16-bit, 32-byte rows)",
                  lambda p: p["a_swizzle"]),
        Parameter("B swizzle", ALL_SWIZZLES, f"{gluon}: NVMMASharedLayout.swizzle_byte_width (0: 16-bit, 32-byte rows)",
                  lambda p: p["b_swizzle"]),
        Parameter("use accumulator", ("no", "yes"), f"{ptx}: scale-d", lambda p: "yes" if p["use_acc"] else "no"),
    ), illegal)
