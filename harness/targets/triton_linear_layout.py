"""Target ``triton.linear_layout``: Triton's C++ LinearLayout (pybind, no GPU) against the oracle.

Every operation the binding exposes is exercised on random layouts of every kind. Preconditions
that Triton asserts on (invert needs an invertible layout, pseudoinvert a surjective one, ...)
are respected, since a violated assertion aborts the process: a crash found here is therefore a
real finding, not a misuse.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

from layoutfuzz.generators.case import Case
from layoutfuzz.generators.layouts import (
    HARDWARE_DIMS,
    LAYOUT_KINDS,
    arbitrary_layout,
    distributed_layout,
    sample_layout,
)
from layoutfuzz.generators.shrink import joint_out_dim_halvings, layout_shrinks, replaced
from layoutfuzz.generators.source import Source
from layoutfuzz.generators.space import Parameter, Space
from layoutfuzz.generators.validity import check_layout_kind, power_of_two
from layoutfuzz.harness.compare import Comparison, compare_values
from layoutfuzz.harness.target import Availability, Target
from layoutfuzz.oracles.linear_layout import LinearLayout

OPS = (
    "apply",
    "compose",
    "product",
    "invert",
    "pseudoinvert",
    "invert_and_compose",
    "predicates",
    "matrix_view",
    "constructors",
)
SURJECTIVE_KINDS = ("distributed", "memory", "invertible", "arbitrary")
INVERTIBLE_KINDS = ("memory", "invertible", "distributed")
MAX_BITS = 10  # output bits; inputs stay within 13 bits so that apply over all inputs is quick


def _triton_ll():
    from triton._C.libtriton import linear_layout

    return linear_layout.LinearLayout


def to_triton(layout: LinearLayout):
    """The same layout in Triton's binding (no surjectivity requirement)."""
    return _triton_ll().from_bases(
        [(n, [list(b) for b in bases]) for n, bases in layout.in_dims],
        list(layout.out_dim_names),
        [s for _, s in layout.out_dims],
        False,
    )


def from_triton(tt) -> dict[str, Any]:
    """A Triton layout as the oracle's plain-data form."""
    return {"bases": [[n, [list(b) for b in bs]] for n, bs in tt.bases], "out_dims": [[n, s] for n, s in tt.out_dims]}


def apply_all(tt, layout: LinearLayout) -> dict[str, np.ndarray]:
    """Triton's image of every packed input of ``layout`` (its binding applies one point a call)."""
    values = {n: np.zeros(1 << layout.total_in_bits, dtype=np.int64) for n in layout.out_dim_names}
    widths = [(n, len(b)) for n, b in layout.in_dims]
    for flat in range(1 << layout.total_in_bits):
        point, shift = {}, 0
        for n, w in widths:
            point[n] = flat >> shift & ((1 << w) - 1)
            shift += w
        for n, v in tt.apply(point).items():
            values[n][flat] = v
    return values


def _surjective(source: Source, kind: str, max_bits: int, **kw: Any) -> LinearLayout:
    """A surjective layout of ``kind``; arbitrary draws are retried (then made distributed)."""
    for _ in range(8):
        layout = sample_layout(source, kind, max_bits, **kw)
        if layout.is_surjective():
            return layout
    return sample_layout(source, "distributed", max_bits, **kw)


def _invertible(source: Source, kind: str) -> LinearLayout:
    if kind == "distributed":  # a permutation of bits: Def 4.10 without broadcasting
        return distributed_layout(source, max_out_bits=MAX_BITS, max_broadcast_bits=0)
    return sample_layout(source, kind, MAX_BITS)


