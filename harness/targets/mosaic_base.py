"""The base of the CPU targets that drive JAX Mosaic GPU's Python layout code (no GPU needed)."""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import ClassVar

from layoutfuzz.harness.target import Availability, Target, package_versions

PACKAGES = ("jax", "jaxlib")


class MosaicTarget(Target):
    """Mosaic GPU's availability (``module`` importable from ``jax.experimental.mosaic.gpu``) and versions."""

    requires: ClassVar[tuple[str, ...]] = ("jax and jaxlib with Mosaic GPU (pip install 'layoutfuzz[mosaic]')",)
    preload: ClassVar[tuple[str, ...]] = ("jax.experimental.mosaic.gpu",)
    module: ClassVar[str] = "fragmented_array"  # the part of Mosaic GPU a target needs

    def availability(self) -> Availability:
        try:
            importlib.import_module("jax.experimental.mosaic.gpu")  # the package first: a blocked one refuses here
            importlib.import_module(f"jax.experimental.mosaic.gpu.{self.module}")
        except ImportError as exc:
            return Availability(False, f"needs JAX's Mosaic GPU: pip install 'layoutfuzz[mosaic]' ({exc})")
        except Exception as exc:  # jaxlib's native start-up failed here
            return Availability(False, f"jax's Mosaic GPU does not load here: {str(exc)[:200]}")
        return Availability(True)

    def versions(self) -> Mapping[str, str]:
        return package_versions(*PACKAGES)
