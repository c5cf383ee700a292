"""Gluon's warpgroup_mma (D = A @ B, M x N x K = 64 x 8 x 16) in bf16 with a f32 accumulator, instruction N = 8, warps [4, 1]: A (f32 in memory) from registers, B (e5m2) from shared memory (K-major, swizzle 0); each shared operand sits between two buffers of poison (a NaN or a large integer), so an MMA that reads past it shows. The operands are small integers (|a|, |b| <= 4, |c| <= 16), exact in every type, so D must equal the integer product exactly.

Needs Triton, torch, NumPy and a CUDA GPU of compute capability 9.0 (Hopper). Exits 1 while the problem shows, 0 once it is gone, 2 where it cannot run here."""
from __future__ import annotations  # the diagnosis' type hints stay text

import json
import os
import subprocess
import sys
import tempfile

import numpy as np

NEEDS_CUDA_CAPABILITY = (9, 0)  # Hopper (sm_90a)
TIMEOUT_S = 300  # one tile: seconds to compile and run; past this the kernel hangs
REFUSAL = 2  # the exit code where Triton refuses to compile the kernel
REFUSAL_NOTE = ' (releases before 3.8.0 do not lower warpgroup_mma from an unswizzled operand: the products cannot be checked here)'
EXPECTED = 'D = A @ B exactly (64 x 8 integer products)'

CHILD = r'''
import json
import os
import re
import sys

import numpy as np


def answer(**said):
    # what the kernel did, one line for the parent; then out at once (after a device fault no teardown may hang)
    print("ANSWER", json.dumps(said), flush=True)
    sys.stderr.flush()
    os._exit(0)


try:
    import torch
    import triton
    from triton.experimental import gluon
    from triton.experimental.gluon import language as ttgl
except ImportError as exc:
    answer(no_gpu=f"{exc}")
if not torch.cuda.is_available() or torch.cuda.get_device_capability() < NEEDS:
    answer(no_gpu=f"no CUDA GPU of compute capability {NEEDS[0]}.{NEEDS[1]} here")
FAULT = re.compile(r"CUDA error|CUDA_ERROR|\[CUDA\]|illegal (memory access|instruction|address)|misaligned address")


def launch(kernel, *args, **kwargs):
    # kernel[(1,)](...) through Triton's JIT (it compiles first: an error there is a refusal), then a synchronize
    try:
        kernel[(1,)](*args, **kwargs)
    except Exception as exc:
        text = f"{type(exc).__name__}: {exc}"
        lines = [line.strip() for line in str(exc).strip().splitlines() if line.strip()] or [type(exc).__name__]
        if FAULT.search(text):
            answer(fault=lines[-1][:300])
        answer(refused=f"{type(exc).__name__}: {lines[-1][:300]}")
    try:
        torch.cuda.synchronize()
    except Exception as exc:
        answer(fault=(str(exc).strip().splitlines() or [type(exc).__name__])[0][:300])


def on_gpu(array, dtype=None):
    # a NumPy array as a contiguous torch tensor on the GPU (converted to ``dtype`` there, where given)
    tensor = torch.from_numpy(np.ascontiguousarray(array)).cuda()
    return tensor if dtype is None else tensor.to(dtype)
from triton.experimental.gluon.language.nvidia.hopper import fence_async_shared, warpgroup_mma


@gluon.jit
def _offsets_2d(L: ttgl.constexpr, S0: ttgl.constexpr, S1: ttgl.constexpr):
    i = ttgl.arange(0, S0, layout=ttgl.SliceLayout(1, L))
    j = ttgl.arange(0, S1, layout=ttgl.SliceLayout(0, L))
    return ttgl.expand_dims(i, 1) * S1 + ttgl.expand_dims(j, 0)


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


inputs = dict(np.load(os.path.join(sys.argv[1], "inputs.npz")))
try:
    MMA = ttgl.bfloat16
    ACC = ttgl.NVMMADistributedLayout([3, 0], [4, 1], [16, 8, 16])
    LOAD = ttgl.BlockedLayout([1, 4], [4, 8], [4, 1], [1, 0])
    A_SMEM = ttgl.NVMMASharedLayout(32, 16, 2)
    B_SMEM = ttgl.NVMMASharedLayout(0, 16, 2)
    POISON_INT = ttgl.int16
except (TypeError, AttributeError) as exc:  # a class or argument this release lacks
    answer(unavailable=f"{type(exc).__name__}: {exc}")
a = on_gpu(inputs["a"], torch.float32)
b = on_gpu(inputs["b"], torch.float8_e5m2)
c = on_gpu(inputs["c"], torch.float32)
d = torch.zeros_like(c)
launch(wgmma_probe, a, b, c, d, M=64, N=8, K=16, MMA=MMA, ROUND='rtne', ACC=ACC, LOAD=LOAD, A_SMEM=A_SMEM, B_SMEM=B_SMEM, A_IN_REGS=True, K_WIDTH=2, A_MN_MAJOR=False, B_K_MAJOR=True, USE_ACC=False, POISON=32704, POISON_INT=POISON_INT, num_warps=4)
outputs = {"d": d.to(torch.float64).cpu().numpy()}
np.savez(os.path.join(sys.argv[1], "outputs.npz"), **outputs)
answer(done=True)
'''


