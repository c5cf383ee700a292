"""A Gluon kernel a user writes (atomic_xchg (fp32, acquire, scope sys) of a 16 x 4 x 4 tile in a valid layout), compiled
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
def rank3_atomic_kernel(src, dst, M: ttgl.constexpr, N: ttgl.constexpr, K: ttgl.constexpr, A: ttgl.constexpr,
                        OP: ttgl.constexpr, SEM: ttgl.constexpr, SCOPE: ttgl.constexpr):
    d0 = ttgl.arange(0, M, layout=ttgl.SliceLayout(1, ttgl.SliceLayout(2, A)))
    d1 = ttgl.arange(0, N, layout=ttgl.SliceLayout(0, ttgl.SliceLayout(2, A)))
    d2 = ttgl.arange(0, K, layout=ttgl.SliceLayout(0, ttgl.SliceLayout(1, A)))
    offs = d0[:, None, None] * (N * K) + d1[None, :, None] * K + d2[None, None, :]
    apply_atomic(dst, ttgl.load(src + offs), offs, OP, SEM, SCOPE)


try:
    LAYOUT = ttgl.DistributedLinearLayout(block_bases=[], lane_bases=[[4, 0, 0], [0, 0, 2], [0, 1, 0], [0, 0, 1], [1, 0, 0]], reg_bases=[[0, 2, 0], [8, 0, 0], [0, 0, 0]], shape=[16, 4, 4], warp_bases=[[2, 0, 0]])
except (TypeError, AttributeError) as exc:  # a class or argument this release does not have
    print("unavailable:", exc)
    raise SystemExit(0)
constexprs = {'M': 16, 'N': 4, 'K': 4, 'A': LAYOUT, 'OP': 'atomic_xchg', 'SEM': 'acquire', 'SCOPE': 'sys'}
signature = {"src": "*fp32", "dst": "*fp32", **{k: "constexpr" for k in constexprs}}
try:
    triton.compile(GluonASTSource(rank3_atomic_kernel, signature, constexprs), target=GPUTarget("cuda", 90, 32),
                   options={"num_warps": 2, "num_ctas": 1})
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
