"""A Gluon kernel a user writes (a histogram of 1024 bins of 2048 values in a valid layout), compiled
for sm_90a: it is expected to compile, within 15 s. Needs only Triton (no GPU)."""
import os
import subprocess
import sys
import tempfile

CHILD = r"""
import triton
from triton.backends.compiler import GPUTarget
from triton.experimental import gluon
from triton.experimental.gluon import language as ttgl
from triton.experimental.gluon._runtime import GluonASTSource


@gluon.jit
def histogram_kernel(src, dst, M: ttgl.constexpr, B: ttgl.constexpr, A: ttgl.constexpr, H: ttgl.constexpr):
    # a histogram of B bins of M int32 values in the 1-D layout A (the last one masked off), into the layout H
    offs = ttgl.arange(0, M, layout=A)
    counts = ttgl.histogram(ttgl.load(src + offs), B, mask=offs < M - 1, layout=H)
    ttgl.store(dst + ttgl.arange(0, B, layout=H), counts)


try:
    LAYOUT = ttgl.DistributedLinearLayout(block_bases=[], lane_bases=[[4], [1], [64], [0], [2]], reg_bases=[[32], [1024], [8], [16], [256], [128], [512], [0]], shape=[2048], warp_bases=[])
    DST_LAYOUT = ttgl.DistributedLinearLayout(block_bases=[], lane_bases=[[256], [32], [0], [16], [4]], reg_bases=[[1], [8], [64], [128], [512], [2], [0]], shape=[1024], warp_bases=[])
except (TypeError, AttributeError) as exc:  # a class or argument this release does not have
    print("unavailable:", exc)
    raise SystemExit(0)
constexprs = {'M': 2048, 'B': 1024, 'A': LAYOUT, 'H': DST_LAYOUT}
signature = {"src": "*i32", "dst": "*i32", **{k: "constexpr" for k in constexprs}}
try:
    triton.compile(GluonASTSource(histogram_kernel, signature, constexprs), target=GPUTarget("cuda", 90, 32),
                   options={"num_warps": 1, "num_ctas": 1})
    print("compiled")
except Exception as exc:
    chain = [exc]
    while (chain[-1].__cause__ or chain[-1].__context__) is not None and len(chain) < 16:
        chain.append(chain[-1].__cause__ or chain[-1].__context__)
    missing = [e for e in chain if "gluon.language' has no attribute" in str(e)]
    if missing:  # an operation this release's Gluon does not have
        print("unavailable:", str(missing[-1]).splitlines()[-1][:200])
    else:
        print("refused:", type(exc).__name__, (str(exc).splitlines() or [""])[0][:200])
"""

with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as kernel_file:  # Gluon reads a kernel's source
    kernel_file.write(CHILD)
fresh = {**os.environ, "TRITON_ALWAYS_COMPILE": "1", "TRITON_CACHE_DIR": tempfile.mkdtemp()}  # compile every run
try:
    child = subprocess.run([sys.executable, kernel_file.name], capture_output=True, text=True, env=fresh,
                           timeout=15)
    said = (child.stdout.strip().splitlines() or [""])[-1]
    why = next((line for line in child.stderr.splitlines() if "Assertion" in line or "error:" in line or "LLVM ERROR" in line), "")
    died = f"the process died (rc {child.returncode})" if child.returncode else ""
except subprocess.TimeoutExpired:
    said, why, died = "still compiling after 15 s", "", ""
print("triton", __import__("triton").__version__)
print("expected: compiled")
print("observed:", died or said, why[:300])
sys.exit(2 if said.startswith("unavailable") else 0 if said == "compiled" and not died else 1)
