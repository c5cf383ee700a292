"""Triton's shared layout as its compiler lays a buffer out (triton.shared_layouts/3/36, found by layoutfuzz): a Gluon kernel
allocates a [8, 8, 8] float32 buffer of ttgl.NVMMASharedLayout(element_bitwidth=32, rank=3, swizzle_byte_width=0, transposed=True)
and reshapes it to 1-D; the layout Triton infers for the reshaped buffer says which element (its row-major index) each
offset bit reaches. A shared layout is a memory layout: those bases must be one-to-one (2^n distinct offsets) and be
the layout's definition. Needs only Triton; runs on a CPU (the kernel is compiled for sm_90, not run). Exit 1 while the
answer is wrong (or Triton aborts), 0 once right, 2 where this release lacks the layout."""
import json
import os
import subprocess
import sys
import tempfile

SHAPE = [8, 8, 8]
# the row-major index of the element each offset bit reaches, by the layout's definition
EXPECTED = [1, 2, 4, 8, 16, 32, 64, 128, 256]

CHILD = r"""import contextlib
import io
import json
import re

import triton
from triton.backends.compiler import GPUTarget
from triton.experimental import gluon
from triton.experimental.gluon import language as ttgl
from triton.experimental.gluon._runtime import GluonASTSource


def printed(kernel, constexprs, num_warps):
    # what the kernel's static_print calls print while Triton compiles it for sm_90 on the CPU (its front end runs
    # them), and the compiler's error if a later step refused the kernel
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            triton.compile(GluonASTSource(kernel, {k: "constexpr" for k in constexprs}, constexprs),
                           target=GPUTarget("cuda", 90, 32), options={"num_warps": num_warps})
    except Exception as exc:
        return out.getvalue(), f"{type(exc).__name__}: {(str(exc).splitlines() or [''])[0][:200]}"
    return out.getvalue(), ""


def unavailable(build):
    # the layouts build() makes, or an ANSWER saying this release lacks a class or argument they need
    try:
        return build()
    except (TypeError, AttributeError) as exc:
        print("ANSWER", json.dumps({"unavailable": f"{type(exc).__name__}: {exc}"}))
        raise SystemExit(0)


LAYOUT = unavailable(lambda: ttgl.NVMMASharedLayout(element_bitwidth=32, rank=3, swizzle_byte_width=0, transposed=True))


@gluon.jit
def probe(S: ttgl.constexpr, SHAPE: ttgl.constexpr, N: ttgl.constexpr):
    smem = ttgl.allocate_shared_memory(ttgl.float32, SHAPE, S)
    ttgl.static_print(smem.reshape([N]).layout)


text, raised = printed(probe, {"S": LAYOUT, "SHAPE": [8, 8, 8], "N": 512}, 4)
found = re.search(r"offset_bases=(\[[\[\]\d, ]*\])", text)
print("ANSWER", json.dumps({"offset": [b[0] for b in json.loads(found[1])]} if found else {"raised": raised or text[-300:]}))
"""


def run_child(source, expected, env=None):
    """The answer the child prints as ``ANSWER <json>`` (a dict). Where it printed none, or says the release lacks
    what the case needs ({"unavailable": ...}), prints expected and observed and exits: 1 where the child died by a
    signal (an abort where an answer or a Python error is owed), 2 where it could not run the case here."""
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as file:  # some systems read a function's source
        file.write(source)
    child = subprocess.run([sys.executable, file.name], capture_output=True, text=True, env=env)
    os.unlink(file.name)
    line = next((x[len("ANSWER "):] for x in child.stdout.splitlines() if x.startswith("ANSWER ")), None)
    said = json.loads(line) if line else {}
    if line is not None and "unavailable" not in said:
        return said
    died = child.returncode < 0 or child.returncode > 128
    tail = child.stderr.strip().splitlines() or [""]
    why = next((t for t in tail if "ssert" in t or "ERROR" in t), tail[-1])[:300]
    print("expected:", expected)
    print("observed:", f"the process died (rc {child.returncode}): {why}" if died else
          f"this release lacks what the case needs: {said['unavailable']}" if line else f"cannot run here: {why}")
    sys.exit(1 if died else 2)


def one_to_one(bases):
    """Whether the offsets the bases reach (the XOR of the bases of each offset's set bits) are all distinct."""
    reached = [0]
    for basis in bases:
        reached += [x ^ basis for x in reached]
    return len(set(reached)) == len(reached)


print("triton", __import__("triton").__version__)
expected = f"offset bases {EXPECTED} (one-to-one: {one_to_one(EXPECTED)})"
got = run_child(CHILD, expected, {**os.environ, "TRITON_ALWAYS_COMPILE": "1", "TRITON_CACHE_DIR": tempfile.mkdtemp()})
print("expected:", expected)
if "offset" not in got:
    print("observed: no layout:", got["raised"])
    sys.exit(1)
print("observed:", f"offset bases {got['offset']} (one-to-one: {one_to_one(got['offset'])})")
sys.exit(0 if got["offset"] == EXPECTED else 1)
