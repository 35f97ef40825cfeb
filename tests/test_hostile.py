"""The hostile corpus: every broken or hostile input of tests/hostile/ gets
the answer its file states (exit 2 and a message naming the file and the
key, or exit 0 for the valid base), fast, and never a traceback.

One parametrized test runs every case in-process through ``main`` (the
command line's own entry), so the corpus costs the checks, not 200 Python
start-ups. A case has two seconds; the first pays the imports once, in a
warm-up, not against its limit.
"""

from __future__ import annotations

import contextlib
import io
import re
import shlex
import time
from pathlib import Path

import pytest

from asgdsim import catalog
from asgdsim.cli import main

HERE = Path(__file__).parent / "hostile"
LIMIT_S = 2.0


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
        import asgdsim.output, asgdsim.simulation, asgdsim.sweep  # noqa: F401, E401


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
    started = time.perf_counter()
    got, err = _run(argv)
    took = time.perf_counter() - started
    assert "Traceback" not in err and "internal error" not in err, err
    assert got == status, f"exit {got}, expected {status}: {err}"
    if status:
        assert words in err, f"{words!r} not in: {err}"
    assert took < LIMIT_S, f"took {took:.2f} s"
