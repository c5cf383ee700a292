"""Hypothesis strategies for linear layouts: public API for users' own property tests.

    from layoutfuzz.generators.strategies import distributed_layouts
    @given(distributed_layouts(max_out_bits=8))
    def test_mine(layout): ...

They draw through the same samplers as the campaigns, so they cover the same spaces.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from layoutfuzz.generators import layouts
from layoutfuzz.generators.source import HypothesisSource


def _strategy(sampler, **kwargs: Any) -> st.SearchStrategy:
    return st.composite(lambda draw: sampler(HypothesisSource(draw), **kwargs))()


def arbitrary_layouts(**kwargs: Any) -> st.SearchStrategy:
    """Any linear layout (see ``generators.layouts.arbitrary_layout`` for the keywords)."""
    return _strategy(layouts.arbitrary_layout, **kwargs)


def distributed_layouts(**kwargs: Any) -> st.SearchStrategy:
    """Distributed layouts, Def 4.10 (keywords of ``distributed_layout``)."""
    return _strategy(layouts.distributed_layout, **kwargs)


def memory_layouts(**kwargs: Any) -> st.SearchStrategy:
    """Memory layouts, Def 4.14 (keywords of ``memory_layout``)."""
    return _strategy(layouts.memory_layout, **kwargs)


def invertible_layouts(**kwargs: Any) -> st.SearchStrategy:
    """Invertible layouts (keywords of ``invertible_layout``)."""
    return _strategy(layouts.invertible_layout, **kwargs)


def injective_layouts(**kwargs: Any) -> st.SearchStrategy:
    """Injective layouts (keywords of ``injective_layout``)."""
    return _strategy(layouts.injective_layout, **kwargs)


def layouts_of_kind(kind: str, max_bits: int = 12) -> st.SearchStrategy:
    """A layout of one of ``generators.layouts.LAYOUT_KINDS``."""
    return _strategy(layouts.sample_layout, kind=kind, max_bits=max_bits)
