"""Sweeps: a grid of scenario variations with replications, on Dask.

A sweep is a scenario file, a grid (dotted keys, each with a list of values,
as ``--set`` takes them) and a number of replications. Every point gets its
own seed, derived from the scenario's seed and the point itself (not from
its position, the worker that runs it, or how many workers there are), so
the numbers are the same on one process or fifty.

Points run on dask.distributed: a local cluster of worker processes, or an
existing cluster by its scheduler's address. Each finished point is written
at once, atomically, as ``DIR/points/ID.json`` (a failed one as
``ID.error.txt``); a rerun of the same sweep skips the finished points, so
an interrupted sweep loses nothing and repeats nothing. A folder that holds
another sweep is refused rather than overwritten. ``results.parquet`` and
``results.csv`` gather every finished point in grid order.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import json
import logging
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from . import budget, safeyaml
from .atomic import atomic_text, atomic_write
from .errors import ScenarioError
from .inputs import read_text
from .scenario import apply_overrides, load_scenario, resolve_paths, scenario_from_dict
from .simulation import simulate

__all__ = ["Point", "SweepError", "check_points", "grid_points", "point_scenario", "point_seed",
           "run_point", "run_on_dask", "dask_client", "sweep", "flatten", "naming", "raw_scenario"]

#: what a sweep writes in its folder, beside points/
SWEEP_FILES = ("sweep.json", "results.csv", "results.parquet")
FIGURES = ("epoch_time_s", "throughput_samples_per_s")
STATISTICS = ("mean", "p95")


class SweepError(ValueError):
    """A sweep that cannot start: a bad grid, or a folder holding another sweep."""


@dataclass(frozen=True)
class Point:
    values: tuple[tuple[str, Any], ...]      # (dotted key, value) in grid order
    replication: int

    @property
    def overrides(self) -> dict[str, Any]:
        return dict(self.values)

    @property
    def key(self) -> str:
        return json.dumps([list(self.values), self.replication], sort_keys=True, default=str)

    @property
    def label(self) -> str:
        """The point as its keys and values, as a user gave them."""
        return ", ".join(f"{key}={value}" for key, value in self.values)

    @property
    def id(self) -> str:
        return hashlib.sha256(self.key.encode()).hexdigest()[:16]


def grid_points(grid: dict[str, list], replications: int = 1) -> list[Point]:
    """Every combination of the grid's values, each replicated."""
    keys = list(grid)
    return [Point(tuple(zip(keys, combo)), r)
            for combo in itertools.product(*(grid[k] for k in keys))
            for r in range(replications)]


def point_seed(base_seed: int, point: Point) -> int:
    """A seed from the scenario's seed and the point alone."""
    digest = int.from_bytes(hashlib.sha256(point.key.encode()).digest()[:8], "big")
    return int(np.random.SeedSequence(base_seed, spawn_key=(digest,)).generate_state(1)[0])


def flatten(summary: dict) -> dict:
    """The contract's result columns from a summary (and the closed form's)."""
    row = {name: summary[name] for name in FIGURES}
    row.update({f"analytic_{name}": summary["analytic"][name] for name in FIGURES})
    for block in ("staleness", "minibatch"):
        for stat in STATISTICS:
            row[f"{block}_{stat}"] = summary[block][stat]
            row[f"analytic_{block}_{stat}"] = summary["analytic"][block][stat]
    row.update(gradients=summary["gradients"], updates=summary["updates"],
               simulated_time_s=summary["simulated_time_s"])
    return row


#: how a point's overrides change the raw scenario: (raw, overrides, source) -> raw
Apply = Callable[[dict, dict[str, Any], str], dict]


def point_scenario(raw: dict, source: str, point: Point, apply: Apply = apply_overrides):
    """One point's scenario: its overrides set on the raw scenario by
    ``apply`` (``--set``'s apply_overrides; the planner's also leaves out
    the groups of a mixed cluster it books no node of)."""
    return scenario_from_dict(apply(raw, point.overrides, source), source=source)


def run_point(raw: dict, source: str, point: Point, apply: Apply = apply_overrides) -> dict:
    """Simulate one point (runs on a worker); return its result row."""
    scenario = point_scenario(raw, source, point, apply)
    seed = point_seed(scenario.seed, point)
    # every point was estimated before any ran (check_points)
    result = simulate(scenario, seed=seed, max_events=math.inf, max_memory=math.inf)
    return {**point.overrides, "replication": point.replication, "seed": seed,
            **flatten(result.summary), "wall_time_s": result.summary["wall_time_s"]}


