"""Checks of the paths a command writes, made when its arguments are parsed: a folder or file that cannot be
written is one line and exit 2 before any work starts, never a traceback after a campaign."""

from __future__ import annotations

import argparse
import os
from pathlib import Path


def _nearest_existing(path: Path) -> Path:
    """``path`` or its nearest ancestor that exists (the folder a new path would be made in)."""
    for candidate in (path, *path.parents):
        if candidate.exists() or candidate.is_symlink():
            return candidate
    return Path(".")


def directory_problem(path: str | Path) -> str | None:
    """Why ``path`` cannot be (or be made into) a folder to write in, or None when it can."""
    if not str(path).strip():
        return "an empty path names no folder"
    path = Path(path)
    if path.exists() or path.is_symlink():
        return None if path.is_dir() else f"{path} exists and is not a folder"
    base = _nearest_existing(path.absolute())
    if not base.is_dir():
        return f"{path} cannot be made: {base} is not a folder"
    if not os.access(base, os.W_OK | os.X_OK):
        return f"{path} cannot be made: {base} is not writable"
    return None


def file_problem(path: str | Path) -> str | None:
    """Why ``path`` cannot be written as a regular file, or None when it can."""
    if not str(path).strip():
        return "an empty path names no file"
    path = Path(path)
    if path.is_dir():
        return f"{path} is a folder, not a file"
    if path.exists() and not path.is_file():
        return f"{path} is not a regular file"
    return directory_problem(path.absolute().parent)


def output_directory(text: str) -> str:
    """An argparse type: a folder that exists or can be made (not a file, a fifo, a device, nor under one)."""
    problem = directory_problem(text)
    if problem:
        raise argparse.ArgumentTypeError(problem)
    return text


def output_file(text: str) -> str:
    """An argparse type: a file that can be written (a name, not a folder, in a folder that exists or can be made)."""
    problem = file_problem(text)
    if problem:
        raise argparse.ArgumentTypeError(problem)
    return text
