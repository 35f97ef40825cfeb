"""The hardware and model catalog: data files keyed by name.

GPUs, links (networks, PCIe, NVLink), models and machine presets live in the
YAML files beside this module, each entry with the source of its figures.
Names are case-insensitive and entries may carry aliases. Users add their
own entries in YAML files named by the ``ASGDSIM_CATALOG`` environment
variable (several separated by ``os.pathsep``), each a mapping with any of
the keys ``gpus``, ``networks``, ``models`` and ``machines``; a user's entry
replaces a shipped one that it names (in any case, or by an alias) whole,
and keeps the shipped one's names as aliases. Lookup returns the
raw mapping (quantities still as text); the scenario layer validates it into
typed specs, so catalog entries and inline specs in a scenario go through the
same checks.

A user's file is a user's input like a scenario: it is read by the strict
YAML loader (no duplicate keys, no aliases), and :func:`check` validates
every entry of it before any scenario uses one, so a mistake is reported at
the file's own key (``gpus.K80.peak_flops``), not at the scenario key that
named the entry.
"""

from __future__ import annotations

import difflib
import os
from functools import cache
from importlib import resources
from pathlib import Path

from .. import safeyaml
from ..errors import ScenarioError
from ..inputs import read_text

__all__ = ["KINDS", "USER_CATALOG", "CatalogError", "CatalogFileError", "check", "entries", "fingerprint", "lookup", "names",
           "reload", "variability"]

#: catalog kind -> data file
KINDS = {"gpus": "gpus.yaml", "networks": "networks.yaml", "models": "models.yaml",
         "machines": "machines.yaml"}

_SINGULAR = {"gpus": "GPU", "networks": "network or link", "models": "model", "machines": "machine"}


class CatalogError(ValueError):
    """A name that is in no catalog entry."""


class CatalogFileError(ScenarioError, CatalogError):
    """A user's catalog file that cannot be used: located at its own keys,
    answered like a bad scenario (exit 2, one line per problem)."""


USER_CATALOG = "ASGDSIM_CATALOG"


def entries(kind: str) -> dict[str, dict]:
    """Every entry of one kind, by canonical name: shipped, then the user's."""
    return _entries(kind, os.environ.get(USER_CATALOG, ""))


@cache
def _entries(kind: str, user_files: str) -> dict[str, dict]:
    text = resources.files(__package__).joinpath(KINDS[kind]).read_text(encoding="utf-8")
    found = {name: {"name": name, **spec} for name, spec in safeyaml.load(text).items()}
    user: dict[str, dict] = {}          # the user's entries: a later file's wins
    for path in filter(None, user_files.split(os.pathsep)):
        for name, spec in _user_file(path).get(kind, {}).items():
            for key in [k for k in user if k.lower() == str(name).lower()]:
                del user[key]
            user[str(name)] = spec
    claimed = {n.lower() for name, spec in user.items() for n in [name, *_aliases(spec)]}
    for name, spec in user.items():
        # a user's entry replaces every shipped one it names (in any case, or
        # by an alias) whole, and answers to its names too (a user's k80 is
        # the K80 that tesla-k80 and the machine presets name), but for those
        # another of the user's entries takes
        own = {n.lower() for n in [name, *_aliases(spec)]}
        replaced = [k for k, v in found.items() if {k.lower(), *map(str.lower, _aliases(v))} & own]
        inherited = [n for k in replaced for n in (k, *_aliases(found[k]))
                     if n.lower() not in claimed]
        for key in replaced:
            del found[key]
        aliases = list(dict.fromkeys([*_aliases(spec), *inherited]))
        found[name] = {**spec, "name": name, **({"aliases": aliases} if aliases else {})}
    return found


def _aliases(spec: dict) -> list[str]:
    """An entry's aliases (a malformed list is check()'s to refuse)."""
    given = spec.get("aliases")
    return [a for a in given if isinstance(a, str)] if isinstance(given, list) else []


@cache
def _user_file(path: str) -> dict:
    """The user's file at ``path``, its shape checked (entries are checked by :func:`check`)."""
    where = f"{USER_CATALOG} file {path}"
    try:
        data = safeyaml.load(read_text(path, safeyaml.MAX_BYTES))
    except safeyaml.YamlProblem as exc:
        raise CatalogFileError(where, [(exc.key, str(exc))]) from None
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        raise CatalogFileError(where, [("", f"cannot be read ({reason})")]) from None
    data = {} if data is None else data
    if not isinstance(data, dict):
        raise CatalogFileError(where, [("", f"expected a mapping with keys among "
                                            f"{', '.join(KINDS)}, got {type(data).__name__}")])
    problems = [(str(kind), f"unknown catalog kind; expected one of {', '.join(KINDS)}")
                for kind in data if kind not in KINDS]
    for kind, items in data.items():
        if kind not in KINDS:
            continue
        if not isinstance(items, dict):
            problems.append((kind, f"expected a mapping of names to specs, got {items!r:.40}"))
            continue
        for name, spec in items.items():
            key = f"{kind}.{name}"
            if not isinstance(spec, dict):
                problems.append((key, f"expected a mapping of the entry's keys, got {spec!r:.40}"))
            elif "aliases" in spec and not (isinstance(spec["aliases"], list) and all(
                    isinstance(a, str) and a.strip() for a in spec["aliases"])):
                problems.append((f"{key}.aliases",
                                 f"expected a list of names, got {spec['aliases']!r:.40}"))
    if problems:
        raise CatalogFileError(where, problems)
    return data


def check() -> None:
    """Validate every entry of the user's catalog files, as a scenario's
    inline spec would be; :class:`CatalogFileError` names the file and the
    entry's own key. Shipped entries are checked by the tests."""
    _check(fingerprint())


@cache
def _check(fingerprint: tuple[str, int]) -> None:
    from .validate import problems_of   # the spec types import this module

    for path in filter(None, fingerprint[0].split(os.pathsep)):
        problems = problems_of(_user_file(path))
        if problems:
            raise CatalogFileError(f"{USER_CATALOG} file {path}", problems)


_generation = 0


def reload() -> None:
    """Forget cached catalog files (after editing a user catalog file)."""
    global _generation
    _entries.cache_clear()
    _user_file.cache_clear()
    _check.cache_clear()
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


def lookup(kind: str, name: str, inline: bool = True) -> dict:
    """The entry called ``name`` (or an alias of it), without its aliases;
    ``inline``: whether the caller (a scenario) also takes a spec written
    out, which the message offers then."""
    key = _index(kind).get(name.strip().lower())
    if key is None:
        close = difflib.get_close_matches(name.lower(), _index(kind), n=1)
        hint = f" (did you mean {_index(kind)[close[0]]!r}?)" if close else ""
        raise CatalogError(
            f"unknown {_SINGULAR[kind]} {name!r}{hint}; expected one of {', '.join(names(kind))}"
            + (" or an inline spec" if inline else ""))
    spec = dict(entries(kind)[key])
    spec.pop("aliases", None)
    return spec


@cache
def variability(name: str) -> dict:
    """A measured variability law of ``variability.yaml`` (with its source)."""
    text = resources.files(__package__).joinpath("variability.yaml").read_text(encoding="utf-8")
    return dict(safeyaml.load(text)[name])
