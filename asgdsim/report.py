"""A run's folder as one page: ``report.html``, self-contained.

People hand results on as one file. ``asgdsim report RUN_DIR`` reads what
``run`` (or ``compare``) wrote there and writes ``RUN_DIR/report.html``:
the scenario as resolved, the headline table, every figure of
``figures/``, the agreement with the closed form (``comparison.csv``) and,
where the summary has them, a mixed cluster's groups and the failures'
toll, each with a figure drawn here. Everything is inside the file:
figures as base64 PNG, the style sheet inline, no script, no link to
anything outside, so it opens the same offline, attached to a mail or
years later.
"""

from __future__ import annotations

import base64
import csv
import html
import io
import json
import math
from pathlib import Path

from .atomic import atomic_text
from .errors import OutputExists, UsageError

__all__ = ["REPORT_FILE", "REQUIRED", "write_report"]

REPORT_FILE = "report.html"
#: the mark of a page this command wrote, which it may write again
GENERATOR = '<meta name="generator" content="asgdsim report">'
SIGNATURE = "Written by <code>asgdsim report</code>"
#: what a run's folder must hold for a report (``compare`` folders have them too)
REQUIRED = ("summary.json", "scenario.yaml", "comparison.csv", "figures/staleness.png",
            "figures/minibatch.png")

STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2em auto;
       max-width: 70em; padding: 0 1em; color: #1d2733; line-height: 1.45; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; } h2 { font-size: 1.25em; margin-top: 2em;
     border-bottom: 1px solid #d5dde6; padding-bottom: 0.2em; }
