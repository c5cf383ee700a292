"""The scripts ``layoutfuzz export`` writes for the CuTe targets (``cute.layouts``, ``pycute.layouts``): one
operation run by the system under test alone in a child process, judged by the definition written into the script
(layouts evaluated colexicographically by hand), exit 1 while the problem shows, 0 once it is gone."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from layoutfuzz.generators.case import Case
from layoutfuzz.harness.targets.cute_algebra import IMPLEMENTATION_DEFINED, Call, precondition

# the definition each operation's answer is checked against in a reproducer, as the script prints it
SCRIPT_DEFINITIONS = {
    "composition": "R(i) == A(B(i)) for every i < size(B)",
    "composition_swizzled": "R(i) == Sw(offset + A(B(i))) for every i < size(B)",
    "swizzle": "R(i) == Sw(offset + A(i)) for every i < size(A)",
    "slice_swizzled": "R(i) == Sw(offset + A(coord with the None modes read from i))",
    "complement": "every mode of R of size >= 1 and (A, R) injective",
    "left_inverse": "L(A(i)) == i for every i < size(A)",
    "divide": "size(R) == size(A), R(i) == A(B(i)) for i < size(B), R's offsets a permutation of A's",
    "product": "size(R) == size(A) * size(B), R(i) == A(i) for i < size(A), R injective where A and B are",
    "downcast": "size(R) == k * size(A), R's offsets {k * A(i) + r : r < k}",
    "upcast": "R's offsets {q : k * q + r is an offset of A}, each group of k whole",
    "filter_zeros_profile": "a layout with A's offsets (filter_zeros(layout, profile) is defined on every layout)",
    "nullspace": "R's offsets == {i < size(A) : A(i) == 0}",
    "extend": "ValueError (documented: up_to_rank below the rank of A)",
    "make_layout_tv": "a layout_tv whose (thread, value) pairs reach distinct elements",
    "raked_product": "size(R) == size(A) * size(B), R(size(B) * i) == A(i) (layout.hpp: the logical product zipped B-first)",
    "blocked_product": "size(R) == size(A) * size(B), R(i) == A(i) for i < size(A) (layout.hpp: the logical product zipped)",
}

SCRIPT_HELPERS = '''
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
'''


def _family(op: str) -> str:
    if op.endswith("divide"):
        return "divide"
    if op.endswith("product") and op not in ("blocked_product", "raked_product", "flat_product"):
        return "product"
    return {"append": "extend", "prepend": "extend"}.get(op, op)


def _judge_lines(p: Mapping[str, Any]) -> str | None:
    """The script's lines that set ``want`` (the definition's answer, printable) and ``ok`` from ``R`` (the system's
    answer: {"shape", "stride"} or {"offsets"}), or None where no reproducer checks this operation."""
    op, fam = p["op"], _family(p["op"])
    if isinstance(p.get("b"), list):
        return None  # by-mode tilers: no reproducer yet
    tile = "Bl = (B, 1) if isinstance(B, int) else B\n"
    got = "got = R['offsets'] if 'offsets' in R else offsets((tup(R['shape']), tup(R['stride'])))\n"
    lines = {
        "composition": tile + "want = [at(A, at(Bl, i)) for i in range(size(Bl[0]))]\n" + got + "ok = got == want\n",
        "composition_swizzled": tile + "want = [swizzle(OFFSET + at(A, at(Bl, i)), *SW) for i in range(size(Bl[0]))]\n"
        + got + "ok = got == want\n",
        "swizzle": "want = [swizzle(OFFSET + at(A, i), *SW) for i in range(size(A[0]))]\n" + got + "ok = got == want\n",
        "slice_swizzled": "fixed, kept = sliced(A[0], A[1], COORD)\nK = (tuple(n for n, _ in kept), tuple(d for _, d in kept))\n"
        "want = [swizzle(OFFSET + fixed + at(K, i), *SW) for i in range(size(K[0]))]\n" + got + "ok = got == want\n",
        "complement": got + "both = offsets(A) and [a + r for r in got for a in offsets(A)]\n"
        "want = 'every mode of size >= 1, (A, R) injective'\n"
        "ok = 0 not in flat(tup(R['shape'])) and len(set(both)) == len(both)\n",
        "left_inverse": "L = (tup(R['shape']), tup(R['stride']))\nwant = list(range(size(A[0])))\n"
        "got = [at(L, a) for a in offsets(A)]\nok = got == want\n",
        "divide": tile + "want = [at(A, at(Bl, i)) for i in range(size(Bl[0]))]\n" + got +
        "ok = len(got) == size(A[0]) and got[:len(want)] == want and sorted(got) == sorted(offsets(A))\n",
        "product": tile + "inj = lambda v: len(set(v)) == len(v)\nwant = f'size {size(A[0]) * size(Bl[0])}, starting with A: "
        "{offsets(A)}'\n" + got + "ok = len(got) == size(A[0]) * size(Bl[0]) and got[:size(A[0])] == offsets(A) and "
        "(inj(got) or not (inj(offsets(A)) and inj(offsets(Bl))))\n",
        "recast": "k = max(BITS) // min(BITS)\n" + got + (
            "want = sorted(k * a + r for a in offsets(A) for r in range(k))\nok = sorted(got) == want\n"
            if p.get("bits", (0, 1))[0] < p.get("bits", (0, 1))[1] else
            "want = sorted({a // k for a in offsets(A)}) if all(a // k * k + r in offsets(A) for a in offsets(A) "
            "for r in range(k)) else 'a refusal: the offsets of A are not whole groups of k'\n"
            "ok = sorted(set(got)) == want and {k * q + r for q in got for r in range(k)} == set(offsets(A))\n"),
        "filter_zeros_profile": got + "want = sorted(set(offsets(A)))\nok = sorted(set(got)) == want\n",
        "nullspace": got + "want = [i for i in range(size(A[0])) if at(A, i) == 0]\nok = sorted(got) == want\n",
        "extend": "want = 'ValueError'\ngot = R.get('raised') or 'no raise: %s:%s %s' % (R['shape'], R['stride'], R.get('trace', ''))\nok = str(got).startswith('ValueError')\n",
        "make_layout_tv": got + "want = 'distinct elements'\nok = len(set(got)) == len(got)\n",
        "raked_product": "want = f'size {size(A[0]) * size(B[0])}, every size(B)-th offset A: {offsets(A)}'\n" + got +
        "ok = len(got) == size(A[0]) * size(B[0]) and got[::size(B[0])] == offsets(A)\n",
        "blocked_product": "want = f'size {size(A[0]) * size(B[0])}, starting with A: {offsets(A)}'\n" + got +
        "ok = len(got) == size(A[0]) * size(B[0]) and got[:size(A[0])] == offsets(A)\n",
    }
    if op in ("raked_product", "blocked_product") and not (isinstance(p["a"].get("shape"), int)
                                                          and isinstance(p["b"].get("shape"), int)):
        return None  # rank-1 A and B only: where the modes' order fixes these offsets
    if fam == "extend" and precondition(p) is None:
        return None
    if fam == "recast" or op == "recast":
        return lines["recast"]
    return lines.get(fam) or lines.get(op)


def _constants(p: Mapping[str, Any]) -> str:
    """The case's inputs as Python literals, one line each."""
    call = Call.of(p)
    values = {"A": call.a, "B": call.b, "M": call.m, "SW": call.swizzle, "OFFSET": call.offset, "BITS": call.bits,
              **{k.upper(): v for k, v in call.extra}}
    return "".join(f"{name} = {value!r}\n" for name, value in values.items() if value is not None)


