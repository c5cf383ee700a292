"""A Gluon kernel a user writes (reduce_pair over axis 0 of a 2 x 64 tile in a valid layout), compiled
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
def max_combine(a, b):
    return ttgl.maximum(a, b)


@gluon.jit
def argmax_combine(value_a, index_a, value_b, index_b):
    pick_a = (value_a > value_b) | ((value_a == value_b) & (index_a < index_b))
    return ttgl.where(pick_a, value_a, value_b), ttgl.where(pick_a, index_a, index_b)


@gluon.jit
def store_tile(ptr, y):
    # y stored at its row-major offsets, built in its own layout (rank 1 to 3)
    L: ttgl.constexpr = y.type.layout
    if len(y.shape) == 1:
        ttgl.store(ptr + ttgl.arange(0, y.shape[0], layout=L), y)
    elif len(y.shape) == 2:
        r = ttgl.arange(0, y.shape[0], layout=ttgl.SliceLayout(1, L))
        c = ttgl.arange(0, y.shape[1], layout=ttgl.SliceLayout(0, L))
        ttgl.store(ptr + r[:, None] * y.shape[1] + c[None, :], y)
    else:
        d0 = ttgl.arange(0, y.shape[0], layout=ttgl.SliceLayout(1, ttgl.SliceLayout(2, L)))
        d1 = ttgl.arange(0, y.shape[1], layout=ttgl.SliceLayout(0, ttgl.SliceLayout(2, L)))
        d2 = ttgl.arange(0, y.shape[2], layout=ttgl.SliceLayout(0, ttgl.SliceLayout(1, L)))
        ttgl.store(ptr + d0[:, None, None] * (y.shape[1] * y.shape[2]) + d1[None, :, None] * y.shape[2]
                   + d2[None, None, :], y)


@gluon.jit
def apply_op(dst, x, offs, A: ttgl.constexpr, OP: ttgl.constexpr, AXIS: ttgl.constexpr, REVERSE: ttgl.constexpr):
    # one operation on the tile x (rank 2 or 3, layout A, row-major offsets offs), its result stored
    if OP == "sum":
        store_tile(dst, ttgl.sum(x, AXIS))
    elif OP == "max":
        store_tile(dst, ttgl.max(x, AXIS))
    elif OP == "cumsum":
        ttgl.store(dst + offs, ttgl.cumsum(x, AXIS))
    elif OP == "scan_max":  # a scan with a user-written combine
        ttgl.store(dst + offs, ttgl.associative_scan(x, AXIS, max_combine, reverse=REVERSE))
    elif OP == "scan_pair":  # a two-operand (value, index) scan: the running argmax
        value, index = ttgl.associative_scan((x, offs), AXIS, argmax_combine, reverse=REVERSE)
        ttgl.store(dst + offs, value + index.to(ttgl.float32))
    elif OP == "reduce_pair":  # a two-operand (value, index) reduction: argmax
        value, index = ttgl.reduce((x, offs), AXIS, argmax_combine)
        store_tile(dst, value + index.to(ttgl.float32))
    elif OP == "permute":
        if len(x.shape) == 2:
            store_tile(dst, ttgl.permute(x, (1, 0)))
        elif AXIS == 0:
            store_tile(dst, ttgl.permute(x, (1, 2, 0)))
        elif AXIS == 1:
            store_tile(dst, ttgl.permute(x, (2, 0, 1)))
        else:
            store_tile(dst, ttgl.permute(x, (0, 2, 1)))
    elif OP == "reshape":
        store_tile(dst, ttgl.reshape(x, [x.numel]))
    elif OP == "join_split":
        a, b = ttgl.split(ttgl.join(x, x + 1))
        ttgl.store(dst + offs, ttgl.convert_layout(a + b, A))
    elif OP == "gather":
        ttgl.store(dst + offs, ttgl.gather(x, (offs * 7) % x.shape[AXIS], AXIS))
    else:  # broadcast: a reduction expanded back and broadcast against its operand
        ttgl.store(dst + offs, x - ttgl.expand_dims(ttgl.max(x, AXIS), AXIS))


@gluon.jit
def rank2_op_kernel(src, dst, M: ttgl.constexpr, N: ttgl.constexpr, A: ttgl.constexpr, OP: ttgl.constexpr,
                    AXIS: ttgl.constexpr, REVERSE: ttgl.constexpr):
    rows = ttgl.arange(0, M, layout=ttgl.SliceLayout(1, A))
    cols = ttgl.arange(0, N, layout=ttgl.SliceLayout(0, A))
    offs = rows[:, None] * N + cols[None, :]
    apply_op(dst, ttgl.load(src + offs), offs, A, OP, AXIS, REVERSE)


try:
    LAYOUT = ttgl.DistributedLinearLayout(block_bases=[[0, 32], [1, 0]], lane_bases=[[0, 4], [0, 0], [0, 0], [0, 0], [0, 0]], reg_bases=[], shape=[2, 64], warp_bases=[[0, 16], [0, 1], [0, 8], [0, 2]])
except (TypeError, AttributeError) as exc:  # a class or argument this release does not have
    print("unavailable:", exc)
    raise SystemExit(0)
constexprs = {'M': 2, 'N': 64, 'A': LAYOUT, 'OP': 'reduce_pair', 'AXIS': 0, 'REVERSE': False}
signature = {"src": "*fp32", "dst": "*fp32", **{k: "constexpr" for k in constexprs}}
try:
    triton.compile(GluonASTSource(rank2_op_kernel, signature, constexprs), target=GPUTarget("cuda", 90, 32),
                   options={"num_warps": 16, "num_ctas": 4})
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
