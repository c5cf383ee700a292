"""pycute's composition on one input (pycute.layouts/21/0, found by layoutfuzz): the input meets every documented precondition, so the answer must have the definition: R(i) == A(B(i)) for every i < size(B).
Needs only pycute; runs on a CPU. Exit 1 while the problem shows, 0 once it is gone, 2 where this release lacks
the call."""
import json
import os
import subprocess
import sys
import tempfile
from math import prod

A = ((3, 5), (8, 0))
B = ((3, 9), (1, 1))
OFFSET = 0
# why the input is outside the operation's domain (CuTe C++ refuses it), or None where it is inside
PRECONDITION = None
DEFINITION = 'R(i) == A(B(i)) for every i < size(B)'

CHILD = r"""import json
import pycute

A = ((3, 5), (8, 0))
B = ((3, 9), (1, 1))
OFFSET = 0


def L(t):
    return pycute.Layout(*t)


def T(b):
    return b if isinstance(b, int) else L(b)


try:
    r = pycute.composition(L(A), T(B))
    out = {"shape": r.shape, "stride": r.stride}
except (Exception, RecursionError) as exc:
    out = {"raised": f"{type(exc).__name__}: {exc}"[:500]}
print("ANSWER", json.dumps(out))
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
print("nvidia-cutlass (pycute)", __import__("importlib.metadata").metadata.version("nvidia-cutlass"))
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
Bl = (B, 1) if isinstance(B, int) else B
want = [at(A, at(Bl, i)) for i in range(size(Bl[0]))]
got = R['offsets'] if 'offsets' in R else offsets((tup(R['shape']), tup(R['stride'])))
ok = got == want
print("expected:", "a refusal (" + PRECONDITION + ")" if PRECONDITION and True else want)
print("observed:", got if "raised" in R or "trace" in R else R if "offsets" in R else "%s:%s, offsets %s" % (R["shape"], R["stride"], got),
      "" if ok else "(not " + DEFINITION + ")")
sys.exit(1 if PRECONDITION and True or not ok else 0)
