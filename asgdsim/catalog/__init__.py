"""The hardware and model catalog: data files keyed by name.

GPUs, links (networks, PCIe, NVLink), models and machine presets live in the
YAML files beside this module, each entry with the source of its figures.
Names are case-insensitive and entries may carry aliases. Lookup returns the
raw mapping (quantities still as text); the scenario layer validates it into
typed specs, so catalog entries and inline specs in a scenario go through the
same checks.
"""

from __future__ import annotations

import difflib
from functools import cache
from importlib import resources

import yaml

__all__ = ["KINDS", "CatalogError", "entries", "lookup", "names"]

#: catalog kind -> data file
KINDS = {"gpus": "gpus.yaml", "networks": "networks.yaml", "models": "models.yaml",
         "machines": "machines.yaml"}

_SINGULAR = {"gpus": "GPU", "networks": "network or link", "models": "model", "machines": "machine"}


class CatalogError(ValueError):
    """A name that is in no catalog entry."""


@cache
def entries(kind: str) -> dict[str, dict]:
    """Every entry of one kind, by canonical name, in file order."""
    text = resources.files(__package__).joinpath(KINDS[kind]).read_text(encoding="utf-8")
    return {name: {"name": name, **spec} for name, spec in yaml.safe_load(text).items()}


@cache
def _index(kind: str) -> dict[str, str]:
    index = {}
    for name, spec in entries(kind).items():
        for alias in [name, *spec.get("aliases", [])]:
            index[str(alias).lower()] = name
    return index


def names(kind: str) -> list[str]:
    return list(entries(kind))


def lookup(kind: str, name: str) -> dict:
    """The entry called ``name`` (or an alias of it), without its aliases."""
    key = _index(kind).get(name.strip().lower())
    if key is None:
        close = difflib.get_close_matches(name.lower(), _index(kind), n=1)
        hint = f" (did you mean {_index(kind)[close[0]]!r}?)" if close else ""
        raise CatalogError(
            f"unknown {_SINGULAR[kind]} {name!r}{hint}; expected one of {', '.join(names(kind))}"
            " or an inline spec")
    spec = dict(entries(kind)[key])
    spec.pop("aliases", None)
    return spec
