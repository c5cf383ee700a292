"""Gluon's to_linear_layout on a layout its constructor accepts: a Python error or a layout is expected, not an
abort of the process. Needs only Triton (no GPU: the kernel is compiled for sm_90 on the CPU)."""
import ast
import os
import re
import subprocess
import sys
import tempfile

PRECONDITION = 'tensor memory scales: rank: a rank-2 layout for a rank-1 tensor'  # the documented precondition that fails, if any
SHARED = False

CHILD = r"""
import triton
from triton.backends.compiler import GPUTarget
from triton.experimental import gluon
from triton.experimental.gluon import language as ttgl
from triton.experimental.gluon._runtime import GluonASTSource

try:
    from triton.experimental.gluon.language import amd
    from triton.experimental.gluon.language.nvidia.blackwell import TensorMemoryLayout, TensorMemoryScalesLayout
    LAYOUT = TensorMemoryScalesLayout()
except (TypeError, AttributeError, ImportError) as exc:  # a class or argument this release does not have
    print("unavailable:", exc)
    raise SystemExit(0)
SHAPE = [1]


@gluon.jit
def probe(L: ttgl.constexpr, SHAPE: ttgl.constexpr):
    ttgl.static_print(ttgl.to_linear_layout(L, SHAPE))


src = GluonASTSource(probe, {"L": "constexpr", "SHAPE": "constexpr"}, {"L": LAYOUT, "SHAPE": SHAPE})
try:
    triton.compile(src, target=GPUTarget("cuda", 90, 32), options={"num_warps": 1, "num_ctas": 1})
except Exception as exc:
    print("raised", type(exc).__name__, str(exc).splitlines()[0] if str(exc) else "")
"""

with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as kernel_file:  # Gluon reads a kernel's source
    kernel_file.write(CHILD)
fresh = {**os.environ, "TRITON_ALWAYS_COMPILE": "1", "TRITON_CACHE_DIR": tempfile.mkdtemp()}  # the front end must run
child = subprocess.run([sys.executable, kernel_file.name], capture_output=True, text=True, env=fresh)
tail = (child.stderr.strip().splitlines() or [""])
said = (child.stdout.strip().splitlines() or ["answered"])[-1]
died = child.returncode < 0 or child.returncode > 128
print("triton", __import__("triton").__version__)
print("expected:", "a Python error" if PRECONDITION else "a linear layout" + (", each CTA's offsets one-to-one" if SHARED else ""))


def one_to_one(bases):
    """Offset bases independent over F2 (no zero basis, none the XOR of others): no two offsets alias."""
    widths = [max(1, max((b[d] for b in bases), default=0).bit_length()) for d in range(len(bases[0]))] if bases else []
    packed, pivots = [int("".join(format(v, f"0{w}b") for v, w in zip(b, widths)), 2) for b in bases], {}
    for v in packed:
        while v and v.bit_length() in pivots:
            v ^= pivots[v.bit_length()]
        if not v:
            return False
        pivots[v.bit_length()] = v
    return True


offsets = re.search(r"offset_bases=(\[\[.*?\]\])", child.stdout)
if died:
    verdict, why = 1, f"the process died (rc {child.returncode}): " + next((line for line in tail if "LLVM ERROR" in line or "Assertion" in line), tail[-1])[:300]
elif said.startswith("unavailable"):
    verdict, why = 2, said
elif said.startswith("raised"):
    verdict, why = (0 if PRECONDITION else 1), said
elif SHARED and offsets and not one_to_one(ast.literal_eval(offsets[1])):
    verdict, why = 1, "offsets alias: " + offsets[1][:200]
else:
    verdict, why = 0, said[:300]
print("observed:", why)
sys.exit(verdict)
