"""Gluon's to_linear_layout of a nvmma_shared layout (triton.layouts/20261127/1057, found by layoutfuzz): a shared layout is a memory
layout, so its offset bases must be invertible (no zero basis, 2^n distinct offsets) and equal the layout's definition.
Needs only Triton; runs on a CPU. Exit 1 while the answer is wrong (or the call raises or aborts), 0 once right, 2
where this release lacks the layout class."""
import json
import subprocess
import sys

SHAPE = [8, 8, 8]
# the offset bases of ttgl.NVMMASharedLayout(swizzle_byte_width=0, element_bitwidth=32, rank=3, transposed=True) over SHAPE by the layout's definition (one coordinate per dim, one basis per bit)
EXPECTED = [[0, 0, 1], [0, 0, 2], [0, 0, 4], [0, 1, 0], [0, 2, 0], [0, 4, 0], [1, 0, 0], [2, 0, 0], [4, 0, 0]]

CHILD = """
import json
from triton._C.libtriton import gluon_ir, ir
from triton.experimental.gluon import language as ttgl

try:
    LAYOUT = ttgl.NVMMASharedLayout(swizzle_byte_width=0, element_bitwidth=32, rank=3, transposed=True)
except (TypeError, AttributeError) as exc:
    print("ANSWER", json.dumps({"unavailable": str(exc)}))
    raise SystemExit(0)
ctx = ir.context()
ir.load_dialects(ctx)
b = gluon_ir.GluonOpBuilder(ctx)
module = b.create_module()  # as Gluon's front end: a module for sm_90, 4 warps, 1 CTA
module.set_attr("ttg.target", b.get_string_attr("cuda:90"))
for name, value in (("ttg.num-warps", 4), ("ttg.num-ctas", 1), ("ttg.threads-per-warp", 32)):
    module.set_attr(name, b.get_int32_attr(value))
fn = b.get_or_insert_function(module, "probe", b.get_function_ty([], []), "public", False)
module.push_back(fn)
b.set_insertion_point_to_start(fn.add_entry_block())
try:
    result = b.to_linear_layout(LAYOUT._to_ir(b), [8, 8, 8])
    out = {"offset": [list(x) for x in result.offset_bases]} if hasattr(result, "offset_bases") else {"other": repr(result)[:300]}
except Exception as exc:
    out = {"raised": f"{type(exc).__name__}: {exc}"[:300]}
print("ANSWER", json.dumps(out))
"""


def span(bases):
    """Every offset the bases reach: the XOR of the bases of each input's set bits."""
    points = [tuple(0 for _ in SHAPE)]
    for basis in bases:
        points += [tuple(x ^ y for x, y in zip(point, basis)) for point in points]
    return points


child = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True)
answer = next((line[7:] for line in child.stdout.splitlines() if line.startswith("ANSWER ")), None)
print("triton", __import__("triton").__version__)
print("expected: offset bases", EXPECTED, "(invertible:", len(set(span(EXPECTED))) == len(span(EXPECTED)), ")")
if answer is None:
    tail = child.stderr.strip().splitlines() or [""]
    print(f"observed: the process died (rc {child.returncode}):", next((t for t in tail if "ssert" in t or "ERROR" in t), tail[-1])[:300])
    sys.exit(1 if child.returncode < 0 or child.returncode > 128 else 2)
got = json.loads(answer)
if "unavailable" in got:
    print("observed: this release lacks the layout:", got["unavailable"])
    sys.exit(2)
if "offset" not in got:
    print("observed:", got)
    sys.exit(1)
points = span(got["offset"])
print("observed: offset bases", got["offset"], "(invertible:", len(set(points)) == len(points), ")")
sys.exit(0 if got["offset"] == EXPECTED else 1)
