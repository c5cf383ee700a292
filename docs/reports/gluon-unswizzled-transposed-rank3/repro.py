"""Gluon's to_linear_layout on a layout its constructor accepts: a Python error or a layout is expected, not an
abort of the process. Needs only Triton (no GPU: the kernel is compiled for sm_90 on the CPU)."""
import subprocess
import sys
import tempfile

CHILD = r"""
import triton
from triton.backends.compiler import GPUTarget
from triton.experimental import gluon
from triton.experimental.gluon import language as ttgl
from triton.experimental.gluon._runtime import GluonASTSource

try:
    from triton.experimental.gluon.language import amd
    from triton.experimental.gluon.language.nvidia.blackwell import TensorMemoryLayout
    LAYOUT = ttgl.NVMMASharedLayout(cga_layout=[], element_bitwidth=8, fp4_padded=False, rank=4, swizzle_byte_width=0, transposed=True)
except (TypeError, AttributeError, ImportError) as exc:  # a class or argument this release does not have
    print("unavailable:", exc)
    raise SystemExit(0)
SHAPE = [512, 1, 2, 4]


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
child = subprocess.run([sys.executable, kernel_file.name], capture_output=True, text=True)
tail = (child.stderr.strip().splitlines() or [""])
died = child.returncode < 0 or child.returncode > 128
print("triton", __import__("triton").__version__)
print("expected: a Python error or a linear layout")
print("observed:", f"the process died (rc {child.returncode}): " + next((l for l in tail if "LLVM ERROR" in l or "Assertion" in l), tail[-1])[:300]
      if died else (child.stdout.strip().splitlines() or ["answered"])[-1][:300])
unavailable = child.stdout.startswith("unavailable")
sys.exit(1 if died else 2 if unavailable else 0)