class TritonLinearLayout(Target):
    """Triton's LinearLayout binding, operation by operation; family = operation/layout kind."""

    name = "triton.linear_layout"
    description = "Triton's C++ LinearLayout algebra (CPU) against the F2 oracle, operation by operation"
    requires = ("triton",)
    preload = ("triton._C.libtriton",)
    layer = "Triton's layout library (LinearLayout, C++)"

    def availability(self) -> Availability:
        try:
            _triton_ll()
        except Exception as exc:  # ImportError, or a binding without linear_layout
            return Availability(False, f"triton's linear_layout binding is not importable: {exc}")
        return Availability(True)

    # ---- cases ---------------------------------------------------------------------------

    def generate(self, source: Source) -> dict[str, Any]:
        op = source.choice(OPS)
        params: dict[str, Any] = {"op": op}
        if op in ("apply", "predicates", "matrix_view"):
            kind = source.choice(LAYOUT_KINDS)
            if source.integer(0, 1):  # half the time a warp's, a CTA's or a cluster's input dims and up to 4 output dims
                dims = None if kind == "memory" else source.choice(HARDWARE_DIMS if kind != "invertible" else (("offset",), ("offset", "block")))
                params.update(kind=kind, layout=sample_layout(source, kind, MAX_BITS, dims, max_rank=4).to_dict())
            else:
                params.update(kind=kind, layout=sample_layout(source, kind, MAX_BITS).to_dict())
        elif op == "compose":
            kind = source.choice(LAYOUT_KINDS)
            inner = sample_layout(source, kind, MAX_BITS)
            outer_kind = source.choice(("arbitrary", "distributed"))
            names = list(inner.out_dim_names)
            bits = [s.bit_length() - 1 for _, s in inner.out_dims]
            if outer_kind == "distributed":
                outer = distributed_layout(source, names, MAX_BITS, fixed_bits=dict(zip(names, bits)))
            else:
                outer = arbitrary_layout(source, names, max_out_bits=MAX_BITS, in_bits=bits)
            params.update(kind=kind, outer_kind=outer_kind, layout=inner.to_dict(), outer=outer.to_dict())
        elif op == "product":
            kind = source.choice(LAYOUT_KINDS)
            dims = None if kind in ("memory", "invertible") else source.choice(HARDWARE_DIMS)
            a = sample_layout(source, kind, MAX_BITS // 2, dims)
            b = sample_layout(source, kind, MAX_BITS // 2, dims)
            params.update(kind=kind, layout=a.to_dict(), outer=b.to_dict())
        elif op == "invert":
            kind = source.choice(INVERTIBLE_KINDS)
            params.update(kind=kind, layout=_invertible(source, kind).to_dict())
        elif op == "pseudoinvert":
            kind = source.choice(SURJECTIVE_KINDS)
            params.update(kind=kind, layout=_surjective(source, kind, MAX_BITS).to_dict())
        elif op == "invert_and_compose":
            kind = source.choice(SURJECTIVE_KINDS)
            outer = _surjective(source, kind, MAX_BITS)
            inner_kind = source.choice(("distributed", "arbitrary"))
            if inner_kind == "distributed":
                inner = distributed_layout(source, outs=outer.out_dims)
            else:
                inner = arbitrary_layout(source, outs=outer.out_dims)
            params.update(kind=f"{inner_kind}/{kind}", layout=inner.to_dict(), outer=outer.to_dict())
        else:  # constructors
            ctor = source.choice(("identity_1d", "strided_1d", "zeros_1d"))
            params.update(kind=ctor, size=1 << source.integer(0, 8), stride=1 << source.integer(0, 4))
            params.update(out_size=1 << source.integer(0, 4))
        return params

    def validate(self, case: Case) -> None:
        """The generator's rules (generators.validity) and the preconditions Triton asserts on."""
        p = case.params
        if p.get("op") not in OPS:
            raise ValueError(f"unknown op {p.get('op')!r}; ops: {', '.join(OPS)}")
        if not isinstance(p.get("kind"), str):
            raise ValueError("no 'kind'")
        op, kind = p["op"], p["kind"]
        if op == "constructors":
            if kind not in ("identity_1d", "strided_1d", "zeros_1d"):
                raise ValueError(f"unknown constructor {kind!r}")
            power_of_two(p.get("size"), "size", 1, 256)
            power_of_two(p.get("stride"), "stride", 1, 16)
            power_of_two(p.get("out_size"), "out_size", 1, 16)
            return
        layout = _layout(p, "layout")
        outer = _layout(p, "outer") if "outer" in p else None
        if op in ("apply", "predicates", "matrix_view", "compose", "product"):
            check_layout_kind(layout, kind, MAX_BITS)
        if op == "compose":
            if outer is None or p.get("outer_kind") not in ("arbitrary", "distributed"):
                raise ValueError("compose needs 'outer' and 'outer_kind' (arbitrary or distributed)")
            check_layout_kind(outer, p["outer_kind"], MAX_BITS, named_inputs=False)
            if outer.in_sizes != layout.out_dims:
                raise ValueError("the outer layout's inputs are not the inner layout's outputs")
        elif op == "product":
            if outer is None:
                raise ValueError("product needs 'outer'")
            check_layout_kind(outer, kind, MAX_BITS)
        elif op == "invert":
            if kind not in INVERTIBLE_KINDS or not layout.is_invertible():
                raise ValueError("invert needs an invertible layout")
            check_layout_kind(layout, kind, MAX_BITS)
        elif op == "pseudoinvert":
            if kind not in SURJECTIVE_KINDS or not layout.is_surjective():
                raise ValueError("pseudoinvert needs a surjective layout")
            check_layout_kind(layout, kind, MAX_BITS)
        elif op == "invert_and_compose":
            inner_kind, _, outer_kind = kind.partition("/")
            if inner_kind not in ("distributed", "arbitrary") or outer_kind not in SURJECTIVE_KINDS or outer is None:
                raise ValueError("invert_and_compose: kind INNER/OUTER and an 'outer' layout")
            if not outer.is_surjective() or outer.out_dims != layout.out_dims:
                raise ValueError("invert_and_compose needs a surjective outer layout with the inner layout's outputs")
            check_layout_kind(layout, inner_kind, MAX_BITS)
            check_layout_kind(outer, outer_kind, MAX_BITS)

    def shrink(self, case: Case) -> Iterator[dict[str, Any]]:
        """Halve an output dim (of both layouts where they share it), drop or zero a basis vector."""
        p = case.params
        if p.get("op") == "constructors":
            for key in ("size", "stride", "out_size"):
                if p.get(key, 1) > 1:
                    yield replaced(p, **{key: p[key] // 2})
            return
        if p.get("op") == "invert_and_compose":
            for inner, outer in joint_out_dim_halvings([p["layout"], p["outer"]]):
                yield replaced(p, layout=inner, outer=outer)
        for key in ("layout", "outer"):
            if key in p:
                for smaller in layout_shrinks(p[key]):
                    yield replaced(p, **{key: smaller})

    def family(self, case: Case) -> str:
        return f"{case.params['op']}/{case.params['kind']}"

    def parameter_space(self) -> Space:
        """The ops over Triton's LinearLayout binding (triton._C.libtriton.linear_layout), the layout kinds of the
        paper (Defs 4.10, 4.14: distributed, memory; invertible, injective, arbitrary), and the layouts' sizes."""
        binding = "Triton's LinearLayout Python binding (triton._C.libtriton.linear_layout)"
        kinds_for = {"invert": INVERTIBLE_KINDS, "pseudoinvert": SURJECTIVE_KINDS, "invert_and_compose": SURJECTIVE_KINDS}

        def layout(p: Mapping[str, Any]) -> LinearLayout | None:
            return LinearLayout.from_dict(p["layout"]) if "layout" in p else None

        def illegal(a: str, x: Any, b: str, y: Any) -> bool:
            pair = {a: x, b: y}
            if "op" in pair and pair["op"] == "constructors":  # a constructor takes sizes, not a layout
                return "constructor" not in pair
            if "constructor" in pair:  # only the op constructors has one, and it has no layout
                return pair.get("op") != "constructors"
            if "op" in pair and "kind" in pair:
                return pair["kind"] not in kinds_for.get(pair["op"], LAYOUT_KINDS)
            return False

        wide = {bits: f"inputs stay within 13 bits so that apply over all inputs is quick (MAX_BITS {MAX_BITS})"
                for bits in range(MAX_BITS + 1, 17)}
        return Space((
            Parameter("op", OPS, binding, lambda p: p["op"]),
            Parameter("kind", LAYOUT_KINDS, "the paper: Defs 4.10 and 4.14, and Section 4's layout classes",
                      lambda p: None if p["op"] == "constructors" else p["kind"].split("/")[-1]),
            Parameter("constructor", ("identity_1d", "strided_1d", "zeros_1d"), binding,
                      lambda p: p["kind"] if p["op"] == "constructors" else None),
            Parameter("output bits", tuple(range(17)), "Triton's LinearLayout: output dims of power-of-two sizes",
                      lambda p: None if layout(p) is None else layout(p).total_out_bits, wide),
            Parameter("output dims", (1, 2, 3, 4), "Triton's tensors up to rank 4 in the layouts it builds",
                      lambda p: None if layout(p) is None else len(layout(p).out_dims)),
            Parameter("input dims", (1, 2, 3, 4), "register, lane, warp, block (Def 4.10) or offset (Def 4.14)",
                      lambda p: None if layout(p) is None else len(layout(p).in_dims)),
        ), illegal)

    # ---- the oracle ----------------------------------------------------------------------

    def expected(self, case: Case) -> Any:
        p = case.params
        op = p["op"]
        if op == "constructors":
            return _constructor(LinearLayout, p).to_dict()
        layout = LinearLayout.from_dict(p["layout"])
        if op == "apply":
            return {"out_dims": layout.to_dict()["out_dims"], "values": layout.apply_all()}
        if op == "predicates":
            return {"injective": layout.is_injective(), "surjective": layout.is_surjective(),
                    "invertible": layout.is_invertible()}
        if op == "matrix_view":
            return layout.matrix()
        if op == "compose":
            return layout.compose(LinearLayout.from_dict(p["outer"])).to_dict()
        if op == "product":
            return (layout * LinearLayout.from_dict(p["outer"])).to_dict()
        if op == "invert":
            return layout.invert().to_dict()
        if op == "pseudoinvert":
            return layout.right_inverse().to_dict()
        if op == "invert_and_compose":
            return layout.invert_and_compose(LinearLayout.from_dict(p["outer"])).to_dict()
        raise ValueError(f"unknown op {op!r}")

    # ---- the system under test -----------------------------------------------------------

    def observed(self, case: Case) -> Any:
        p = case.params
        op = p["op"]
        TT = _triton_ll()
        if op == "constructors":
            return from_triton(_constructor(TT, p))
        layout = LinearLayout.from_dict(p["layout"])
        tt = to_triton(layout)
        if op == "apply":
            return {"out_dims": [[n, s] for n, s in tt.out_dims], "values": apply_all(tt, layout)}
        if op == "predicates":
            return {"injective": tt.is_injective(), "surjective": tt.is_surjective(), "invertible": tt.is_invertible()}
        if op == "matrix_view":
            return np.array(tt.get_matrix_view(), dtype=np.uint8).reshape(layout.total_out_bits, layout.total_in_bits)
        if op == "compose":
            return from_triton(tt.compose(to_triton(LinearLayout.from_dict(p["outer"]))))
        if op == "product":
            return from_triton(tt * to_triton(LinearLayout.from_dict(p["outer"])))
        if op == "invert":
            return from_triton(tt.invert())
        if op == "pseudoinvert":
            return from_triton(tt.pseudoinvert())
        if op == "invert_and_compose":
            return from_triton(tt.invert_and_compose(to_triton(LinearLayout.from_dict(p["outer"]))))
        raise ValueError(f"unknown op {op!r}")

    def reproducer_script(self, case: Case) -> str | None:
        """A script that needs only Triton (``layoutfuzz export``)."""
        return reproducer(case)

    def compare(self, case: Case, expected: Any, observed: Any) -> Comparison:
        op = case.params["op"]
        if op not in ("pseudoinvert", "invert_and_compose"):  # a layout's bases and out dims, a predicate, ...: by field
            return compare_values(expected, observed, by_field=True)
        # A right inverse is unique only when the layout is injective: another valid choice of
        # slack variables is no divergence, so compare the defining property (L ∘ R = id, or
        # outer ∘ C = L) and the dims, and note whether the choice matches the oracle's.
        layout = LinearLayout.from_dict(case.params["layout"])
        try:
            got = LinearLayout.from_dict(observed)
        except ValueError as exc:
            return Comparison(False, 1, (f"observed is not a layout: {exc}",), "malformed")
        want = LinearLayout.from_dict(expected)
        dims = compare_values(
            {"in": want.in_sizes, "out": want.out_dims}, {"in": got.in_sizes, "out": got.out_dims}, by_field=True
        )
        if not dims.ok:
            return dims
        if op == "pseudoinvert":
            verdict = compare_values(LinearLayout.identity(layout.out_dims).table(), got.compose(layout).table())
        else:
            outer = LinearLayout.from_dict(case.params["outer"])
            verdict = compare_values(layout.table(), got.compose(outer).table())
        if not verdict.ok:
            return Comparison(False, verdict.mismatch_count, verdict.mismatches, "property:" + verdict.signature)
        note = "same as the oracle's choice" if got == want else "another valid choice of slack variables"
        return Comparison(True, note=note)


def _layout(p: Mapping[str, Any], key: str) -> LinearLayout:
    try:
        return LinearLayout.from_dict(p[key])
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"{key!r} is not a linear layout: {exc}") from None


def _constructor(cls, p: Mapping[str, Any]):
    if p["kind"] == "identity_1d":
        return cls.identity_1d(p["size"], "register", "dim0")
    if p["kind"] == "strided_1d":
        return cls.strided_1d(p["size"], p["stride"], "register", "dim0")
    return cls.zeros_1d(p["size"], "register", "dim0", p["out_size"])


def reproducer(case: Case) -> str | None:
    """A script that needs only Triton: ``LinearLayout.invert_and_compose`` through ``triton._C.libtriton.linear_layout``
    in a child process (an abort kills only the child), its answer C checked inline (F2: B(C(x)) == A(x) for every
    input x, each image the XOR of the bases of x's set bits); None for the other operations."""
    p = case.params
    if p["op"] != "invert_and_compose":
        return None
    a, b = p["layout"], p["outer"]
    return f'''"""Triton's LinearLayout.invert_and_compose on a valid input ({case.case_id}, found by layoutfuzz): C = A.invert_and_compose(B)
must satisfy B(C(x)) == A(x) for every input x (B is injective onto A's image). Needs only Triton; runs on a CPU.
Exit 1 while the call aborts or answers wrong, 0 once it answers right."""
import json
import subprocess
import sys

A = {a!r}
B = {b!r}

CHILD = """
import json, sys
from triton._C.libtriton import linear_layout
A, B = json.loads(sys.argv[1]), json.loads(sys.argv[2])
def ll(d):
    return linear_layout.LinearLayout.from_bases([(n, bs) for n, bs in d["bases"]], [n for n, _ in d["out_dims"]],
                                                 [s for _, s in d["out_dims"]], False)
try:
    c = ll(A).invert_and_compose(ll(B))
    out = {{"bases": [[n, [list(x) for x in bs]] for n, bs in c.bases], "out_dims": [[n, s] for n, s in c.out_dims]}}
except Exception as exc:
    out = {{"raised": f"{{type(exc).__name__}}: {{exc}}"[:300]}}
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
        point, shift = {{}}, 0
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
    print(f"observed: the process died (rc {{child.returncode}}):", next((t for t in tail if "ssert" in t), tail[-1])[:300])
    sys.exit(1 if child.returncode < 0 or child.returncode > 128 else 2)
C = json.loads(answer)
if "raised" in C:
    print("observed: raised", C["raised"])
    sys.exit(1)
names = [n for n, _ in C["out_dims"]]
got = [apply(B, dict(zip(names, apply(C, x)))) for x in inputs(A)]
print("observed: C =", C, "B(C(x)):", got)
sys.exit(0 if got == want else 1)
'''
