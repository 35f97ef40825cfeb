"""The hostile corpus: every broken or hostile input of tests/hostile/ gets
the answer its file states (exit 2 and a message naming the file and the
key, or exit 0 for the valid base), fast, and never a traceback.

One parametrized test runs every case through ``main`` (the command line's
own entry) in a child forked from the test's warm process, so the corpus
costs the checks, not 200 Python start-ups (the imports are paid once, in a
warm-up, not against any case's limit). A case has two seconds and 500 MB:
the child's peak resident memory (its ru_maxrss) less what it held at the
fork (pages of its parent's it touches again count against it: the limit
errs strict). Its address space is also capped a
little above that (RLIMIT_AS), so a memory bomb the checks miss ends as a
MemoryError in the child, not on the machine; and a child still running
after ten seconds is killed.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import resource
import shlex
import signal
import sys
import time
from pathlib import Path

import pytest

from asgdsim import catalog
from asgdsim.cli import main

HERE = Path(__file__).parent / "hostile"
LIMIT_S = 2.0
#: the most memory a case may take, resident, beyond what it starts with
LIMIT_BYTES = 500e6
#: room in the address space beyond the resident limit: threads' stacks and
#: allocators' arenas reserve address space they never touch
ADDRESS_SLACK = 1e9
#: a child still running after this is killed (a case that hangs)
KILL_AFTER_S = 10.0


def _expectation(path: Path) -> tuple[int, str]:
    first = path.read_bytes().split(b"\n", 1)[0].decode()
    match = re.fullmatch(r"# expect: (\d)(?: (.*))?", first.strip())
    assert match, f"{path}: first line must be '# expect: STATUS [KEY]'"
    return int(match.group(1)), (match.group(2) or "").strip()


def _cases() -> list:
    cases = []
    for path in sorted((HERE / "scenarios").glob("*.yaml")):
        status, key = _expectation(path)
        words = f"{path}: {key}" if key else str(path)
        cases.append(pytest.param("scenario", [str(path)], None, status, words, id=f"scenario-{path.stem}"))
    for path in sorted((HERE / "catalogs").glob("*.yaml")):
        status, key = _expectation(path)
        words = f"{path}: {key}" if key else str(path)
        cases.append(pytest.param("catalog", ["catalog", "gpus"], str(path), status, words,
                                  id=f"catalog-{path.stem}"))
    for n, line in enumerate((HERE / "commands.txt").read_text().splitlines()):
        if not line.strip() or line.startswith("#"):
            continue
        status, words, args = (part.strip() for part in line.split("|", 2))
        cases.append(pytest.param("command", args, None, int(status), words,
                                  id=f"command-{n}-{args.split()[0]}"))
    return cases


CASES = _cases()


def test_the_corpus_is_large_enough():
    assert len(CASES) >= 150


@pytest.fixture(scope="module")
def warm():
    """Import what the commands import, so no case pays it against its limit."""
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        main(["predict", str(HERE / "scenarios" / "base.yaml")])
        import asgdsim.output, asgdsim.plan, asgdsim.simulation, asgdsim.sweep  # noqa: F401, E401


def _fill(text: str, tmp_path: Path) -> str:
    # str.replace, not format: a command's own YAML has braces ({time: 1 us})
    for name, value in (("{base}", HERE / "scenarios" / "base.yaml"), ("{tmp}", tmp_path),
                        ("{here}", HERE)):
        text = text.replace(name, str(value))
    return text


def _run(argv: list[str]) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        try:
            status = main(argv)
        except SystemExit as exc:        # argparse answers its own mistakes so
            status = exc.code
    return status, err.getvalue()


def _pages(field: int) -> int:
    """This process's size (0) or resident set (1), in bytes (/proc/self/statm)."""
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[field]) * os.sysconf("SC_PAGE_SIZE")


def _run_limited(argv: list[str]) -> tuple[int, str, float, float]:
    """(status, stderr, seconds, bytes beyond the start) of ``main(argv)`` in
    a forked child under the address-space cap; the child writes its answer
    to a pipe and leaves without running the parent's clean-ups."""
    sys.stdout.flush()
    sys.stderr.flush()
    cap = _pages(0) + int(LIMIT_BYTES + ADDRESS_SLACK)
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:                                      # the child
        os.close(read_end)
        answer = {"status": 1, "err": "the child failed before main"}
        try:
            # what the child holds to begin with: its high-water mark counts from here
            start = _pages(1)
            resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
            started = time.perf_counter()
            status, err = _run(argv)
            peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024   # KiB on Linux
            answer = {"status": status, "err": err, "took": time.perf_counter() - started,
                      "grown": peak - start}
        except BaseException as exc:                  # noqa: BLE001 (reported, not raised)
            answer = {"status": -1, "err": f"{type(exc).__name__}: {exc}", "took": 0.0}
        finally:
            with os.fdopen(write_end, "w") as pipe:
                pipe.write(json.dumps(answer))
            os._exit(0)
    os.close(write_end)
    deadline = time.monotonic() + KILL_AFTER_S
    chunks = []
    os.set_blocking(read_end, False)
    while True:
        # drain the pipe as the child writes, so a long message cannot block it
        with contextlib.suppress(BlockingIOError):
            while chunk := os.read(read_end, 1 << 16):
                chunks.append(chunk)
        done, wait_status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            os.close(read_end)
            return -9, f"killed after {KILL_AFTER_S} s", KILL_AFTER_S, 0.0
        time.sleep(0.002)
    with contextlib.suppress(BlockingIOError):
        while chunk := os.read(read_end, 1 << 16):
            chunks.append(chunk)
    os.close(read_end)
    text = b"".join(chunks).decode()
    answer = json.loads(text) if text else {"status": -wait_status, "err": "no answer", "took": 0}
    return answer["status"], answer["err"], answer["took"], answer.get("grown", 0.0)


