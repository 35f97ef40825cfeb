"""An interrupted run loses nothing written: the output folder holds its
previous files or all of the new ones, never a mix, and the user's own
files there are never touched."""

import os
import signal

import pytest

from asgdsim import compare, simulate
from asgdsim.output import RUN_FILES, interrupts_held, write_run

from conftest import make


def test_an_interrupted_write_leaves_the_previous_run_as_it_was(tmp_path, monkeypatch):
    out = tmp_path / "run"
    first = simulate(make(seed=1))
    write_run(first, out)
    (out / "notes.txt").write_text("mine")
    before = {name: (out / name).read_bytes() for name in RUN_FILES}

    def interrupted(result):
        raise KeyboardInterrupt
    monkeypatch.setattr(compare, "compare_figures", interrupted)
    with pytest.raises(KeyboardInterrupt):
        write_run(simulate(make(seed=2)), out, overwrite=True)
    assert {name: (out / name).read_bytes() for name in RUN_FILES} == before
    assert (out / "notes.txt").read_text() == "mine"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]      # no staging left


def test_a_complete_write_replaces_every_file_and_keeps_the_users(tmp_path):
    out = tmp_path / "run"
    write_run(simulate(make(seed=1)), out)
    (out / "notes.txt").write_text("mine")
    old = (out / "summary.json").read_text()
    write_run(simulate(make(seed=2, timing__compute={"distribution": "exponential", "mean": 1.0})),
              out, overwrite=True)
    assert (out / "summary.json").read_text() != old
    assert (out / "notes.txt").read_text() == "mine"
    assert all((out / name).is_file() for name in RUN_FILES)


def test_ctrl_c_waits_for_the_moves_then_interrupts():
    done = []
    with pytest.raises(KeyboardInterrupt):
        with interrupts_held():
            os.kill(os.getpid(), signal.SIGINT)
            done.append("the block ran to its end")
    assert done == ["the block ran to its end"]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
