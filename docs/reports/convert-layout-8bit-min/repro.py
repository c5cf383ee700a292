"""Gluon's convert_layout of a 32 x 4 tensor of int8 between two distributed linear layouts (1 warp(s)): a conversion moves each element to the thread the second layout names and must not change it, so the tensor stored from layout B equals the one loaded in layout A. The kernel also records each element's holder (its thread) in A and in B; only the data is checked here.

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
EXPECTED = 'dst == src: the 128 int8 values unchanged by convert_layout'

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
def _tid_like(offsets):
    """Whoever holds each element of ``offsets`` (same layout), as a thread of the cluster: ``%tid.x`` plus the CTA's
    ``%cluster_ctarank`` times its threads (a kernel without a cluster is a cluster of one CTA: rank 0)."""
    return ttgl.inline_asm_elementwise(
        "{ .reg .u32 c, n, t; mov.u32 c, %cluster_ctarank; mov.u32 n, %ntid.x; mov.u32 t, %tid.x; mad.lo.u32 $0, c, n, t; }",
        "=r,r", [offsets], dtype=ttgl.int32, is_pure=False, pack=1)


@gluon.jit
def _offsets_2d(L: ttgl.constexpr, S0: ttgl.constexpr, S1: ttgl.constexpr):
    i = ttgl.arange(0, S0, layout=ttgl.SliceLayout(1, L))
    j = ttgl.arange(0, S1, layout=ttgl.SliceLayout(0, L))
    return ttgl.expand_dims(i, 1) * S1 + ttgl.expand_dims(j, 0)


@gluon.jit
def convert_probe_2d(src, dst, tid_a, tid_b, A: ttgl.constexpr, B: ttgl.constexpr, S0: ttgl.constexpr, S1: ttgl.constexpr):
    oa = _offsets_2d(A, S0, S1)
    x = ttgl.load(src + oa)
    ttgl.store(tid_a + oa, _tid_like(oa))
    y = ttgl.convert_layout(x, B)
    ob = _offsets_2d(B, S0, S1)
    ttgl.store(dst + ob, y)
    ttgl.store(tid_b + ob, _tid_like(ob))


inputs = dict(np.load(os.path.join(sys.argv[1], "inputs.npz")))
try:
    A = ttgl.DistributedLinearLayout([[1, 0], [16, 0]], [[0, 2], [8, 0], [0, 1], [2, 0], [4, 0]], [], [], [32, 4])
    B = ttgl.DistributedLinearLayout([[16, 0], [1, 0], [4, 0]], [[8, 0], [0, 1], [2, 0], [0, 0], [0, 2]], [], [], [32, 4])
except (TypeError, AttributeError) as exc:  # a class or argument this release lacks
    answer(unavailable=f"{type(exc).__name__}: {exc}")
src = on_gpu(inputs["src"])
dst = torch.zeros_like(src)
tid_a = torch.full(src.shape, -1, dtype=torch.int32, device=src.device)
tid_b = torch.full(src.shape, -1, dtype=torch.int32, device=src.device)
launch(convert_probe_2d, src, dst, tid_a, tid_b, A=A, B=B, S0=32, S1=4, num_warps=1)
outputs = {"dst": dst.cpu().numpy()}
np.savez(os.path.join(sys.argv[1], "outputs.npz"), **outputs)
answer(done=True)
'''


def make_inputs():
    values = np.random.default_rng(1319).integers(-128, 127, 128, dtype=np.int8)
    return {"src": values}  # row-major: element (i, j, ...) at its row-major offset


def expected(inputs):
    return {"dst": inputs["src"]}  # convert_layout changes where elements live, never their values


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
