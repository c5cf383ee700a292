# The layout is the one Gluon's get_default_for returns for the block.
"""Gluon's to_linear_layout on a layout its constructor accepts: a Python error or a layout is expected, not an
abort of the process. Needs only Triton (no GPU: the kernel is compiled for sm_90 on the CPU)."""
import ast
import os
import re
import subprocess
import sys
import tempfile

import triton
from triton.experimental.gluon import language as ttgl

SHAPE, CGA, FP4 = [8, 2, 8], [[0, 0, 1]], False
# a CGA layout's bases are its CTA bits' offsets in the block: a base nonzero along a dim splits that dim in two
SPLITS = [1 << sum(1 for base in CGA if base[d]) for d in range(len(SHAPE))]
DIVIDES = all(size % split == 0 for size, split in zip(SHAPE, SPLITS))
try:
    CHOSEN = ttgl.NVMMASharedLayout.get_default_for([8, 2, 8], ttgl.float32, transposed=True, fp4_padded=False, cga_layout=[[0, 0, 1]])
except TypeError as exc:  # an argument this release does not have
    print("unavailable:", exc)
    sys.exit(2)
except Exception as exc:  # a refusal: right only where the CTAs do not divide the block
    print("triton", triton.__version__)
    print("expected:", f"a layout (CTAs per dim {SPLITS} divide the block {SHAPE})" if DIVIDES else "a refusal")
    print("observed: refused:", type(exc).__name__, (str(exc).splitlines() or [""])[0][:200])
    sys.exit(1 if DIVIDES else 0)
if FP4 and CHOSEN.swizzle_byte_width != 128 or not CHOSEN.swizzle_byte_width:  # nothing for the compiler to refuse
    print("triton", triton.__version__)
    print("expected:", "a 128-byte swizzle (fp4 padding takes no other)" if FP4 else "a layout")
    print("observed:", f"a {CHOSEN.swizzle_byte_width}-byte swizzle")
    sys.exit(1 if FP4 and CHOSEN.swizzle_byte_width != 128 else 0)

PRECONDITION = 'nvmma shared: per-CTA block [8, 2, 4] below the 8 x 8 swizzle atom'  # the documented precondition that fails, if any
SHARED = True

CHILD = r"""
import triton
from triton.backends.compiler import GPUTarget
from triton.experimental import gluon
from triton.experimental.gluon import language as ttgl
from triton.experimental.gluon._runtime import GluonASTSource

try:
    from triton.experimental.gluon.language import amd
    from triton.experimental.gluon.language.nvidia.blackwell import TensorMemoryLayout
    LAYOUT = ttgl.NVMMASharedLayout.get_default_for([8, 2, 8], ttgl.float32, transposed=True, fp4_padded=False, cga_layout=[[0, 0, 1]])
except (TypeError, AttributeError, ImportError) as exc:  # a class or argument this release does not have
    print("unavailable:", exc)
    raise SystemExit(0)
SHAPE = [8, 2, 8]


@gluon.jit
def probe(L: ttgl.constexpr, SHAPE: ttgl.constexpr):
    ttgl.static_print(ttgl.to_linear_layout(L, SHAPE))


src = GluonASTSource(probe, {"L": "constexpr", "SHAPE": "constexpr"}, {"L": LAYOUT, "SHAPE": SHAPE})
try:
    triton.compile(src, target=GPUTarget("cuda", 90, 32), options={"num_warps": 4, "num_ctas": 2})
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
