"""The CuTe DSL's tile_to_shape of a Hopper shared-memory atom (cute.smem_atoms/0/0, found by layoutfuzz): the
K_SW128 atom of f16 (16-bit elements) tiled to (8, 32) in order (0, 1), read as the DSL's kernels use it
(the layout on a pointer swizzled by its swizzle, which acts on byte addresses). CuTe C++ refuses a shape the atom does
not divide ('tile_to_shape: block shape does not divide the target shape'); otherwise every element must sit at the
address CuTe's atom and tile_to_shape define. Needs only the CuTe DSL; runs on a CPU. Exit 1 while the problem shows, 0
once it is gone, 2 where this release lacks the atom or type."""
import json
import os
import subprocess
import sys
import tempfile
from math import prod

KIND = 'K_SW128'
BITS = 16
SHAPE = (8, 32)
ORDER = (0, 1)
# CuTe's atom (cute/atom/mma_traits_sm90_gmma.hpp), in bits: 8 rows of the swizzle's width W, K-major (8, W):(W, 1)
# or MN-major (W, 8):(1, W), on a pointer swizzled by Swizzle<B,4,3>: byte address bits [7, 7+B) XORed into [4, 4+B)
W, B = {"INTER": (128, 0), "SW32": (256, 1), "SW64": (512, 2), "SW128": (1024, 3)}[KIND.split("_")[1]]
K_MAJOR = KIND.startswith("K_")
ATOM = (8, W // BITS) if K_MAJOR else (W // BITS, 8)  # in elements

CHILD = r"""import json
import cutlass.cute as cute
import cutlass
from cutlass.cute.nvgpu import warpgroup

KIND = warpgroup.SmemLayoutAtomKind.K_SW128
DTYPE = cutlass.Float16
SHAPE = (8, 32)
ORDER = (0, 1)
out = []


def static(v):
    return tuple(static(x) for x in v) if isinstance(v, tuple) else int(v)


def L(t):
    return cute.make_layout(t[0], stride=t[1])


def T(b):
    return b if isinstance(b, int) else L(b)


def answer():  # outside the traced body: the DSL rewrites the control flow of what it traces
    try:
        r = cute.tile_to_shape(warpgroup.make_smem_layout_atom(KIND, DTYPE), SHAPE, ORDER)
        return {"swizzle": [int(r.inner.num_bits), int(r.inner.num_base), int(r.inner.num_shift)], "offset": static(r.offset), "shape": static(r.outer.shape), "stride": static(r.outer.stride)}
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


def expected_address(i):
    """The bit address of element i (colexicographic over SHAPE): its atom's number in the ordered layout of the
    atoms (SHAPE / ATOM) times the atom's 8 W bits, plus its offset inside the atom; the bytes swizzled."""
    coord, rest = [], i
    for n in SHAPE:
        coord.append(rest % n)
        rest //= n
    extents = [SHAPE[0] // ATOM[0], SHAPE[1] // ATOM[1], *SHAPE[2:]]
    tile = [coord[0] // ATOM[0], coord[1] // ATOM[1], *coord[2:]]
    number, step = 0, 1
    for mode in sorted(range(len(extents)), key=lambda m: ORDER[m]):  # make_ordered_layout: the lowest order fastest
        number += tile[mode] * step
        step *= extents[mode]
    mn, k = coord[0] % ATOM[0], coord[1] % ATOM[1]
    bits = number * 8 * W + (mn * (W // BITS) + k if K_MAJOR else mn + k * (W // BITS)) * BITS
    byte = bits >> 3
    return (byte ^ (((byte >> 7) & ((1 << B) - 1)) << 4)) << 3 | (bits & 7)


def observed_address(R, i):
    """The bit address of element i of the DSL's answer: the layout's offset, on the swizzled pointer."""
    bits = (R["offset"] + at((tup(R["shape"]), tup(R["stride"])), i)) * BITS
    return swizzle(bits >> 3, *R["swizzle"]) << 3 | (bits & 7)


print("nvidia-cutlass-dsl", __import__("importlib.metadata").metadata.version("nvidia-cutlass-dsl"))
divides = SHAPE[0] % ATOM[0] == 0 and SHAPE[1] % ATOM[1] == 0
want = (f"every element at CuTe's address (element 1 at bit {expected_address(1)})" if divides else
        f"a refusal: the atom {ATOM} does not divide {SHAPE}")
R = run_child(CHILD, want)
print("expected:", want)
if "raised" in R:
    print("observed: raised", R["raised"][:300])
    sys.exit(1 if divides else 0)
text = f"S<{','.join(map(str, R['swizzle']))}> o {R['offset']} o {R['shape']}:{R['stride']}"
if not divides:
    print("observed:", text, "of size", size(R["shape"]), "for", prod(SHAPE), "elements")
    sys.exit(1)
wrong = [i for i in range(prod(SHAPE)) if size(R["shape"]) != prod(SHAPE) or observed_address(R, i) != expected_address(i)]
print("observed:", text, f"({len(wrong)} elements elsewhere)" if wrong else "")
sys.exit(1 if wrong else 0)
