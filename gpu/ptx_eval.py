"""What a kernel's PTX computes for one thread, where that is integer and predicate arithmetic on ``%tid.x`` and
``%cluster_ctarank``: the one layer below a Triton kernel that a CPU can check without running it.

A small evaluator, not a PTX interpreter: it follows the definitions of the registers an instruction reads, back to
special registers and constants, with the arithmetic of PTX ISA 9.7.1 (integer) and 9.7.7 (comparison and selection),
and ``elect.sync`` electing lane 0. An instruction it does not know raises ``NotImplementedError``: a check built on
it fails rather than guesses. Registers are read from their last definition in the text (Triton's straight-line
prologues define each once).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

_ARITHMETIC: dict[str, Callable[[int, int], int]] = {
    "and": lambda a, b: a & b, "or": lambda a, b: a | b, "xor": lambda a, b: a ^ b, "shl": lambda a, b: a << b,
    "shr": lambda a, b: a >> b, "add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
    "min": min, "max": max,
}
_COMPARE: dict[str, Callable[[int, int], bool]] = {
    "eq": lambda a, b: a == b, "ne": lambda a, b: a != b, "lt": lambda a, b: a < b, "le": lambda a, b: a <= b,
    "gt": lambda a, b: a > b, "ge": lambda a, b: a >= b,
}
_DEFINITION = re.compile(r"(?:@!?%p\d+\s+)?([a-z][\w.]*)\s+(%\w+)(?:\|(%\w+))?\s*,\s*([^;]*);")
_TENSOR_LOAD = re.compile(r"@(!?%p\d+)\s+cp\.async\.bulk\.tensor\.(\d)d\.[^\[]*\[(%r\d+)\],\s*\[%rd\d+,\s*\{([^}]*)\}\],"
                          r"\s*\[(%r\d+)\](?:,\s*(%rs?\d+|\d+))?\s*;")


@dataclass(frozen=True)
class Thread:
    """Where the evaluation stands: the thread's ``%tid.x`` in its CTA and the CTA's ``%cluster_ctarank``; symbols
    (a shared-memory base such as ``global_smem``) read as 0 unless given."""

    tid: int
    rank: int = 0
    symbols: Mapping[str, int] | None = None

    def special(self, name: str) -> int | None:
        return {"%tid.x": self.tid, "%laneid": self.tid % 32, "%cluster_ctarank": self.rank}.get(name)


@dataclass(frozen=True)
class TensorLoad:
    """One ``cp.async.bulk.tensor`` a thread issues: its coordinates (innermost first), its shared-memory destination,
    its mbarrier and, for ``.multicast::cluster``, the mask of destination CTAs (None without multicast)."""

    rank: int
    tid: int
    coords: tuple[int, ...]
    dst: int
    barrier: int
    mask: int | None


class Kernel:
    """A PTX kernel's register definitions, evaluated per thread."""

    def __init__(self, ptx: str) -> None:
        self.ptx = ptx
        self.definitions: dict[str, tuple[str, list[str]]] = {}
        for line in ptx.splitlines():
            found = _DEFINITION.match(line.split("//")[0].strip())
            if not found:
                continue
            op, dst, second, args = found[1], found[2], found[3], [a.strip() for a in found[4].split(",") if a.strip()]
            if op.startswith("elect.sync"):
                self.definitions[dst] = ("elect.lane", [])
                if second:
                    self.definitions[second] = ("elect.pred", [])
                continue
            self.definitions[dst] = (op, args)

    def value(self, operand: str, thread: Thread) -> int:
        """The value of a register, special register, symbol or constant for ``thread``."""
        operand = operand.strip()
        if operand.startswith("!"):
            return int(not self.value(operand[1:], thread))
        special = thread.special(operand)
        if special is not None:
            return special
        if operand.startswith("%"):
            return _evaluate(self, operand, thread)
        if re.fullmatch(r"-?(0[xX][0-9a-fA-F]+|\d+)", operand):
            return int(operand, 0)
        if re.fullmatch(r"[A-Za-z_$][\w$]*", operand):
            return (thread.symbols or {}).get(operand, 0)
        raise NotImplementedError(f"operand {operand!r}: a constant the evaluator does not read")

    def tensor_loads(self, threads: int, ranks: int = 1, symbols: Mapping[str, int] | None = None) -> list[TensorLoad]:
        """Every ``cp.async.bulk.tensor`` load that each of ``threads`` threads in each of ``ranks`` CTAs issues."""
        out = []
        for found in _TENSOR_LOAD.finditer(self.ptx):
            guard, _, dst, coords, barrier, mask = found.groups()
            for rank in range(ranks):
                for tid in range(threads):
                    thread = Thread(tid, rank, symbols)
                    if self.value(guard, thread):
                        out.append(TensorLoad(rank, tid, tuple(self.value(c, thread) for c in coords.split(",")),
                                              self.value(dst, thread), self.value(barrier, thread),
                                              None if mask is None else self.value(mask, thread)))
        return out


def _bits(op: str) -> int:
    """The width of the destination: the first type of a ``cvt``, the type of anything else."""
    widths = [int(part[1:]) for part in op.split(".")[1:] if part[1:].isdigit() and part[0] in "bsu"]
    return widths[0] if widths else 32


def _evaluate(kernel: Kernel, register: str, thread: Thread) -> int:
    op, args = kernel.definitions[register]
    name, *modifiers = op.split(".")

    def arg(i: int) -> int:
        return kernel.value(args[i], thread)

    if op == "elect.lane":
        return 0
    if op == "elect.pred":
        return int(thread.tid % 32 == 0)
    if name in ("mov", "cvt", "cvta"):
        value = arg(0)
    elif name == "bfe":
        value = (arg(0) >> arg(1)) & ((1 << arg(2)) - 1)
    elif name == "setp":
        return int(_COMPARE[modifiers[0]](arg(0), arg(1)))
    elif name == "shfl" and modifiers[:2] == ["sync", "idx"] and kernel.value(args[2], thread) == 31:
        lane = kernel.value(args[1], thread) & 31  # the value ``args[0]`` has in that lane of this warp
        return kernel.value(args[0], Thread(thread.tid - thread.tid % 32 + lane, thread.rank, thread.symbols))
    elif name == "selp":
        value = arg(0) if arg(2) else arg(1)
    elif name == "not" and modifiers == ["pred"]:
        return int(not arg(0))
    elif name in _ARITHMETIC and modifiers[:1] == ["pred"]:
        return int(bool(_ARITHMETIC[name](arg(0), arg(1))))
    elif name in _ARITHMETIC:
        value = _ARITHMETIC[name](arg(0), arg(1))
    else:
        raise NotImplementedError(f"{register} = {op} {', '.join(args)}: an instruction the evaluator does not know")
    return value & ((1 << _bits(op)) - 1)