def make_inputs():
    rng = np.random.default_rng([20261129, 59])
    a = rng.integers(-4, 5, (64, 16)).astype(np.float32)
    b = rng.integers(-4, 5, (16, 8)).astype(np.float32)
    c = rng.integers(-16, 17, (64, 8)).astype(np.float32)
    return {"a": a, "b": b, "c": c}


def expected(inputs):
    a, b, c = (inputs[k].astype(np.int64) for k in "abc")
    return {"d": a @ b}  # exact: small integers


PROBLEM = 'the unswizzled operand read as transposed core matrices'  # what this report is about (diagnose's name for it)


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

READ_PATTERNS = {'with a 32-byte swizzle': read_with_32_byte_swizzle, 'as transposed core matrices': read_as_transposed_core_matrices}

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

def diagnose(inputs, got):
    # which misread of the unswizzled operand gives exactly these products (None: none of READ_PATTERNS)
    params = {'a_swizzle': 32, 'b_swizzle': 0, 'a_in_regs': True, 'a_mn_major': False, 'b_k_major': True, 'use_acc': False}
    a, b, c = (inputs[k].astype(np.int64) for k in "abc")
    d = np.asarray(got["d"], np.float64).reshape(len(a), len(b[0]))
    if np.isnan(d).any():
        return None
    read = unswizzled_read(params, a, b, c, d.astype(np.int64))
    return None if read is None else f"the unswizzled operand read {read}"


def finish(observed, code):
    print("observed:", observed)
    sys.exit(code)


def main():
    inputs = make_inputs()
    want = expected(inputs)
    print("triton", triton_version(), "| torch", torch_version())
    print("expected:", EXPECTED)
    folder = tempfile.mkdtemp()
    np.savez(os.path.join(folder, "inputs.npz"), **inputs)
    child_file = os.path.join(folder, "kernel.py")  # a file: Gluon reads a kernel's source
    with open(child_file, "w") as file:
        file.write(f"NEEDS = {NEEDS_CUDA_CAPABILITY!r}\n" + CHILD)
    fresh = {**os.environ, "TRITON_ALWAYS_COMPILE": "1", "TRITON_CACHE_DIR": tempfile.mkdtemp()}  # compile each run
    try:
        child = subprocess.run([sys.executable, child_file, folder], capture_output=True, text=True, env=fresh,
                               timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        finish(f"no answer in {TIMEOUT_S} s (the kernel hangs, or Triton compiles it for minutes)", 1)
    line = next((x[len("ANSWER "):] for x in child.stdout.splitlines() if x.startswith("ANSWER ")), None)
    said = json.loads(line) if line else {}
    tail = [x for x in child.stderr.strip().splitlines() if x.strip()] or [""]
    why = next((x for x in tail if "ssert" in x or "ERROR" in x or "error:" in x), tail[-1]).strip()[:300]
    if line is None:
        died = child.returncode < 0 or child.returncode > 128
        finish(f"the process died (rc {child.returncode}): {why}" if died else f"cannot run here: {why}", 1 if died else 2)
    if "no_gpu" in said:
        finish(f"cannot run here: {said['no_gpu']}", 2)
    if "unavailable" in said:
        finish(f"this release lacks what the case needs: {said['unavailable']}", 2)
    if "fault" in said:
        finish(f"the kernel faulted: {said['fault']}", 1)
    if "refused" in said:
        finish(f"Triton refused the kernel{REFUSAL_NOTE if REFUSAL == 2 else ''}: {said['refused']}"
               + (f" ({why})" if why and why not in said["refused"] else ""), REFUSAL)
    got = dict(np.load(os.path.join(folder, "outputs.npz")))
    wrong = []
    for name, values in want.items():
        w, g = np.asarray(values, np.float64).ravel(), np.asarray(got[name], np.float64).ravel()
        bad = np.flatnonzero(~((w == g) | (np.isnan(w) & np.isnan(g))))
        if bad.size:
            shown = ", ".join(f"{name}{[int(k) for k in np.unravel_index(i, np.shape(values))]} = {g[i]:g} (expected {w[i]:g})"
                              for i in bad[:6])
            wrong.append(f"{bad.size} of {w.size} elements of {name} wrong: {shown}")
    seen = diagnose(inputs, got) if wrong else None
    if seen is not None:
        wrong.append(f"exactly the answer of {seen}")
    if wrong and PROBLEM is not None and seen != PROBLEM:
        finish("; ".join(wrong) + f"; this report's problem ({PROBLEM}) is gone: the answer is wrong another way", 0)
    finish("; ".join(wrong) if wrong else "as expected", 1 if wrong else 0)


def triton_version():
    try:
        return __import__("triton").__version__
    except ImportError:
        return "(not installed)"


def torch_version():
    try:
        return __import__("torch").__version__
    except ImportError:
        return "(not installed)"


if __name__ == "__main__":
    main()
