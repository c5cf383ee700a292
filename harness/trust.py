"""Which target code layoutfuzz will import. Installed targets (built in, or registered under the
``layoutfuzz.targets`` entry point) and a ``module:attr`` the user names on the command line are code
the user chose; a report, a case file or a campaign store names a target as data, and a ``module:attr``
found there is never imported on its own: reports and stores travel between people."""

from __future__ import annotations

from collections.abc import Iterable

from layoutfuzz.harness import registry

LEGACY_PREFIX = "layoutfuzz."  # built-in specs gained it when the packages got one import name


class UntrustedTarget(Exception):
    """A report or store names target code that is not installed as a target: it is not imported."""


def granted(command_line: Iterable[str] | None) -> frozenset[str]:
    """The specs the user named with ``--target`` (names resolved through the registry)."""
    out = set()
    for item in command_line or ():
        try:
            out.add(registry.resolve(item))
        except registry.TargetNotFound:
            continue
    return frozenset(out)


def installed_spec(recorded: str, name: str | None = None) -> str | None:
    """The installed target's spec that a recorded name or spec stands for, or None. Only the registry's own
    specs come out: a recorded ``module:attr`` is matched against them, never imported."""
    wrapped = registry.sanitized_parts(recorded)
    if wrapped is not None:  # an installed target under compute-sanitizer: trusted as its target is
        inner = installed_spec(wrapped[0])
        return None if inner is None else registry.sanitized_spec(inner, wrapped[1])
    specs = registry.available_specs()
    for candidate in (name, recorded):
        if candidate and ":" not in candidate and candidate in specs:
            return specs[candidate]
        if candidate and ":" not in candidate and "+" in candidate:  # NAME+TOOL
            try:
                return installed_spec(registry.resolve(candidate))
            except registry.TargetNotFound:
                pass
    installed = set(specs.values())
    if recorded in installed:
        return recorded
    if LEGACY_PREFIX + recorded in installed:  # a built-in target as written before the rename (harness.targets...)
        return LEGACY_PREFIX + recorded
    return None


def trusted_spec(recorded: str, where: str, name: str | None = None, grants: Iterable[str] = ()) -> str:
    """The spec to load for a target that ``where`` (a report, a case file, a store) records as ``recorded``
    (a name or a spec) for the target called ``name``: an installed target's, or one the user granted on the
    command line; anything else raises UntrustedTarget with the one line that says how to trust it."""
    spec = installed_spec(recorded, name)
    if spec is not None:
        return spec
    if recorded in granted(grants):
        return recorded
    shown = recorded if ":" in recorded else f"{recorded!r} (not an installed target)"
    raise UntrustedTarget(
        f"{where} names target {shown}; layoutfuzz imports no code a report or a store names: if you trust it, "
        f"name it yourself with --target {recorded if ':' in recorded else 'MODULE:ATTR'}")
