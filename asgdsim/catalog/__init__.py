"""The hardware and model catalog: data files keyed by name.

GPUs, links (networks, PCIe, NVLink), models and machine presets live in the
YAML files beside this module, each entry with the source of its figures.
Names are case-insensitive and entries may carry aliases. Users add their
own entries in YAML files named by the ``ASGDSIM_CATALOG`` environment
variable (several separated by ``os.pathsep``), each a mapping with any of
the keys ``gpus``, ``networks``, ``models`` and ``machines``; a user's entry
replaces a shipped one of the same name. Lookup returns the
raw mapping (quantities still as text); the scenario layer validates it into
typed specs, so catalog entries and inline specs in a scenario go through the
same checks.
"""

from __future__ import annotations

import difflib
import os
from functools import cache
from importlib import resources
from pathlib import Path

import yaml

__all__ = ["KINDS", "USER_CATALOG", "CatalogError", "entries", "fingerprint", "lookup", "names",
           "reload", "variability"]

#: catalog kind -> data file
KINDS = {"gpus": "gpus.yaml", "networks": "networks.yaml", "models": "models.yaml",
         "machines": "machines.yaml"}

_SINGULAR = {"gpus": "GPU", "networks": "network or link", "models": "model", "machines": "machine"}


class CatalogError(ValueError):
    """A name that is in no catalog entry."""


USER_CATALOG = "ASGDSIM_CATALOG"


def entries(kind: str) -> dict[str, dict]:
    """Every entry of one kind, by canonical name: shipped, then the user's."""
    return _entries(kind, os.environ.get(USER_CATALOG, ""))


@cache
def _entries(kind: str, user_files: str) -> dict[str, dict]:
    text = resources.files(__package__).joinpath(KINDS[kind]).read_text(encoding="utf-8")
    found = {name: {"name": name, **spec} for name, spec in yaml.safe_load(text).items()}
    for path in filter(None, user_files.split(os.pathsep)):
        found.update({name: {"name": name, **spec}
                      for name, spec in _user_file(path).get(kind, {}).items()})
    return found


@cache
def _user_file(path: str) -> dict:
    where = f"{USER_CATALOG} file {path}"
    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise CatalogError(f"{where} cannot be read: {exc}") from None
    if not isinstance(data, dict) or set(data) - set(KINDS):
        raise CatalogError(f"{where}: expected a mapping with keys among {', '.join(KINDS)}")
    for kind, items in data.items():
        if not isinstance(items, dict) or not all(isinstance(v, dict) for v in items.values()):
            raise CatalogError(f"{where}: {kind}: expected a mapping of names to specs")
    return data


_generation = 0


def reload() -> None:
    """Forget cached catalog files (after editing a user catalog file)."""
    global _generation
    _entries.cache_clear()
    _user_file.cache_clear()
    _generation += 1


def fingerprint() -> tuple[str, int]:
    """What the catalog's entries are read from: the user's files, and how
    often they were reloaded. Whatever is derived from entries (specs, kernel
    fits, step times) is cached under it, so a reload or another
    ``ASGDSIM_CATALOG`` never leaves stale figures behind."""
    return os.environ.get(USER_CATALOG, ""), _generation


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


@cache
def variability(name: str) -> dict:
    """A measured variability law of ``variability.yaml`` (with its source)."""
    text = resources.files(__package__).joinpath("variability.yaml").read_text(encoding="utf-8")
    return dict(yaml.safe_load(text)[name])