pre { background: #f4f6f9; padding: 0.8em 1em; overflow-x: auto; font-size: 0.85em; }
table { border-collapse: collapse; font-size: 0.9em; }
th, td { padding: 0.25em 0.8em; border-bottom: 1px solid #e3e8ee; text-align: right; }
th:first-child, td:first-child { text-align: left; }
tr.checked td:first-child::before { content: "* "; }
figure { margin: 1.5em 0; } figure img { max-width: 100%; height: auto;
         border: 1px solid #e3e8ee; }
figcaption { font-size: 0.85em; color: #56657a; }
.note { font-size: 0.85em; color: #56657a; }
"""


def _missing(run_dir: Path) -> list[str]:
    return [name for name in REQUIRED if not (run_dir / name).is_file()]


def _check(run_dir: Path) -> dict:
    """The run's summary; refuse a folder that is not a whole run."""
    if not run_dir.exists():
        raise UsageError(f"{run_dir}: no such folder; give the folder a run wrote "
                         "(asgdsim run SCENARIO --out DIR)")
    if not run_dir.is_dir():
        raise UsageError(f"{run_dir}: not a folder; give the folder a run wrote")
    missing = _missing(run_dir)
    if missing:
        raise UsageError(f"{run_dir}: not a whole run's folder: missing {', '.join(missing)} "
                         "(run the scenario again into it)")
    try:
        summary = json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise UsageError(f"{run_dir / 'summary.json'}: unreadable ({exc})") from None
    needed = ("scenario", "algorithm", "learners", "seed", "gradients", "updates",
              "simulated_time_s", "wall_time_s", "epoch_time_s", "epoch_time_basis",
              "throughput_samples_per_s", "staleness", "minibatch", "analytic", "agreement")
    absent = [k for k in needed if not isinstance(summary, dict) or k not in summary]
    if absent:
        raise UsageError(f"{run_dir / 'summary.json'}: incomplete: missing {', '.join(absent)}")
    if wrong := _wrong_types(summary):
        raise UsageError(f"{run_dir / 'summary.json'}: not what a run writes: {'; '.join(wrong)}")
    return summary


#: what each of a summary's keys holds (numbers may be null where a run had none)
_TEXT, _NUMBER, _MAPPING = ("scenario", "algorithm", "epoch_time_basis"), \
    ("learners", "seed", "gradients", "updates", "simulated_time_s", "wall_time_s",
     "epoch_time_s", "throughput_samples_per_s"), ("staleness", "minibatch", "analytic", "agreement")


def _wrong_types(summary: dict) -> list[str]:
    """Each key whose value is not of the kind a run writes, said by name."""
    def is_number(v) -> bool:
        return isinstance(v, (int, float)) and not isinstance(v, bool)
    wrong = [f"{k} is {summary[k]!r}, not text" for k in _TEXT if not isinstance(summary[k], str)]
    wrong += [f"{k} is {summary[k]!r}, not a number" for k in _NUMBER
              if not is_number(summary[k]) and not (k == "epoch_time_s" and summary[k] is None)]
    wrong += [f"{k} is {type(summary[k]).__name__}, not a mapping" for k in _MAPPING
              if not isinstance(summary[k], dict)]
    for k in ("staleness", "minibatch"):
        if isinstance(summary[k], dict):
            wrong += [f"{k}.{q} is {summary[k].get(q)!r}, not a number" for q in ("mean", "p50", "p95")
                      if not is_number(summary[k].get(q))]
    return wrong


def _png(data: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(data).decode("ascii")


def _figure(src: str, caption: str) -> str:
    return (f'<figure><img src="{src}" alt="{html.escape(caption)}">'
            f"<figcaption>{html.escape(caption)}</figcaption></figure>")


def _drawn(fig) -> str:
    buffer = io.BytesIO()
    fig.savefig(buffer, dpi=100, format="png")
    return _png(buffer.getvalue())


def _number(text: str) -> str:
    try:
        x = float(text)
    except ValueError:
        return html.escape(text)
    if math.isnan(x):
        return ""
    if x.is_integer() and abs(x) < 1e15:
        return f"{int(x):,}"
    return f"{x:,.1f}" if abs(x) >= 100 else f"{x:.4g}"


def _comparison(path: Path) -> str:
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    out = ["<table><tr><th>figure</th><th>simulated</th><th>closed form</th>"
           "<th>rel. err</th></tr>"]
    for row in rows:
        err = row.get("rel_err", "")
        err = "" if err in ("", "nan") else f"{100 * float(err):.2f} %"
        checked = ' class="checked"' if row.get("checked") == "True" else ""
        out.append(f"<tr{checked}><td>{html.escape(row.get('figure', ''))}</td>"
                   f"<td>{_number(row.get('simulated', ''))}</td>"
                   f"<td>{_number(row.get('closed_form', ''))}</td><td>{err}</td></tr>")
    out.append("</table><p class=note>* the figures <code>compare --check</code> holds to its "
               "tolerance.</p>")
    return "\n".join(out)


def _groups_figure(summary: dict) -> str:
    """Each group's share of the applied samples and its mean step,
    simulated beside the closed form's where it has them."""
    from matplotlib.figure import Figure

    groups = summary["groups"]
    closed = summary["analytic"].get("groups") or [{} for _ in groups]
    labels = [f"group {i}\n{g['learners']} x {g['gpu']}" for i, g in enumerate(groups)]
    fig = Figure(figsize=(8, 3.4), layout="constrained")
    for ax, key, title, scale in zip(fig.subplots(1, 2), ("throughput_share", "mean_step_s"),
                                     ("share of the applied samples (%)", "mean step (ms)"),
                                     (100, 1e3)):
        x = range(len(groups))
        sim = [scale * (g.get(key) or 0) for g in groups]
        ax.bar([i - 0.2 for i in x], sim, width=0.4, color="#7aa6d6", label="simulated")
        ref = [scale * c[key] if c.get(key) is not None else math.nan for c in closed]
        if any(not math.isnan(r) for r in ref):
            ax.bar([i + 0.2 for i in x], ref, width=0.4, color="#c0392b", label="closed form")
        top = max([*sim, *(r for r in ref if not math.isnan(r))], default=0)
        ax.set_ylim(0, 1.3 * top if top > 0 else 1)     # room for the legend above the bars
        ax.set_xticks(list(x), labels, fontsize=8)
        ax.set_title(title, fontsize=10)
        ax.legend(frameon=False, fontsize=8)
    fig.suptitle(f"{summary['scenario']}: groups", fontsize=11)
    return _drawn(fig)


def _faults_figure(summary: dict) -> str:
    """Samples applied against samples lost to failures, and the downtime."""
    from matplotlib.figure import Figure

    faults = summary["faults"]
    fig = Figure(figsize=(8, 2.6), layout="constrained")
    left, right = fig.subplots(1, 2)
    left.barh(["applied", "lost to failures"],
              [summary.get("samples", 0), faults.get("lost_samples", 0)],
              color=["#7aa6d6", "#c0392b"])
    left.set_xlabel("samples")
    left.invert_yaxis()
    learner_time = summary["learners"] * summary["simulated_time_s"]
    down = 100 * faults.get("downtime_s", 0) / learner_time if learner_time else 0
    right.barh(["up", "down"], [100 - down, down], color=["#7aa6d6", "#c0392b"])
    right.set_xlim(0, 100)
    right.set_xlabel("share of learner time (%)")
    right.invert_yaxis()
    fig.suptitle(f"{summary['scenario']}: {faults.get('failures', 0)} failures, "
                 f"{faults.get('lost_gradients', 0)} gradients lost", fontsize=11)
    return _drawn(fig)


def report_html(run_dir: Path) -> str:
    """The page of the run in ``run_dir`` (refused if it is not a whole run)."""
    from .cli import summary_headline

    run_dir = Path(run_dir)
    summary = _check(run_dir)
    name = html.escape(str(summary["scenario"]))
    try:
        headline = summary_headline(summary)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise UsageError(f"{run_dir / 'summary.json'}: not what a run writes "
                         f"({type(exc).__name__}: {exc})") from None
    parts = [
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">', GENERATOR,
        f"<title>asgdsim: {name}</title><style>{STYLE}</style></head><body>",
        f"<h1>{name}</h1>",
        f"<p>{html.escape(str(summary['algorithm']))}, {summary['learners']} learners, seed "
        f"{summary['seed']}; epoch time {html.escape(str(summary['epoch_time_basis']))}.</p>",
        "<h2>Simulated against the closed form</h2>", f"<pre>{html.escape(headline)}</pre>",
        "<h2>Agreement with the closed form</h2>", _comparison(run_dir / "comparison.csv"),
        "<h2>Figures</h2>",
    ]
    for path in sorted((run_dir / "figures").iterdir()):
        if path.suffix.lower() == ".png" and path.is_file():
            parts.append(_figure(_png(path.read_bytes()), path.name))
        elif path.suffix.lower() == ".svg" and path.is_file():
            parts.append(_figure("data:image/svg+xml;base64,"
                                 + base64.b64encode(path.read_bytes()).decode("ascii"), path.name))
    if summary.get("groups"):
        parts += ["<h2>Groups</h2>", _figure(_groups_figure(summary),
                                             "each group's share of the samples and mean step")]
    if summary.get("faults"):
        f = summary["faults"]
        parts += ["<h2>Failures</h2>",
                  f"<p>{f.get('failures', 0)} failures; {f.get('lost_gradients', 0)} gradients "
                  f"({f.get('lost_samples', 0)} samples) lost; {f.get('downtime_s', 0):.1f} "
                  "learner-seconds down.</p>",
                  _figure(_faults_figure(summary), "samples applied and lost; learner time down")]
    parts += ["<h2>Scenario (resolved)</h2>",
              f"<pre>{html.escape((run_dir / 'scenario.yaml').read_text(encoding='utf-8'))}</pre>",
              f"<p class=note>{SIGNATURE} from the files of this folder.</p>", "</body></html>"]
    return "\n".join(parts) + "\n"


def write_report(run_dir: Path, overwrite: bool = False) -> Path:
    """Write ``run_dir/report.html``; return its path. A report.html that
    this command did not write (it lacks :data:`GENERATOR`) is the user's:
    refused unless ``overwrite``."""
    path = Path(run_dir) / REPORT_FILE
    if path.is_dir():
        raise UsageError(f"{path} is a folder; report.html is written there as a file")
    if path.exists() and not overwrite and not is_ours(path):
        raise OutputExists(f"{path} was not written by asgdsim report; pass --overwrite to "
                           "replace it")
    page = report_html(Path(run_dir))
    atomic_text(path, page)
    return path


def is_ours(path: Path) -> bool:
    """Whether ``path`` is a page this command wrote: marked at its head, or
    (pages written before the mark) signed at its foot."""
    try:
        with path.open("rb") as f:
            head = f.read(4096)
            f.seek(max(0, path.stat().st_size - 4096))
            foot = f.read()
    except OSError:
        return False
    return GENERATOR.encode() in head or SIGNATURE.encode() in foot