def algebra_script(case: Case, system: str, version_line: str, child: str) -> str | None:
    """A reproducer for one CuTe algebra case: ``child`` (Python source that uses only ``system`` and prints
    ``ANSWER <json>``) runs in a child process (the DSL can die by a signal); the parent checks the answer against the
    operation's definition, computed inline. Exit 1 while the bug shows, 0 once gone, 2 where the release lacks the
    call; None where no reproducer checks the case's operation."""
    p = case.params
    judge = _judge_lines(p)
    if judge is None:
        return None
    unmet = precondition(p)
    if unmet and unmet.split(":")[0] in IMPLEMENTATION_DEFINED:
        return None
    fam = _family(p["op"])
    definition = SCRIPT_DEFINITIONS.get(fam if fam in SCRIPT_DEFINITIONS else p["op"], "")
    if p["op"] == "recast":
        definition = SCRIPT_DEFINITIONS["downcast" if p["bits"][0] < p["bits"][1] else "upcast"]
    consts = _constants(p)
    return f'''"""{system}'s {p["op"]} on one input ({case.case_id}, found by layoutfuzz): {"a refusal is due, since " + unmet
        if unmet else "the input meets every documented precondition, so the answer must have the definition: " + definition}.
Needs only {system}; runs on a CPU. Exit 1 while the problem shows, 0 once it is gone, 2 where this release lacks
the call."""
import json
import os
import subprocess
import sys
import tempfile
from math import prod

{consts}# why the input is outside the operation's domain (CuTe C++ refuses it), or None where it is inside
PRECONDITION = {unmet!r}
DEFINITION = {definition!r}

CHILD = r"""{child}"""
{SCRIPT_HELPERS}

with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as child_file:  # the DSL reads a traced function's source
    child_file.write(CHILD)
child = subprocess.run([sys.executable, child_file.name], capture_output=True, text=True)
os.unlink(child_file.name)
answer = next((line[7:] for line in child.stdout.splitlines() if line.startswith("ANSWER ")), None)
print({version_line})
if answer is None and (child.returncode < 0 or child.returncode > 128):
    print("expected:", "a refusal (" + PRECONDITION + ")" if PRECONDITION else "an answer with " + DEFINITION)
    print(f"observed: the process died (rc {{child.returncode}})", (child.stderr.strip().splitlines() or [""])[-1][:200])
    sys.exit(1)
if answer is None:
    print("observed: cannot run here:", (child.stderr.strip().splitlines() or [""])[-1][:300])
    sys.exit(2)
R = json.loads(answer)
if "unavailable" in R:
    print("observed: this release lacks the call:", R["unavailable"])
    sys.exit(2)
if "raised" in R and {fam != "extend"!r}:
    print("expected:", "a refusal (" + PRECONDITION + ")" if PRECONDITION else "an answer with " + DEFINITION)
    print("observed: raised", R["raised"][:300])
    sys.exit(0 if PRECONDITION else 1)
{judge}print("expected:", "a refusal (" + PRECONDITION + ")" if PRECONDITION and {fam != "extend"!r} else want)
print("observed:", got if "raised" in R or "trace" in R else R if "offsets" in R else "%s:%s, offsets %s" % (R["shape"], R["stride"], got),
      "" if ok else "(not " + DEFINITION + ")")
sys.exit(1 if PRECONDITION and {fam != "extend"!r} or not ok else 0)
'''