def check_points(raw: dict, source: str, points: Iterable[Point], what: str = "grid point",
                 max_events: float = budget.DEFAULT_MAX_EVENTS,
                 max_memory: float = budget.DEFAULT_MAX_MEMORY,
                 apply: Apply = apply_overrides) -> None:
    """Estimate every point's run (budget.py) before any starts, and refuse
    the first over the limits, named: a sweep must not run for minutes and
    then find its last point too big."""
    for point in points:
        # a value the point sets that the scenario refuses is the point's
        with naming(source, point, what):
            scenario = point_scenario(raw, source, point, apply)
            budget.check(scenario, source, max_events, max_memory)


@contextlib.contextmanager
def naming(source: str, point: Point, what: str = "grid point"):
    """A scenario error inside says which point it is about."""
    try:
        yield
    except ScenarioError as exc:
        raise ScenarioError(source, [(key, f"{what} {point.label}: {message}")
                                     for key, message in exc.problems]) from None


def raw_scenario(scenario: str | Path, overrides: dict[str, Any] | None = None
                 ) -> tuple[dict, str]:
    """The scenario file as written (overrides apply to it as --set does),
    refused with its own message where it is wrong, ``overrides`` applied."""
    load_scenario(scenario, overrides)
    data = safeyaml.load(read_text(scenario, safeyaml.MAX_BYTES))
    data.setdefault("name", Path(scenario).stem)
    resolve_paths(data, Path(scenario).parent)     # as load_scenario finds them
    return data, str(scenario)


def _prepare(out: Path, spec: dict, overwrite: bool) -> None:
    """Make ``out`` hold this sweep: new, the same sweep (resume), or refused."""
    marker = out / "sweep.json"
    if out.exists() and any(out.iterdir()):
        # the same scenario and grid keys: the same sweep, perhaps with more
        # values or replications; its finished points are kept, only the new run
        old = json.loads(marker.read_text()) if marker.exists() else {}
        same = old.get("scenario") == json.loads(json.dumps(spec["scenario"], default=str)) \
            and old.get("keys") == spec["keys"]
        if not same and not overwrite:
            raise SweepError(f"{out} holds other files or a sweep of another scenario or grid "
                             "keys; pass --overwrite to write this sweep there (an earlier "
                             "sweep's files are replaced, the others kept), or choose another "
                             "--out")
        if not same:
            _remove_sweep_files(out)
    (out / "points").mkdir(parents=True, exist_ok=True)
    atomic_text(marker, json.dumps(spec, indent=1, sort_keys=True, default=str) + "\n")


def _remove_sweep_files(out: Path) -> None:
    """Remove what a sweep writes in ``out`` (its marker, results and
    points), and nothing else: the scenario and whatever else the user keeps
    there stay."""
    for name in SWEEP_FILES:
        (out / name).unlink(missing_ok=True)
    points = out / "points"
    if points.is_dir():
        for path in [*points.glob("*.json"), *points.glob("*.error.txt")]:
            path.unlink()
        if not any(points.iterdir()):
            points.rmdir()


