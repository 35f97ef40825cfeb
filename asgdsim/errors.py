"""The mistakes a user can make, as exceptions the command line answers with
exit status 2 and one line per problem (never a traceback).

They live apart from the modules that raise them so that the command line
can catch them without importing those modules' dependencies.
"""

from __future__ import annotations

__all__ = ["OutputExists", "ScenarioError", "UsageError"]


class ScenarioError(ValueError):
    """A scenario that cannot run; ``str()`` is one line per problem."""

    def __init__(self, source: str, problems: list[tuple[str, str]]):
        self.source, self.problems = source, problems
        super().__init__("\n".join(f"{source}: {key}: {what}" if key else f"{source}: {what}"
                                   for key, what in problems))


class OutputExists(FileExistsError):
    """The output folder holds files and overwriting was not asked for."""


class UsageError(Exception):
    """A mistake in a command's arguments."""
