"""A Gluon kernel a user writes (max over axis 1 of a 4 x 2 tile in a valid layout), compiled
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


try:
    LAYOUT = ttgl.DistributedLinearLayout(block_bases=[[1, 0]], lane_bases=[[0, 1], [0, 0], [0, 0], [0, 0], [0, 0]], reg_bases=[], shape=[4, 2], warp_bases=[[2, 0]])
except (TypeError, AttributeError) as exc:  # a class or argument this release does not have
    print("unavailable:", exc)
    raise SystemExit(0)
constexprs = {'M': 4, 'N': 2, 'A': LAYOUT, 'OP': 'max', 'AXIS': 1}
signature = {"src": "*fp32", "dst": "*fp32", **{k: "constexpr" for k in constexprs}}
try:
    triton.compile(GluonASTSource(layout_op_kernel, signature, constexprs), target=GPUTarget("cuda", 90, 32),
                   options={"num_warps": 2, "num_ctas": 2})
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
