"""Triton's LinearLayout.invert_and_compose on a valid input (triton.linear_layout/0/0, found by layoutfuzz): C = A.invert_and_compose(B)
must satisfy B(C(x)) == A(x) for every input x (B is injective onto A's image). Needs only Triton; runs on a CPU.
Exit 1 while the call aborts or answers wrong, 0 once it answers right."""
import json
import subprocess
import sys

A = {'bases': [['register', [[1, 1]]], ['lane', [[0, 1]]]], 'out_dims': [['dim0', 2], ['dim1', 2]]}
B = {'bases': [['register', [[0, 0], [1, 0]]], ['lane', [[0, 1]]]], 'out_dims': [['dim0', 2], ['dim1', 2]]}

CHILD = """
import json, sys
from triton._C.libtriton import linear_layout
A, B = json.loads(sys.argv[1]), json.loads(sys.argv[2])
def ll(d):
    return linear_layout.LinearLayout.from_bases([(n, bs) for n, bs in d["bases"]], [n for n, _ in d["out_dims"]],
                                                 [s for _, s in d["out_dims"]], False)
try:
    c = ll(A).invert_and_compose(ll(B))
    out = {"bases": [[n, [list(x) for x in bs]] for n, bs in c.bases], "out_dims": [[n, s] for n, s in c.out_dims]}
except Exception as exc:
    out = {"raised": f"{type(exc).__name__}: {exc}"[:300]}
print("ANSWER", json.dumps(out))
"""


def apply(layout, point):
    """F2: the XOR of the bases of the point's set bits, per out dim (inputs by in-dim name)."""
    image = [0] * len(layout["out_dims"])
    for name, bases in layout["bases"]:
        for bit, basis in enumerate(bases):
            if point.get(name, 0) >> bit & 1:
                image = [x ^ y for x, y in zip(image, basis)]
    return image


def inputs(layout):
    dims = [(name, len(bases)) for name, bases in layout["bases"]]
    for flat in range(1 << sum(w for _, w in dims)):
        point, shift = {}, 0
        for name, width in dims:
            point[name], shift = flat >> shift & ((1 << width) - 1), shift + width
        yield point


child = subprocess.run([sys.executable, "-c", CHILD, json.dumps(A), json.dumps(B)], capture_output=True, text=True)
answer = next((line[7:] for line in child.stdout.splitlines() if line.startswith("ANSWER ")), None)
print("triton", __import__("triton").__version__)
want = [apply(A, x) for x in inputs(A)]
print("expected: C with B(C(x)) == A(x), A's images", want)
if answer is None:
    tail = child.stderr.strip().splitlines() or [""]
    print(f"observed: the process died (rc {child.returncode}):", next((t for t in tail if "ssert" in t), tail[-1])[:300])
    sys.exit(1 if child.returncode < 0 or child.returncode > 128 else 2)
C = json.loads(answer)
if "raised" in C:
    print("observed: raised", C["raised"])
    sys.exit(1)
names = [n for n, _ in C["out_dims"]]
got = [apply(B, dict(zip(names, apply(C, x)))) for x in inputs(A)]
print("observed: C =", C, "B(C(x)):", got)
sys.exit(0 if got == want else 1)