@pytest.mark.parametrize("kind, args, user_catalog, status, words", CASES)
def test_hostile_input(kind, args, user_catalog, status, words, tmp_path, monkeypatch, warm):
    monkeypatch.chdir(tmp_path)          # a default output folder lands here, not in the repo
    if user_catalog:
        monkeypatch.setenv(catalog.USER_CATALOG, user_catalog)
    if kind == "scenario":
        # run, which checks everything; a valid file only needs the checks (predict)
        argv = ["run", *args, "--out", str(tmp_path / "out")] if status else ["predict", *args]
    elif kind == "catalog":
        argv = args
    else:
        argv = shlex.split(_fill(args, tmp_path))
        words = _fill(words, tmp_path)
    got, err, took, grown = _run_limited(argv)
    assert "Traceback" not in err and "internal error" not in err, err
    assert got == status, f"exit {got}, expected {status}: {err}"
    if status:
        assert words in err, f"{words!r} not in: {err}"
    assert took < LIMIT_S, f"took {took:.2f} s"
    assert grown < LIMIT_BYTES, f"took {grown / 1e6:.0f} MB"


def test_the_memory_limit_holds():
    """The limit is measured where the case runs: a child that touches
    100 MB more is seen to take at least that (touching more is slow on a
    small machine), and one that asks for more than the cap gets a
    MemoryError rather than the machine's memory."""
    import numpy as np

    original = main.__globals__["main"]
    touched = 100e6

    def hungry(argv):
        block = np.ones(int(touched) // 8)        # touched: resident
        return int(block[0]) + 1

    def greedy(argv):
        np.empty(int(LIMIT_BYTES + 2 * ADDRESS_SLACK) // 8)
        return 0

    global _run
    saved = _run
    try:
        _run = lambda argv: (hungry(argv), "")     # noqa: E731
        status, _, _, grown = _run_limited([])
        assert status == 2 and grown >= touched
        _run = lambda argv: (greedy(argv), "")     # noqa: E731
        status, err, _, _ = _run_limited([])
        assert status == -1 and "MemoryError" in err
    finally:
        _run = saved
    assert main.__globals__["main"] is original


def test_an_unknown_architecture_is_refused_not_priced_like_another(tmp_path, capsys):
    path = tmp_path / "arch.yaml"
    path.write_text("name: arch\nworkload: {model: resnet50, dataset_samples: 100000, sub_batch: 32}\n"
                    "cluster: {nodes: 1, gpus_per_node: 2, network: ib-edr, gpu: {name: mine, "
                    "architecture: turing, peak_flops: 10 TFLOP/s, memory_bandwidth: 500 GB/s, "
                    "host_link: pcie3-x16}}\nalgorithm: {kind: async}\nstop: {gradients: 200}\n")
    assert main(["predict", str(path)]) == 2
    assert "cluster.gpu.architecture: expected 'kepler'" in capsys.readouterr().err


SPRINT_FAT_TREE = ("tsubame2.5-vgg16-fat-tree.yaml", "timing.jitter=none", "stop.gradients=500")
CYCLE = "expected a SPRINT cycle of at most 512 learner steps"


@pytest.mark.parametrize("scenario, override, key, words", [
    # the closed form lays out every step of a cycle: 39 s at 2,280 steps, hours beyond
    (SPRINT_FAT_TREE, "timing.update_interval=1 h", "timing.update_interval", CYCLE),
    (SPRINT_FAT_TREE, "cluster.topology.oversubscription=1e5", "cluster", CYCLE),
    (SPRINT_FAT_TREE, "timing.compute={distribution: deterministic, mean: 0.1 ms}",
     "timing.compute", CYCLE),
    # pydantic reads true as 1.0 where a number goes: every step a straggler, silently
    (("ideal-async-exponential.yaml",), "faults.stragglers={probability: true, slowdown: 4}",
     "faults.stragglers.probability", "expected a number, got "),
    (("ideal-async-exponential.yaml",), "stop.epochs=true", "stop.epochs",
     "expected a number, got "),
    (("ideal-async-exponential.yaml",), "timing.compute={distribution: gamma, mean: 100 ms, cv: false}",
     "timing.compute.cv", "expected a number, got ")])
def test_a_shipped_scenario_set_wrong_is_refused_at_once(scenario, override, key, words, capsys):
    name, *settings = scenario
    path = Path(__file__).resolve().parents[1] / "scenarios" / name
    assert main(["predict", str(path), "--set", override,
                 *[a for s in settings for a in ("--set", s)]]) == 2
    assert f"{key}: {words}" in capsys.readouterr().err
