"""What the commands' options parse into, and each option that several commands share, declared once.

The paths a command writes are checked when its arguments are parsed: a folder or file that cannot be written is one
line and exit 2 before any work starts, never a traceback after a campaign."""

from __future__ import annotations

import argparse
import os
import re
from collections.abc import Callable, Collection, Mapping
from pathlib import Path

from layoutfuzz.harness import registry
from layoutfuzz.harness.campaign import DEFAULT_OUT
from layoutfuzz.harness.runner import Shard
from layoutfuzz.reports.ledger import DEFAULT_LEDGER
from layoutfuzz.reports.schema import MAX_INT  # what SQLite stores as an INTEGER
from layoutfuzz.reports.tables import FORMATS

MAX_JOBS = 1024

# ---- what values parse into ----------------------------------------------------------------------------------------


def parse_duration(text: str) -> float:
    """Seconds from '90', '90s', '5m', '1h' or '1h30m'."""
    match = re.fullmatch(r"\s*(?:(\d+(?:\.\d+)?)h)?\s*(?:(\d+(?:\.\d+)?)m)?\s*(?:(\d+(?:\.\d+)?)s?)?\s*", text)
    if not text.strip() or not match or not any(match.groups()):
        raise argparse.ArgumentTypeError(f"bad duration {text!r}: use e.g. 90, 90s, 5m or 1h")
    h, m, s = (float(g) if g else 0.0 for g in match.groups())
    return h * 3600 + m * 60 + s


def parse_positive_duration(text: str) -> float:
    """A duration that is more than zero (a zero budget or timeout would run forever or never)."""
    seconds = parse_duration(text)
    if seconds <= 0:
        raise argparse.ArgumentTypeError(f"must be more than 0 seconds: {text!r}")
    return seconds


def parse_size(text: str) -> int:
    """Bytes from '512M', '4G', '1.5G' or a plain number of bytes (at least 64 MiB)."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMGT]?)i?B?\s*", text, re.IGNORECASE)
    if not match:
        raise argparse.ArgumentTypeError(f"bad size {text!r}: use e.g. 512M or 4G")
    size = int(float(match[1]) * 1024 ** " KMGT".index(match[2].upper() or " "))
    if not 64 << 20 <= size <= MAX_INT:
        raise argparse.ArgumentTypeError(f"must be from 64M up: {text!r}")
    return size


def bounded_int(low: int, high: int, what: str = ""):
    """An argparse type: an integer in [low, high]."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must be from {low} to {high}{what}: {text!r}")
        return value

    return parse


positive_int = bounded_int(1, MAX_INT)
job_count = bounded_int(1, MAX_JOBS, " worker processes")
seed_int = bounded_int(0, MAX_INT)


def target_argument(text: str) -> str:
    """A ``--target``: a target name, or a well-formed ``module:attr`` (checked before anything is imported)."""
    if ":" in text:
        try:
            registry.check_spec(text)
        except registry.TargetNotFound as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def shard_spec(text: str) -> Shard:
    """An argparse type: ``I/N``, part I of N."""
    try:
        return Shard.parse(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def target_names(text: str | None) -> tuple[str, ...]:
    """The names in a comma-separated ``--targets`` (none given: none)."""
    return tuple(t.strip() for t in (text or "").split(",") if t.strip())


# ---- paths a command writes ------------------------------------------------------------------------------------------


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


# ---- a group's parsers ----------------------------------------------------------------------------------------------


def add_commands(sub: argparse._SubParsersAction, parsers: Mapping[str, Callable[[argparse._SubParsersAction], None]],
                 only: Collection[str] | None = None) -> None:
    """Adds a group's commands (``parsers``: name -> what adds its parser), or only those named in ``only``."""
    for name, add in parsers.items():
        if only is None or name in only:
            add(sub)


# ---- options several commands share, each declared here once -------------------------------------------------------


def add_out(parser: argparse.ArgumentParser, what: str = "campaign directory", *, default: str = DEFAULT_OUT,
            writes: bool = False, show_default: bool = True) -> None:
    """``--out``: the folder a command reads (or, with ``writes``, writes: checked when parsed)."""
    parser.add_argument("--out", type=output_directory if writes else None, default=default,
                        help=f"{what} (default {default})" if show_default else what)


def add_root(parser: argparse.ArgumentParser, what: str, *, writes: bool = False) -> None:
    """``--root``: a nightly root (default ``nightly``)."""
    parser.add_argument("--root", type=output_directory if writes else None, default="nightly", help=what)


def add_targets(parser: argparse.ArgumentParser, default: str = "the CPU targets", *, help: str | None = None) -> None:
    """``--targets NAMES``: comma-separated target names."""
    parser.add_argument("--targets", metavar="NAMES", help=help or f"comma-separated target names (default: {default})")


def add_seed(parser: argparse.ArgumentParser, help: str = "campaign seed (default 0)", *, default: int | None = 0) -> None:
    """``--seed``: a campaign seed."""
    parser.add_argument("--seed", type=seed_int, default=default, help=help)


def add_budget(parser: argparse.ArgumentParser, help: str, *, default: float | None = None) -> None:
    """``--budget DURATION``: how long a campaign starts cases."""
    parser.add_argument("--budget", type=parse_positive_duration, default=default, metavar="DURATION", help=help)


def add_shard(parser: argparse.ArgumentParser, help: str, *, default: Shard | None = None) -> None:
    """``--shard I/N``: a part of a campaign."""
    parser.add_argument("--shard", type=shard_spec, default=default, metavar="I/N", help=help)


def add_jobs(parser: argparse.ArgumentParser, help: str) -> None:
    """``--jobs/-j``: processes at once (default: one per core)."""
    parser.add_argument("--jobs", "-j", type=job_count, default=os.cpu_count() or 1, help=help)


def add_timeout(parser: argparse.ArgumentParser, help: str, *, default: float | None = None) -> None:
    """``--timeout DURATION``: a limit per case, run or compile."""
    parser.add_argument("--timeout", type=parse_positive_duration, default=default, metavar="DURATION", help=help)


def add_reduce_tries(parser: argparse.ArgumentParser, help: str) -> None:
    """``--reduce-tries N``: tries per reduction (default 200)."""
    parser.add_argument("--reduce-tries", type=positive_int, default=200, metavar="N", help=help)


def add_known(parser: argparse.ArgumentParser, what: str = "the ledger", *, note: str = "") -> None:
    """``--known FILE``: the ledger of known problems."""
    parser.add_argument("--known", type=output_file, default=DEFAULT_LEDGER, metavar="FILE",
                        help=f"{what} (default {DEFAULT_LEDGER}{note})")


def add_format(parser: argparse.ArgumentParser, help: str | None = None) -> None:
    """``--format``: md (what a terminal shows), csv or html (every column)."""
    parser.add_argument("--format", choices=FORMATS, default="md", help=help)


def add_quiet(parser: argparse.ArgumentParser) -> None:
    """``--quiet/-q``: no progress bar."""
    parser.add_argument("--quiet", "-q", action="store_true", help="no progress bar")


def add_verbose(parser: argparse.ArgumentParser, help: str) -> None:
    """``--verbose/-v``: print more."""
    parser.add_argument("--verbose", "-v", action="store_true", help=help)