def sweep(scenario: str | Path, grid: dict[str, list], replications: int = 1, *,
          out: str | Path, workers: int = 1, scheduler: str | None = None,
          overwrite: bool = False, progress: Callable[[int, int, int], None] | None = None,
          overrides: dict[str, Any] | None = None,
          max_events: float = budget.DEFAULT_MAX_EVENTS,
          max_memory: float = budget.DEFAULT_MAX_MEMORY) -> pd.DataFrame:
    """Run every grid point not yet finished in ``out``; return the grid's results.

    ``workers`` local worker processes, or the Dask cluster at ``scheduler``;
    ``overrides`` (dotted keys, as ``--set``) change the scenario for every
    point. Running again with more values or replications of the same grid
    keys runs only the new points. Every point's run is estimated first, and
    a point beyond ``max_events`` or ``max_memory`` (budget.py) is refused
    before any simulation starts.
    """
    if not grid or any(not isinstance(v, list) or not v for v in grid.values()):
        raise SweepError("a grid needs at least one key, each with a list of values")
    if replications < 1 or workers < 1:
        raise SweepError("replications and workers must be at least 1")
    if "seed" in grid:
        # the results' seed column is each run's own seed (point_seed): a
        # grid of seeds would be overwritten there, and replications are
        # what runs a point again with other seeds
        raise SweepError("grid key 'seed': every point gets its own seed from the scenario's "
                         "seed and the point (the results' seed column); to run each point "
                         "with more seeds use --replications N, to change the base seed "
                         "--set seed=N")
    raw, source = raw_scenario(scenario, overrides)
    if overrides:
        raw = apply_overrides(raw, overrides, source)
    points = grid_points(grid, replications)
    # every value checked, and every point's cost estimated, before anything
    # runs (replications differ in their seed only, which the estimate ignores)
    check_points(raw, source, points[::replications], max_events=max_events,
                 max_memory=max_memory)
    out = Path(out)
    _prepare(out, {"scenario": raw, "keys": list(grid), "grid": grid, "replications": replications},
             overwrite)
    pending = [p for p in points if not (out / "points" / f"{p.id}.json").exists()]
    counts = {"done": len(points) - len(pending), "failed": 0}
    if progress and pending:
        progress(counts["done"], 0, len(points))     # what a resumed sweep has already

    def finished(point: Point, row: dict | None, error: BaseException | None) -> None:
        failure = out / "points" / f"{point.id}.error.txt"
        if error is None:
            atomic_text(out / "points" / f"{point.id}.json", json.dumps(row, default=float) + "\n")
            failure.unlink(missing_ok=True)
            counts["done"] += 1
        else:
            atomic_text(failure, f"{point.key}\n{error!r}\n")
            counts["failed"] += 1
        if progress:
            progress(counts["done"], counts["failed"], len(points))

    run_on_dask(raw, source, pending, finished, workers=workers, scheduler=scheduler)
    return _gather(out, points)


@contextlib.contextmanager
def dask_client(workers: int = 1, scheduler: str | None = None):
    """A client of the Dask cluster at ``scheduler``, or of a local cluster
    of ``workers`` processes, closed (with the local cluster) on exit."""
    from dask.distributed import Client, LocalCluster

    # a local cluster listens on loopback only, its dashboard on a free port
    cluster = None if scheduler else LocalCluster(n_workers=workers, threads_per_worker=1,
                                                  processes=True, host="127.0.0.1",
                                                  dashboard_address="127.0.0.1:0",
                                                  # not the nanny's shutdown chatter
                                                  silence_logs=logging.ERROR)
    client = Client(scheduler or cluster)
    try:
        yield client
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def run_on_dask(raw: dict, source: str, points: list[Point],
                finished: Callable[[Point, dict | None, BaseException | None], Iterable[Point] | None],
                *, workers: int = 1, scheduler: str | None = None,
                apply: Apply = apply_overrides, client=None) -> None:
    """Simulate ``points`` on Dask, calling ``finished`` as each one ends;
    the points ``finished`` returns, if any, are simulated next (the planner
    confirms candidates until enough agree). ``apply`` sets a point's
    overrides (point_scenario); it travels to the workers, so it is a
    module-level function. On ``client``'s cluster where given, else on a
    cluster of ``workers`` or at ``scheduler`` opened for these points."""
    from dask.distributed import as_completed

    if not points:
        return
    if client is None:
        with dask_client(workers, scheduler) as client:
            return run_on_dask(raw, source, points, finished, apply=apply, client=client)
    submit = lambda p: client.submit(run_point, raw, source, p, apply, pure=False)  # noqa: E731
    futures = {submit(p): p for p in points}
    running = as_completed(list(futures))
    for future in running:
        point = futures[future]
        more = (finished(point, future.result(), None) if future.status == "finished"
                else finished(point, None, future.exception()))
        for p in more or ():
            futures[new := submit(p)] = p
            running.add(new)


def _gather(out: Path, points: list[Point]) -> pd.DataFrame:
    rows = [json.loads((out / "points" / f"{p.id}.json").read_text())
            for p in points if (out / "points" / f"{p.id}.json").exists()]
    results = pd.DataFrame(rows)
    if not results.empty:
        atomic_write(out / "results.parquet", lambda tmp: results.to_parquet(tmp, index=False))
        atomic_text(out / "results.csv", results.to_csv(index=False))
    return results
