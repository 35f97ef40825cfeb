"""The regression suite's golden files and the README's agreement table.

Every shipped scenario's summary is kept in ``scenarios/expected/NAME.json``
(``wall_time_s`` left out). The tests simulate each scenario again and
compare with it; a deliberate change to the model regenerates them:

    python -m asgdsim.regress --update     # rewrite scenarios/expected/*.json
    python -m asgdsim.regress --readme     # rewrite README's agreement and step-time tables

``scenarios/expected/tolerances.yaml`` states how closely each scenario's
simulation must agree with the closed form, and why where the closed form's
assumptions break.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import yaml

from .scenario import load_scenario
from .simulation import simulate

__all__ = ["golden", "scenario_files", "agreement_table", "step_time_table", "tolerances"]

#: the clone this package runs from (an editable install): its README,
#: scenarios and golden files, wherever the command is started
ROOT = Path(__file__).resolve().parents[1]
START, END = "<!-- agreement table: python -m asgdsim.regress --readme -->", "<!-- end of table -->"
STEP_START = "<!-- step-time table: python -m asgdsim.regress --readme -->"


def repository_root(parser: argparse.ArgumentParser) -> Path:
    """:data:`ROOT`, or the parser's refusal (exit 2) where the package is
    installed without its repository (no README or golden files to rewrite)."""
    if not ((ROOT / "README.md").is_file() and (ROOT / "scenarios" / "expected").is_dir()):
        parser.error(f"{ROOT} holds no README.md and scenarios/expected/: these commands "
                     "rewrite a clone's files; run them from an editable install of one "
                     "(pip install -e .)")
    return ROOT


def scenario_files(root: Path = ROOT) -> list[Path]:
    return sorted((root / "scenarios").glob("*.yaml"))


def golden(summary: dict) -> dict:
    """The summary without what depends on the machine (wall time)."""
    return {k: v for k, v in summary.items() if k != "wall_time_s"}


def tolerances(root: Path = ROOT) -> dict:
    return yaml.safe_load((root / "scenarios" / "expected" / "tolerances.yaml").read_text())


def update(root: Path = ROOT) -> None:
    expected = root / "scenarios" / "expected"
    expected.mkdir(exist_ok=True)
    for path in scenario_files(root):
        result = simulate(load_scenario(path))
        target = expected / f"{result.scenario.name}.json"
        target.write_text(json.dumps(golden(result.summary), indent=1) + "\n")
        print(f"wrote {target}")


def agreement_table(root: Path = ROOT) -> str:
    """Markdown: per scenario, the closed form's relative errors (from the golden files)."""
    lines = ["| scenario | algorithm | learners | epoch time | mean mini-batch | mean staleness "
             "| staleness TV | mini-batch TV |",
             "|---|---|---:|---:|---:|---:|---:|---:|"]
    for path in scenario_files(root):
        name = load_scenario(path).name
        s = json.loads((root / "scenarios" / "expected" / f"{name}.json").read_text())
        a = s["agreement"]
        lines.append(f"| {name} | {s['algorithm']} | {s['learners']} "
                     f"| {100 * a['epoch_time_rel_err']:.1f} % | {100 * a['minibatch_mean_rel_err']:.1f} % "
                     f"| {100 * a['staleness_mean_rel_err']:.1f} % | {a['staleness_tv']:.3f} "
                     f"| {a['minibatch_tv']:.3f} |")
    return "\n".join(lines)


def step_time_table() -> str:
    """Markdown: per GPU, the whole-network step-time error with the
    framework's overheads fitted on the other GPUs (benchmarks/accuracy.py)."""
    import statistics

    from . import compute, overheads

    rows = compute.whole_networks()
    errors: dict[str, list[float]] = {}
    for row, seconds in overheads.leave_one_out(rows, compute.raw_kernel_times, key=lambda r: r.gpu):
        errors.setdefault(row.gpu, []).append(seconds / row.step_s - 1)
    lines = ["| GPU | steps | sources | median error | median absolute error |",
             "|---|---:|---:|---:|---:|"]
    for gpu, errs in sorted(errors.items()):
        sources = len({r.source.split("@")[0].split(":")[0] for r in rows if r.gpu == gpu})
        lines.append(f"| {gpu} | {len(errs)} | {sources} | {100 * statistics.median(errs):+.1f} % "
                     f"| {100 * statistics.median(map(abs, errs)):.1f} % |")
    pooled = [abs(e) for errs in errors.values() for e in errs]
    lines.append(f"| all | {len(pooled)} | {len({r.source.split('@')[0].split(':')[0] for r in rows})} "
                 f"| | {100 * statistics.median(pooled):.1f} % |")
    return "\n".join(lines)


def readme_with_table(text: str, table: str, start: str = START) -> str:
    head, rest = text.split(start, 1)
    _, tail = rest.split(END, 1)
    return f"{head}{start}\n{table}\n{END}{tail}"


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m asgdsim.regress", description=__doc__.split("\n")[0])
    parser.add_argument("--update", action="store_true", help="rewrite the golden files")
    parser.add_argument("--readme", action="store_true",
                        help="rewrite README's agreement and step-time tables")
    args = parser.parse_args()
    if args.update or args.readme:
        repository_root(parser)
    if args.update:
        update()
    if args.readme:
        readme = ROOT / "README.md"
        text = readme_with_table(readme.read_text(), agreement_table())
        readme.write_text(readme_with_table(text, step_time_table(), STEP_START))
        print(f"rewrote the agreement and step-time tables in {readme}")
    if not (args.update or args.readme):
        parser.print_help()


if __name__ == "__main__":
    main()
