"""The unit of work: one generated input for one target, as plain data."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


def canonical_json(value: Any) -> str:
    """JSON with sorted keys and no spaces: equal values give equal bytes."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def parse_case_id(text: str) -> tuple[str, int, int] | None:
    """(target, seed, index) of ``TARGET/SEED/INDEX``, or None if ``text`` is not one."""
    target, sep1, rest = text.rpartition("/")
    target, sep2, seed = target.rpartition("/")
    if not (sep1 and sep2 and target and seed.isdigit() and rest.isdigit()):
        return None
    return target, int(seed), int(rest)


@dataclass(frozen=True)
class Case:
    """A case: the same (target, seed, index) gives the same params on every machine.

    ``params`` must be JSON-serialisable; equality and hashing go through its canonical JSON.
    """

    target: str
    seed: int
    index: int
    params: Mapping[str, Any] = field(compare=False, hash=False)
    _json: str | None = field(default=None, compare=False, hash=False, repr=False)  # to_json's text, where known

    @property
    def case_id(self) -> str:
        """``TARGET/SEED/INDEX``: what ``layoutfuzz reproduce`` accepts."""
        return f"{self.target}/{self.seed}/{self.index}"

    @property
    def params_json(self) -> str:
        return canonical_json(self.params)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Case) and self.to_json() == other.to_json()

    def __hash__(self) -> int:
        return hash(self.to_json())

    def to_dict(self) -> dict[str, Any]:
        return {"target": self.target, "seed": self.seed, "index": self.index, "params": self.params}

    def to_json(self) -> str:
        return canonical_json(self.to_dict()) if self._json is None else self._json

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Case:
        return cls(str(data["target"]), int(data["seed"]), int(data["index"]), json.loads(canonical_json(data["params"])))

    @classmethod
    def from_json(cls, text: str) -> Case:
        """The case whose ``to_json`` gave ``text``, keeping the text (a campaign's parent stores what its workers
        wrote without writing it again); only for text ``to_json`` wrote: other JSON goes through ``from_dict``."""
        return cls.from_json_many([text])[0]

    @classmethod
    def from_json_many(cls, texts: list[str]) -> list[Case]:
        """``from_json`` of many texts with one JSON decode for all."""
        data = json.loads("[" + ",".join(texts) + "]")
        return [cls(str(d["target"]), int(d["seed"]), int(d["index"]), d["params"], text) for d, text in zip(data, texts)]
