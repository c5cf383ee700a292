"""A 8 x 8 int8 tile stored into Gluon shared memory in NVMMASharedLayout(swizzle_byte_width=0, element_bitwidth=8, rank=2, transposed=True, fp4_padded=False, cga_layout=[]), then read back through the buffer's permuted view (smem.permute([1, 0]), 8 x 8) in a distributed layout, 1 warps: the view must hold the tile transposed.

Needs Triton, torch, NumPy and a CUDA GPU of compute capability 9.0 (Hopper). Exits 1 while the problem shows, 0 once it is gone, 2 where it cannot run here."""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

NEEDS_CUDA_CAPABILITY = (9, 0)  # Hopper (sm_90a)
TIMEOUT_S = 300  # one tile: seconds to compile and run; past this the kernel hangs
REFUSAL = 1  # the exit code where Triton refuses to compile the kernel
REFUSAL_NOTE = ''
EXPECTED = 'dst = the 8 x 8 tile transposed (8 x 8), exactly'

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



@gluon.jit
def _offsets_2d(L: ttgl.constexpr, S0: ttgl.constexpr, S1: ttgl.constexpr):
    i = ttgl.arange(0, S0, layout=ttgl.SliceLayout(1, L))
    j = ttgl.arange(0, S1, layout=ttgl.SliceLayout(0, L))
    return ttgl.expand_dims(i, 1) * S1 + ttgl.expand_dims(j, 0)


@gluon.jit
def shared_permute_probe_2d(src, dst, A: ttgl.constexpr, B: ttgl.constexpr, S: ttgl.constexpr, S0: ttgl.constexpr,
                            S1: ttgl.constexpr):
    """Store an S0 x S1 tile from layout A into shared layout S, load its permuted view (S1 x S0) as B."""
    x = ttgl.load(src + _offsets_2d(A, S0, S1))
    smem = ttgl.allocate_shared_memory(src.dtype.element_ty, [S0, S1], S, x)
    y = smem.permute([1, 0]).load(B)
    ttgl.store(dst + _offsets_2d(B, S1, S0), y)


inputs = dict(np.load(os.path.join(sys.argv[1], "inputs.npz")))
try:
    A = ttgl.DistributedLinearLayout(reg_bases=[[2, 0], [0, 1], [0, 4]], lane_bases=[[0, 0], [4, 0], [0, 2], [0, 0], [1, 0]], warp_bases=[], block_bases=[], shape=[8, 8])
    B = ttgl.DistributedLinearLayout(reg_bases=[[0, 2]], lane_bases=[[0, 1], [2, 0], [1, 0], [4, 0], [0, 4]], warp_bases=[], block_bases=[], shape=[8, 8])
    S = ttgl.NVMMASharedLayout(swizzle_byte_width=0, element_bitwidth=8, rank=2, transposed=True, fp4_padded=False, cga_layout=[])
except (TypeError, AttributeError) as exc:  # a class or argument this release lacks
    answer(unavailable=f"{type(exc).__name__}: {exc}")
src = on_gpu(inputs["src"])
dst = torch.zeros_like(src)
launch(shared_permute_probe_2d, src, dst, A=A, B=B, S=S, S0=8, S1=8, num_warps=1)
outputs = {"dst": dst.cpu().numpy()}
np.savez(os.path.join(sys.argv[1], "outputs.npz"), **outputs)
answer(done=True)
'''


def make_inputs():
    src = np.arange(64, dtype=np.int64).astype(np.int8)  # each element its row-major index
    return {"src": src}


def expected(inputs):
    return {"dst": inputs["src"].reshape(8, 8).T.ravel()}  # the tile transposed, row-major


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
