"""Progress: on a terminal (a pseudo-terminal here) a bar on stderr; piped,
or with --quiet, nothing. The simulation reports a few times a second,
never per event, and reporting changes no number."""

from __future__ import annotations

import fcntl
import os
import pty
import select
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest

from asgdsim import simulate

ROOT = Path(__file__).resolve().parents[1]


def scenario_file(tmp_path: Path, samples: int = 200_000) -> Path:
    path = tmp_path / "progress.yaml"
    path.write_text(f"name: progress\nworkload: {{model: alexnet, dataset_samples: {samples}, "
                    "sub_batch: 8}\ncluster: {nodes: 4, gpus_per_node: 4, gpu: K80, "
                    "network: ib-fdr}\nalgorithm: {kind: sprint}\nstop: {epochs: 1}\n")
    return path


def run_in_terminal(args: list[str], cwd: Path) -> tuple[int, str]:
    """Run the command line with stderr on a pseudo-terminal (stdout piped);
    return its status and what reached the terminal."""
    leader, follower = pty.openpty()
    # as a terminal window would be: 24 rows of 120 columns
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 120, 0, 0))
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "120"}
    process = subprocess.Popen([sys.executable, "-m", "asgdsim.cli", *args], cwd=cwd, env=env,
                               stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=follower)
    os.close(follower)
    seen, ended = b"", False
    while True:
        ready, _, _ = select.select([leader], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(leader, 65536)
            except OSError:         # the other end closed
                break
            if not chunk:
                break
            seen += chunk
        elif ended:
            break
        else:
            # what it wrote just before it ended may land after a wait ran
            # out: one more wait once it has ended
            ended = process.poll() is not None
    process.stdout.read()
    os.close(leader)
    return process.wait(timeout=60), seen.decode(errors="replace")


def test_run_shows_progress_on_a_terminal(tmp_path):
    status, terminal = run_in_terminal(["run", str(scenario_file(tmp_path)), "--out",
                                        str(tmp_path / "out")], tmp_path)
    assert status == 0
    assert "%|" in terminal and "samples" in terminal and "simulated" in terminal, terminal


def test_run_is_silent_when_piped(tmp_path):
    done = subprocess.run([sys.executable, "-m", "asgdsim.cli", "run",
                           str(scenario_file(tmp_path)), "--out", str(tmp_path / "out")],
                          capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0 and done.stderr == "", done.stderr


def test_quiet_silences_progress_on_a_terminal(tmp_path):
    status, terminal = run_in_terminal(["compare", str(scenario_file(tmp_path)), "--out",
                                        str(tmp_path / "out"), "--quiet"], tmp_path)
    assert status == 0 and "%|" not in terminal, terminal


def test_compare_shows_progress_on_a_terminal(tmp_path):
    status, terminal = run_in_terminal(["compare", str(scenario_file(tmp_path)), "--out",
                                        str(tmp_path / "out")], tmp_path)
    assert status == 0 and "%|" in terminal, terminal


def test_sweep_shows_points_on_a_terminal_and_not_quiet(tmp_path):
    path = scenario_file(tmp_path, samples=2000)
    status, terminal = run_in_terminal(["sweep", str(path), "--grid", "cluster.nodes=1,2",
                                        "--out", str(tmp_path / "s")], tmp_path)
    assert status == 0 and "points" in terminal and "2/2" in terminal, terminal
    status, terminal = run_in_terminal(["sweep", str(path), "--grid", "cluster.nodes=1,3",
                                        "--out", str(tmp_path / "s"), "--quiet"], tmp_path)
    assert status == 0 and "points" not in terminal, terminal


def test_plan_shows_its_simulations_on_a_terminal(tmp_path):
    path = scenario_file(tmp_path, samples=4000)
    status, terminal = run_in_terminal(["plan", str(path), "--target-minibatch", "64",
                                        "--max-gpus", "16", "--confirm", "1", "--tolerance",
                                        "0.5", "--out", str(tmp_path / "p")], tmp_path)
    assert status == 0 and "simulations" in terminal, terminal


@pytest.mark.parametrize("kind", ["sprint", "async"])
def test_progress_is_periodic_and_changes_no_number(scenario, kind):
    sc = scenario(algorithm__kind=kind, cluster__nodes=4, cluster__gpus_per_node=4,
                  timing__compute={"distribution": "exponential", "mean": 0.1},
                  timing__update_interval=0.05 if kind == "sprint" else None,
                  stop__gradients=20_000)
    calls = []
    watched, plain = simulate(sc, progress=calls.append), simulate(sc)
    assert watched.gradients.equals(plain.gradients) and watched.updates.equals(plain.updates)
    # a few hundred reports at most, whatever the number of events
    assert 1 <= len(calls) <= 400
    fractions = [c.fraction for c in calls]
    assert fractions == sorted(fractions) and 0 <= fractions[0] and fractions[-1] <= 1
    assert calls[-1].stop_gradients == 20_000
