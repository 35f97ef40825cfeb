"""Checking a user's catalog entries with the types a scenario uses.

A GPU, link or model in a user's catalog file is validated as the same spec
an inline entry of a scenario would be (:mod:`asgdsim.specs`), and a machine
preset as the node it describes, so a mistake gets the same words; only the
location differs: the file's own key, ``gpus.K80.peak_flops``.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

__all__ = ["problems_of"]


def problems_of(data: dict[str, dict]) -> list[tuple[str, str]]:
    """(dotted key in the file, what was expected) for every bad entry."""
    from .. import zoo
    from ..scenario import Cluster
    from ..specs import GpuSpec, LinkSpec, ModelSpec

    def node(entry: dict) -> dict:
        # a preset names a machine's parts; one node of it is what they must make
        return {"nodes": 1, **{k: v for k, v in entry.items() if k not in ("max_nodes", "source")}}

    def model(entry: dict) -> dict:
        builder = zoo.BUILDERS.get(entry["name"])
        return {**entry, "layers": builder()} if builder and "layers" not in entry else entry

    spec_of = {"gpus": (GpuSpec, lambda e: e), "networks": (LinkSpec, lambda e: e),
               "models": (ModelSpec, model), "machines": (Cluster, node)}
    problems = []
    for kind, items in data.items():
        spec, shape = spec_of[kind]
        for name, raw in items.items():
            entry = {k: v for k, v in raw.items() if k != "aliases"}
            entry["name"] = str(name)
            if kind == "machines":
                entry.pop("name")
                max_nodes = entry.get("max_nodes")
                if max_nodes is not None and (type(max_nodes) is not int or max_nodes < 1):
                    problems.append((f"{kind}.{name}.max_nodes",
                                     f"expected a positive integer, got {max_nodes!r:.40}"))
            try:
                spec.model_validate(shape(entry))
            except ValidationError as exc:
                found = [(_key(kind, name, error["loc"]), _what(error)) for error in exc.errors()]
                if any(key.endswith(".gpu") for key, _ in found):
                    # a preset's host link comes from its GPU: not news when the GPU is wrong
                    found = [(k, w) for k, w in found if not k.endswith(".host_link")]
                problems += found
            except ValueError as exc:       # a catalog name an entry refers to, unknown
                problems.append((f"{kind}.{name}", str(exc)))
    return problems


def _key(kind: str, name: Any, loc: tuple) -> str:
    # pydantic puts union branches and validator names in loc; keep the user's keys
    parts = [str(p) for p in loc if not (isinstance(p, str) and "[" in p)]
    return ".".join([kind, str(name), *parts])


def _what(error: dict) -> str:
    message = error["msg"].removeprefix("Value error, ").replace("Input should be", "expected")
    if error["type"] == "missing":
        return "required key is missing"
    if error["type"] == "extra_forbidden":
        return "unknown key"
    if "got " in message:
        return message
    got = repr(error.get("input"))
    return f"{message} (got {got if len(got) <= 60 else got[:57] + '...'})"
