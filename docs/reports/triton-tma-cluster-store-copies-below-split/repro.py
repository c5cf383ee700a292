"""A Gluon TMA store over a cluster: a 2 x 8 block of int16 at [0, 0] of a 3 x 5 tensor (rows padded by 11 elements), NVMMA shared layout of swizzle 0 split over a cluster of 4 CTAs (CGA bases [[0, 0], [1, 0]]: copies, rows), buffer 0 of 1 in one allocation, 8 warps. Each CTA writes its part of the block into the buffer and TMA-stores it; the tensor must then hold the block where the block lies inside it and keep every other byte (the TMA unit writes the whole 16-byte granule that holds the innermost bound: that much past the bound is the hardware's, see https://github.com/triton-lang/triton/issues/11583).

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
EXPECTED = 'the tensor holds the 2 x 8 block at [0, 0] (clipped to the tensor) and nothing else'

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
from triton.experimental.gluon.language.nvidia.hopper import fence_async_shared, mbarrier, tma
from triton.experimental.gluon.nvidia.hopper import TensorDescriptor


@gluon.constexpr_function
def _own_layout(num_ctas):
    """3.6.0's layout of a one-element barrier held once by each of ``num_ctas`` CTAs."""
    return mbarrier.MBarrierLayout(cga_layout=[[1 << k] for k in range(int(num_ctas).bit_length() - 1)])


@gluon.jit
def _barrier_of_each_cta_3_6():
    layout: ttgl.constexpr = _own_layout(ttgl.num_ctas())
    return ttgl.allocate_shared_memory(ttgl.int64, [1], layout)


@gluon.jit
def _nothing():
    pass


@gluon.jit
def _offsets_2d(L: ttgl.constexpr, S0: ttgl.constexpr, S1: ttgl.constexpr):
    i = ttgl.arange(0, S0, layout=ttgl.SliceLayout(1, L))
    j = ttgl.arange(0, S1, layout=ttgl.SliceLayout(0, L))
    return ttgl.expand_dims(i, 1) * S1 + ttgl.expand_dims(j, 0)


# names that differ between releases: the TMA copies (renamed in 3.8.0), a barrier of each CTA's own
# (mbarrier.allocate_mbarrier from 3.7.1; in 3.6.0 a one-element barrier whose CGA layout gives each CTA one)
tma_load = getattr(tma, "async_load", None) or tma.async_copy_global_to_shared
tma_store = getattr(tma, "async_store", None) or tma.async_copy_shared_to_global
barrier_of_each_cta = getattr(mbarrier, "allocate_mbarrier", None) or _barrier_of_each_cta_3_6
publish_barrier_init = getattr(mbarrier, "sync_cluster_init", None) or _nothing


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


inputs = dict(np.load(os.path.join(sys.argv[1], "inputs.npz")))
try:
    SHARED = ttgl.NVMMASharedLayout(0, 16, 2, cga_layout=[[0, 0], [1, 0]])
    L = ttgl.BlockedLayout([1, 8], [32, 1], [8, 1], [1, 0], cga_layout=[[0, 0], [1, 0]])
except (TypeError, AttributeError) as exc:  # a class or argument this release lacks
    answer(unavailable=f"{type(exc).__name__}: {exc}")
tensor = on_gpu(inputs["before"])
src = on_gpu(inputs["block"])
desc = TensorDescriptor(tensor, [3, 5], list(tensor.stride()), [2, 8], SHARED)
launch(tma_cluster_store_probe, desc, src, BUFFERS=1, SLOT=0, COORD=(0, 0), L=L, S0=2, S1=8, num_warps=8, num_ctas=4)
outputs = {"tensor": tensor.cpu().numpy()}
np.savez(os.path.join(sys.argv[1], "outputs.npz"), **outputs)
answer(done=True)
'''


def make_inputs():
    block = np.random.default_rng([0, 2483, 1]).integers(-32768, 32767, (2, 8), dtype=np.int16, endpoint=True)
    before = np.full((3, 32), 0x5A, np.uint8).view(np.int16)  # every byte 0x5A
    return {"block": block, "before": before}


def expected(inputs):
    tensor = inputs["before"].copy()
    reach = -(-5 * 2 // 16) * 16 // 2  # the 16-byte granule holding the innermost bound
    r1, c1 = min(3, 0 + 2), min(reach, 0 + 8)
    tensor[0:r1, 0:c1] = inputs["block"][:r1 - 0, :c1 - 0]
    return {"tensor": tensor}


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
