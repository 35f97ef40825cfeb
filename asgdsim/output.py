"""Writing a run's results to a folder (the command line's job only).

Files appear whole or not at all: each is written under a temporary name
and moved into place. A folder that already holds files is not written into
unless the caller says so, so nothing a user kept there is overwritten
silently.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

from .errors import OutputExists
from .compare import compare_figures, comparison
from .scenario import resolved_yaml
from .simulation import Result

__all__ = ["OutputExists", "write_run", "RUN_FILES"]

RUN_FILES = ("summary.json", "gradients.parquet", "updates.parquet", "scenario.yaml",
             "comparison.csv", "figures/staleness.png", "figures/minibatch.png",
             "figures/minibatch_over_time.png", "figures/utilisation.png")


def check_writable(out: Path, overwrite: bool) -> None:
    if out.exists() and not out.is_dir():
        raise OutputExists(f"{out} exists and is not a folder")
    if out.is_dir() and any(out.iterdir()) and not overwrite:
        raise OutputExists(f"{out} already holds files; pass --overwrite to replace this run's "
                           "files there, or choose another folder with --out")


def _atomic(path: Path, write: Callable[[str], None]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        write(tmp)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_run(result: Result, out: Path, overwrite: bool = False) -> list[Path]:
    """Write every file of CONTRACT.md's ``run`` into ``out``; return their paths."""
    out = Path(out)
    check_writable(out, overwrite)
    sc = result.scenario

    def text(content: str) -> Callable[[str], None]:
        return lambda tmp: Path(tmp).write_text(content, encoding="utf-8")

    _atomic(out / "summary.json", text(json.dumps(result.summary, indent=2) + "\n"))
    _atomic(out / "gradients.parquet", lambda tmp: result.gradients.to_parquet(tmp, index=False))
    _atomic(out / "updates.parquet", lambda tmp: result.updates.to_parquet(tmp, index=False))
    _atomic(out / "scenario.yaml", text(resolved_yaml(sc)))
    _atomic(out / "comparison.csv", lambda tmp: comparison(result).to_csv(tmp, index=False))
    for name, fig in compare_figures(result).items():
        _atomic(out / "figures" / name, lambda tmp, fig=fig: fig.savefig(tmp, dpi=120, format="png"))
    return [out / f for f in RUN_FILES]
