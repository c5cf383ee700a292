"""Triton's bank-conflict count of one pair of layouts (triton.bank_conflicts/0/20, found by layoutfuzz): a [8, 32] int8
tensor in ttgl.NVMMADistributedLayout(instr_shape=[16, 8], version=[2, 0], warps_per_cta=[1, 1])
read from or written to a shared buffer of ttgl.SharedLinearLayout(offset_bases=[[0, 1], [0, 8], [2, 0], [0, 20], [0, 2], [0, 6], [4, 0], [1, 1]]).
ttgl.bank_conflicts documents the excess accesses each wavefront of one warp's ld/st.shared needs; the script counts
them from the accesses. Needs only Triton; runs on a CPU (the kernel is compiled for sm_90, not run). Exit 1 while
Triton's count is not the exact one (or Triton aborts), 0 once it is, 2 where this release lacks a layout."""
import json
import os
import subprocess
import sys
import tempfile
from collections import Counter

BITS = 8
# the shared-memory offset (in elements) of each register bit and each lane bit of warp 0: the distributed layout's
# register and lane bases mapped through the inverse of the shared layout (both layouts' definitions)
REGISTER = [1, 2, 56]
LANE = [16, 48, 129, 4, 64]

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


REG, SMEM = unavailable(lambda: (ttgl.distributed_type(ttgl.int8, [8, 32], ttgl.NVMMADistributedLayout(instr_shape=[16, 8], version=[2, 0], warps_per_cta=[1, 1])),
                                 ttgl.shared_memory_descriptor_type(ttgl.int8, [8, 32], ttgl.SharedLinearLayout(offset_bases=[[0, 1], [0, 8], [2, 0], [0, 20], [0, 2], [0, 6], [4, 0], [1, 1]]), [8, 32])))


@gluon.jit
def probe(R: ttgl.constexpr, M: ttgl.constexpr):
    ttgl.static_print("bank conflicts:", ttgl.bank_conflicts(R, M))


text, raised = printed(probe, {"R": REG, "M": SMEM}, 1)
found = re.search(r"bank conflicts: \D*(\d+)", text)
print("ANSWER", json.dumps({"conflicts": int(found[1])} if found else {"raised": raised or text[-300:]}))
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


def span(vectors):
    """Every XOR combination of the vectors, index bit k choosing vector k."""
    table = [0]
    for x in vectors:
        table += [t ^ x for t in table]
    return table


def vector_bits():
    """log2 of the elements one ld/st.shared moves: the widest power of two, at most 128 bits, whose offsets
    1, 2, .. 2^(k-1) are register bits while no other register or lane bit touches those low offset bits."""
    k = 0
    while (2 << k) * BITS <= 128 and (1 << k) in REGISTER:
        units = {1 << j for j in range(k + 1)}
        if any(x & ((2 << k) - 1) for x in [r for r in REGISTER if r not in units] + LANE):
            break
        k += 1
    return k


def exact_conflicts():
    """The busiest bank's distinct 4-byte words, less one, over every instruction and 128-byte transaction."""
    v = vector_bits()
    words = max(1, (1 << v) * BITS // 8 // 4)  # 4-byte words (banks) one lane's vector spans
    lanes = 32 // words  # a vector over n banks splits the warp into n transactions, by its highest lane bits
    starts = span(LANE)  # the offset of lane i's vector
    worst = 0
    for base in span([r for r in REGISTER if r not in {1 << j for j in range(v)}]):
        byte = [(s ^ base) * BITS // 8 for s in starts]
        for first in range(0, 32, lanes):
            asked = {b // 4 + w for b in byte[first:first + lanes] for w in range(words)}
            worst = max(worst, max(Counter(w % 32 for w in asked).values()))
    return worst - 1


print("triton", __import__("triton").__version__)
expected = f"{exact_conflicts()} bank conflict(s) (vectors of {1 << vector_bits()} elements)"
got = run_child(CHILD, expected, {**os.environ, "TRITON_ALWAYS_COMPILE": "1", "TRITON_CACHE_DIR": tempfile.mkdtemp()})
print("expected:", expected)
if "conflicts" not in got:
    print("observed: no count:", got["raised"])
    sys.exit(1)
print("observed:", got["conflicts"], "bank conflict(s)")
sys.exit(0 if got["conflicts"] == exact_conflicts() else 1)
