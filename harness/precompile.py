"""Moved to ``gpu.precompile``; this name stays for the CLI until its imports follow."""

from layoutfuzz.gpu.precompile import Job, compile_all  # noqa: F401  re-exported: moved
