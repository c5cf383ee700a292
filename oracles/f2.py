"""Linear algebra over F2 on bit-packed column vectors.

A matrix is a sequence of columns, each column a Python int whose bit ``r`` is row ``r``.
Gaussian elimination processes columns in order, so the pivot columns are the first
independent ones and every dependent ("slack") column gets coefficient zero: the choice
Section 5.4 of the Linear Layouts paper prescribes for right inverses.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field


@dataclass
class EchelonBasis:
    """An echelon basis of the span of some columns, remembering how each row was made.

    ``rows[p] = (vector, combination)``: ``vector`` has highest set bit ``p`` and equals the
    XOR of the original columns whose indices are set in ``combination``.
    """

    rows: dict[int, tuple[int, int]] = field(default_factory=dict)
    pivot_columns: list[int] = field(default_factory=list)

    @classmethod
    def of(cls, columns: Sequence[int]) -> EchelonBasis:
        basis = cls()
        for index, column in enumerate(columns):
            basis.insert(column, 1 << index, index)
        return basis

    def insert(self, vector: int, combination: int, index: int) -> bool:
        """Adds a column; returns whether it was independent of the columns before it."""
        vector, combination = self.reduce(vector, combination)
        if not vector:
            return False
        self.rows[vector.bit_length() - 1] = (vector, combination)
        self.pivot_columns.append(index)
        return True

    def reduce(self, vector: int, combination: int = 0) -> tuple[int, int]:
        """Reduces ``vector`` from its highest bit down.

        Returns the residual, whose highest bit is no pivot (zero if ``vector`` lies in the
        span), and the combination of columns used.
        """
        while vector:
            top = vector.bit_length() - 1
            row = self.rows.get(top)
            if row is None:
                break
            vector ^= row[0]
            combination ^= row[1]
        return vector, combination

    def project(self, vector: int) -> int:
        """Writes ``vector`` in the pivot columns, dropping the components outside the span.

        Components along non-pivot rows (unit vectors completing the span to the whole space)
        are set to zero, so the result is linear in ``vector``: a generalised inverse.
        """
        combination = 0
        while vector:
            vector, combination = self.reduce(vector, combination)
            if vector:
                vector ^= 1 << (vector.bit_length() - 1)  # a component outside the span
        return combination

    @property
    def rank(self) -> int:
        return len(self.rows)


def rank(columns: Sequence[int]) -> int:
    """Rank over F2 of the matrix with these columns."""
    return EchelonBasis.of(columns).rank


def multiply(outer: Sequence[int], inner: Sequence[int]) -> list[int]:
    """Columns of ``outer @ inner``: each inner column selects outer columns to XOR."""
    result = []
    for column in inner:
        value = 0
        bit = 0
        while column:
            if column & 1:
                value ^= outer[bit]
            column >>= 1
            bit += 1
        result.append(value)
    return result


def solve(columns: Sequence[int], targets: Sequence[int]) -> list[int] | None:
    """X with ``M @ X = targets`` and slack variables zero, or None if some target is outside im(M)."""
    basis = EchelonBasis.of(columns)
    solution = []
    for target in targets:
        residual, combination = basis.reduce(target)
        if residual:
            return None
        solution.append(combination)
    return solution
