"""Gluon's atomic_xchg (acq_rel, scope gpu) of a 1 x 1 float32 tile held in a valid distributed layout (blocked, 4 warps). The tile holds small integers, so every result is exact: the output must equal NumPy's atomic_xchg bit for bit.

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
EXPECTED = "dst = NumPy's atomic_xchg (acq_rel, scope gpu) of the tile, exactly"

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


inputs = dict(np.load(os.path.join(sys.argv[1], "inputs.npz")))
try:
    A = ttgl.BlockedLayout(cga_layout=[], order=[1, 0], size_per_thread=[8, 2], threads_per_warp=[16, 2], warps_per_cta=[4, 1])
except (TypeError, AttributeError) as exc:  # a class or argument this release lacks
    answer(unavailable=f"{type(exc).__name__}: {exc}")
src = on_gpu(inputs["src"])
dst = torch.zeros_like(src)
launch(rank2_atomic_kernel, src, dst, M=1, N=1, A=A, OP='atomic_xchg', SEM='acq_rel', SCOPE='gpu', num_warps=4)
outputs = {"dst": dst.cpu().numpy()}
np.savez(os.path.join(sys.argv[1], "outputs.npz"), **outputs)
answer(done=True)
'''


def make_inputs():
    src = np.random.default_rng(693).integers(-4, 5, 1).astype(np.float32)
    return {"src": src}  # the tile, row-major


def expected(inputs):
    SHAPE, AXIS, REVERSE = (1, 1), 0, False
    x = inputs["src"].reshape(SHAPE)
    out = np.zeros(x.size, np.float32)  # what the kernel does not write stays zero
    offs = np.arange(x.size)
    out[:] = np.where(offs % 3 != 1, x.ravel() + 8, 0)  # x + 8 swapped in; old values (zeros) added back
    return {"dst": out}


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
