"""Seeded samplers and Hypothesis strategies for layouts and cases (no GPU library)."""

from layoutfuzz.generators.case import Case
from layoutfuzz.generators.layouts import (
    LAYOUT_KINDS,
    arbitrary_layout,
    distributed_layout,
    injective_layout,
    invertible_layout,
    memory_layout,
    sample_layout,
)
from layoutfuzz.generators.source import HypothesisSource, RandomSource, Source, source_for

__all__ = [
    "LAYOUT_KINDS",
    "Case",
    "HypothesisSource",
    "RandomSource",
    "Source",
    "arbitrary_layout",
    "distributed_layout",
    "injective_layout",
    "invertible_layout",
    "memory_layout",
    "sample_layout",
    "source_for",
]
