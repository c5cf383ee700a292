"""the CuTe DSL (cutlass.cute)'s raked_product on one input (cute.layouts/41/1849, found by layoutfuzz): the input meets every documented precondition, so the answer must have the definition: size(R) == size(A) * size(B), R(size(B) * i) == A(i) (layout.hpp: the logical product zipped B-first).
Needs only the CuTe DSL (cutlass.cute); runs on a CPU. Exit 1 while the problem shows, 0 once it is gone, 2 where this release lacks
the call."""
import json
import os
import subprocess
import sys
import tempfile
from math import prod

A = (2, 8)
B = (4, 4)
OFFSET = 0
# why the input is outside the operation's domain (CuTe C++ refuses it), or None where it is inside
PRECONDITION = None
DEFINITION = 'size(R) == size(A) * size(B), R(size(B) * i) == A(i) (layout.hpp: the logical product zipped B-first)'

CHILD = r"""import json
import cutlass.cute as cute

A = (2, 8)
B = (4, 4)
OFFSET = 0
out = []


def static(v):
    return tuple(static(x) for x in v) if isinstance(v, tuple) else int(v)


def L(t):
    return cute.make_layout(t[0], stride=t[1])


def T(b):
    return b if isinstance(b, int) else L(b)


def answer():  # outside the traced body: the DSL rewrites the control flow of what it traces
    try:
        r = cute.raked_product(L(A), T(B))
        return {"shape": static(r.shape), "stride": static(r.stride)}
    except Exception as exc:
        return {"raised": f"{type(exc).__name__}: {exc}"[:500]}


@cute.jit
def probe():
    out.append(answer())


try:
    probe()
except Exception as exc:  # the trace itself failed (after the call answered, or before)
    failed = f"{type(exc).__name__}: {exc}"[:500]
    out = [{**out[0], "trace": "then the trace failed: " + failed.splitlines()[0]}] if out else [{"raised": failed}]
print("ANSWER", json.dumps(out[0]))
"""

def flat(t):
    return [y for x in t for y in flat(x)] if isinstance(t, (tuple, list)) else [t]


def size(shape):
    return prod(flat(shape))


def at(layout, i):
    """CuTe's offset of index i: its colexicographic coordinate (first mode fastest; the last mode takes the rest)
    dotted with the strides."""
    leaves = list(zip(flat(layout[0]), flat(layout[1])))
    offset = 0
    for k, (n, d) in enumerate(leaves):
        offset += (i if k == len(leaves) - 1 else i % n) * d
        i //= n
    return offset


def offsets(layout):
    return [at(layout, i) for i in range(size(layout[0]))]


def swizzle(x, b, m, s):
    """CuTe's Swizzle<B,M,S>: the B bits at M + max(0, S) XORed, shifted by S, into the bits below."""
    mask = ((1 << b) - 1) << (m + max(0, s))
    return x ^ ((x & mask) >> s if s >= 0 else (x & mask) << -s)


def sliced(shape, stride, coord):
    """The fixed offset and the kept (shape, stride) leaves of a slice: None keeps a mode."""
    if coord is None:
        return 0, list(zip(flat(shape), flat(stride)))
    if isinstance(coord, (tuple, list)):
        parts = [sliced(s, d, c) for s, d, c in zip(shape, stride, coord)]
        return sum(p[0] for p in parts), [leaf for p in parts for leaf in p[1]]
    return at((shape, stride), coord), []


def tup(v):
    return tuple(tup(x) for x in v) if isinstance(v, list) else v


with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as child_file:  # the DSL reads a traced function's source
    child_file.write(CHILD)
child = subprocess.run([sys.executable, child_file.name], capture_output=True, text=True)
os.unlink(child_file.name)
answer = next((line[7:] for line in child.stdout.splitlines() if line.startswith("ANSWER ")), None)
print("nvidia-cutlass-dsl", __import__("importlib.metadata").metadata.version("nvidia-cutlass-dsl"))
if answer is None and (child.returncode < 0 or child.returncode > 128):
    print("expected:", "a refusal (" + PRECONDITION + ")" if PRECONDITION else "an answer with " + DEFINITION)
    print(f"observed: the process died (rc {child.returncode})", (child.stderr.strip().splitlines() or [""])[-1][:200])
    sys.exit(1)
if answer is None:
    print("observed: cannot run here:", (child.stderr.strip().splitlines() or [""])[-1][:300])
    sys.exit(2)
R = json.loads(answer)
if "unavailable" in R:
    print("observed: this release lacks the call:", R["unavailable"])
    sys.exit(2)
if "raised" in R and True:
    print("expected:", "a refusal (" + PRECONDITION + ")" if PRECONDITION else "an answer with " + DEFINITION)
    print("observed: raised", R["raised"][:300])
    sys.exit(0 if PRECONDITION else 1)
want = f'size {size(A[0]) * size(B[0])}, every size(B)-th offset A: {offsets(A)}'
got = R['offsets'] if 'offsets' in R else offsets((tup(R['shape']), tup(R['stride'])))
ok = len(got) == size(A[0]) * size(B[0]) and got[::size(B[0])] == offsets(A)
print("expected:", "a refusal (" + PRECONDITION + ")" if PRECONDITION and True else want)
print("observed:", got if "raised" in R or "trace" in R else R if "offsets" in R else "%s:%s, offsets %s" % (R["shape"], R["stride"], got),
      "" if ok else "(not " + DEFINITION + ")")
sys.exit(1 if PRECONDITION and True or not ok else 0)
