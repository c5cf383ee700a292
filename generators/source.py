"""Where random choices come from: a seeded PRNG for campaigns, Hypothesis for property tests.

Samplers take a ``Source`` so that one piece of code defines a distribution for both: the
harness gets byte-identical cases from (target, seed, index) on every machine, and Hypothesis
gets draws it can shrink.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypeVar

T = TypeVar("T")


class Source(Protocol):
    """The random choices a sampler may make."""

    def integer(self, low: int, high: int) -> int:
        """A uniform integer in [low, high]."""
        ...

    def choice(self, options: Sequence[T]) -> T:
        """One of ``options``; the first is the simplest (Hypothesis shrinks towards it)."""
        ...


def permutation(source: Source, n: int) -> list[int]:
    """A permutation of range(n) (Fisher-Yates; the identity is the simplest)."""
    items = list(range(n))
    for i in range(n - 1, 0, -1):
        j = i - source.integer(0, i)
        items[i], items[j] = items[j], items[i]
    return items


EDGE_SHARE = 4  # one case in EDGE_SHARE is drawn at its domain's edges


def at_edge(source: Source) -> bool:
    """Whether this case is drawn at its domain's edges (one case in ``EDGE_SHARE``): a campaign meets the smallest
    and largest values of every parameter every night, not only their middle."""
    return source.integer(1, EDGE_SHARE) == 1


def bounded(source: Source, low: int, high: int, edge: bool) -> int:
    """A uniform integer in [low, high]; at the edges, ``low`` or ``high``."""
    return source.choice((low, high)) if edge else source.integer(low, high)


def bits(source: Source, count: int) -> int:
    """``count`` random bits as an int."""
    return source.integer(0, (1 << count) - 1) if count else 0


class RandomSource:
    """A ``Source`` over Python's Mersenne Twister, seeded from a string.

    String seeds go through SHA-512 and ``randrange`` is specified exactly, so the stream is
    the same on every platform and Python version the project supports.
    """

    def __init__(self, seed: str | int) -> None:
        self._random = random.Random(seed)
        self._bits = self._random.getrandbits

    def integer(self, low: int, high: int) -> int:
        return low + self._below(high - low + 1)

    def choice(self, options: Sequence[T]) -> T:
        return options[self._below(len(options))]

    def _below(self, n: int) -> int:
        """``Random.randrange(n)``, draw for draw (its ``_randbelow_with_getrandbits``, the same on every supported
        Python), without its argument handling: a campaign draws millions a second."""
        if n <= 0:
            raise ValueError(f"empty range for a draw below {n}")
        k = n.bit_length()
        r = self._bits(k)
        while r >= n:
            r = self._bits(k)
        return r


def source_for(target: str, seed: int, index: int) -> RandomSource:
    """The source of case ``index`` of ``target`` in the campaign with ``seed``."""
    return RandomSource(f"layoutfuzz/{target}/{seed}/{index}")


class HypothesisSource:
    """A ``Source`` over a Hypothesis ``draw`` function (inside ``st.composite``)."""

    def __init__(self, draw: Callable[[Any], Any]) -> None:
        self._draw = draw

    def integer(self, low: int, high: int) -> int:
        from hypothesis import strategies as st

        return self._draw(st.integers(low, high))

    def choice(self, options: Sequence[T]) -> T:
        from hypothesis import strategies as st

        return self._draw(st.sampled_from(list(options)))
