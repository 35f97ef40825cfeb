"""YAML read defensively: every file a user hands asgdsim goes through here.

PyYAML's ``safe_load`` builds no arbitrary objects, but it still accepts
three things that hurt a simulator's input:

- **duplicate keys**: ``nodes: 8`` then ``nodes: 16`` silently keeps the
  last, so the run is not the one the user reads in the file;
- **aliases**: ``*a`` repeats an anchored node, and nine levels of nine
  aliases ("billion laughs") expand a 1 kB file into gigabytes of lists;
- **deep nesting**: the composer recurses once per level, so 20,000 nested
  brackets end in a ``RecursionError``.

:class:`StrictLoader` is a ``SafeLoader`` that refuses all three while
composing the node tree, before anything is constructed: aliases are
refused outright (no scenario or catalog needs them, and a limit on their
expansion would still let a small file cost much memory), nesting stops at
:data:`MAX_DEPTH`, and a file over :data:`MAX_BYTES` is not parsed at all.
Each refusal is a :class:`YamlProblem` with the line and the dotted key
path, which the scenario and catalog loaders turn into their own located
messages.
"""

from __future__ import annotations

from typing import Any

import yaml
from yaml.events import AliasEvent
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

__all__ = ["MAX_BYTES", "MAX_DEPTH", "StrictLoader", "YamlProblem", "load"]

#: deeper than any scenario or catalog (a layer list inside a model inside a
#: catalog file is five levels), far below Python's recursion limit
MAX_DEPTH = 64
#: a scenario is a few kB, the largest catalog file 6 kB; PyYAML parses some
#: 100 kB a second, so this keeps the worst file near a second
MAX_BYTES = 100_000


class YamlProblem(ValueError):
    """A file that is not YAML asgdsim will read: ``key`` is the dotted path
    where the problem is (empty at the top), ``line`` 1-based or None."""

    def __init__(self, message: str, key: str = "", line: int | None = None):
        self.message, self.key, self.line = message, key, line
        super().__init__(f"line {line}: {message}" if line else message)


class StrictLoader(yaml.SafeLoader):
    """A SafeLoader without aliases, duplicate keys or unbounded nesting."""

    def __init__(self, stream: Any):
        super().__init__(stream)
        self._path: list[str] = []     # the keys from the top to the node being composed
        self._depth = 0                # nodes open, keys of mappings included

    def compose_node(self, parent: Node | None, index: Any) -> Node:
        # ``index`` is the key node of a mapping's value, a sequence's
        # position, or None at the top (and for a mapping's keys themselves)
        step = (index.value if isinstance(index, ScalarNode) else
                str(index) if isinstance(index, int) else None)
        if step is not None:
            self._path.append(str(step))
        self._depth += 1
        try:
            if self.check_event(AliasEvent):
                event = self.peek_event()
                raise YamlProblem(f"alias *{event.anchor} refused: asgdsim reads no YAML aliases "
                                  "(write the value out where it is needed)",
                                  key=".".join(self._path), line=event.start_mark.line + 1)
            if self._depth > MAX_DEPTH:
                mark = self.peek_event().start_mark
                raise YamlProblem(f"nested more than {MAX_DEPTH} levels deep",
                                  key=".".join(self._path[:3]) + "...", line=mark.line + 1)
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1
            if step is not None:
                self._path.pop()


def _check_number(node: ScalarNode, path: tuple[str, ...]) -> None:
    """A number in decimal digits as written; YAML 1.1's other forms
    refused: 010 is 8 (octal) and 3:20 is 200 (base 60), which nobody
    writing a node count or a stop means."""
    text = node.value.replace("_", "")
    digits = text.lstrip("+-")
    octal = node.tag.endswith(":int") and len(digits) > 1 and digits.startswith("0")
    if ":" in text or digits[:2].lower() in ("0x", "0b", "0o") or octal:
        raise YamlProblem(f"{node.value!r} is read as a number in another base (YAML 1.1's "
                          "octal, hexadecimal, binary or base 60); write it in decimal digits, "
                          "or quote it as text", key=".".join(path),
                          line=node.start_mark.line + 1)


def _check_keys(node: Node, path: tuple[str, ...] = ()) -> None:
    """Refuse a mapping that names one key twice, at its second occurrence,
    a merge key, and a number in YAML 1.1's other bases.

    Walked over the composed nodes (bounded by MAX_DEPTH), so the message
    can give the dotted path from the top of the file."""
    if isinstance(node, MappingNode):
        seen: dict[str, int] = {}
        for key_node, value_node in node.value:
            name = key_node.value if isinstance(key_node, ScalarNode) else None
            line = key_node.start_mark.line + 1
            if key_node.tag == "tag:yaml.org,2002:merge":
                # a merge key's values give way to the mapping's own, without a word
                raise YamlProblem("merge key << refused: asgdsim reads no YAML merges (write "
                                  "each key once, where it is needed)",
                                  key=".".join((*path, "<<")), line=line)
            if name is not None:
                if name in seen:
                    raise YamlProblem(f"duplicate key {name!r} (first on line {seen[name]}); "
                                      "each key may appear once", key=".".join((*path, name)),
                                      line=line)
                seen[name] = line
            _check_keys(value_node, (*path, str(name)))
    elif isinstance(node, SequenceNode):
        for i, item in enumerate(node.value):
            _check_keys(item, (*path, str(i)))
    elif isinstance(node, ScalarNode) and node.tag in ("tag:yaml.org,2002:int",
                                                       "tag:yaml.org,2002:float"):
        _check_number(node, path)


def load(text: str) -> Any:
    """The one YAML document in ``text``, or :class:`YamlProblem`.

    PyYAML's own syntax errors are turned into YamlProblem too, with their
    line, so callers catch one exception."""
    if len(text) > MAX_BYTES:
        raise YamlProblem(f"{len(text):,} characters; expected at most {MAX_BYTES:,} "
                          "(a scenario or catalog file is a few kB)")
    try:
        loader = StrictLoader(text)      # its reader refuses control characters at once
    except yaml.YAMLError as exc:
        raise YamlProblem(f"not valid YAML ({getattr(exc, 'reason', None) or exc})") from None
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _check_keys(node)
        return loader.construct_document(node)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc)
        line = mark.line + 1 if mark else None
        last = len(text.splitlines()) or 1
        context, opened = getattr(exc, "context", None), getattr(exc, "context_mark", None)
        if "<stream end>" in problem and context and opened is not None:
            # the file ends inside something left open: where it opened
            line, problem = opened.line + 1, f"the file ends {context} opened here: {problem}"
        elif line is not None and line > last:
            # PyYAML marks the end of the stream on the line after the last
            line, problem = last, f"{problem}, at the end of the file"
        raise YamlProblem(f"not valid YAML ({problem})", line=line) from None
    finally:
        loader.dispose()
