"""A user's input file that is no file to read (a device, a pipe, a folder)
or too large is refused before a byte is read: /dev/zero as a scenario took
12 GB of memory, a pipe waited forever, a 3 GB file was read whole before
its size was judged."""

import os

import pytest

from asgdsim.cli import main
from asgdsim.safeyaml import MAX_BYTES

STEPS = ("workload: {{model: resnet50, dataset_samples: 100000, sub_batch: 64}}\n"
         "cluster: {{gpu: V100, gpus_per_node: 8, nodes: 1, network: ib-edr}}\n"
         "algorithm: {{kind: async}}\ntiming: {timing}\nstop: {{epochs: 1}}\n")


@pytest.fixture
def unreadable(tmp_path):
    """Each kind of path that is not a regular file of a sane size, and what
    a scenario so named is answered (a pipe nobody writes to reads empty)."""
    pipe = tmp_path / "pipe"
    os.mkfifo(pipe)
    big = tmp_path / "big.yaml"
    with open(big, "wb") as f:        # sparse: its size, none of its bytes
        f.truncate(3 * 2**30)
    return {"device": ("/dev/zero", f"cannot be read (more than {MAX_BYTES:,} bytes)"),
            "pipe": (str(pipe), "the file is empty"),
            "folder": (str(tmp_path), "cannot be read (it is a folder, not a regular file)"),
            "large": (str(big), f"cannot be read (3,221,225,472 bytes; expected at most "
                                f"{MAX_BYTES:,})")}


@pytest.mark.parametrize("kind", ["device", "pipe", "folder", "large"])
def test_a_scenario_that_is_no_file_to_read_is_refused(unreadable, kind, capsys, monkeypatch):
    path, said = unreadable[kind]
    assert main(["predict", path]) == 2
    assert f"{path}: {said}" in capsys.readouterr().err
    if kind != "pipe":             # an empty catalog is no catalog's mistake
        monkeypatch.setenv("ASGDSIM_CATALOG", path)
        assert main(["catalog", "gpus"]) == 2
        assert said in capsys.readouterr().err


def test_a_scenario_through_a_pipe_is_read():
    """cat x.yaml | asgdsim predict /dev/stdin, as a shell's <(...) gives."""
    import subprocess
    import sys
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "scenarios" /
            "ideal-async-exponential.yaml").read_text()
    done = subprocess.run([sys.executable, "-m", "asgdsim.cli", "predict", "/dev/stdin"], input=text,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "ideal-async-exponential: async, 16 learners" in done.stdout


@pytest.mark.parametrize("kind", ["device", "pipe", "folder"])
def test_a_kernel_table_or_step_file_that_is_no_file_is_refused(unreadable, kind, tmp_path,
                                                                 capsys):
    path = unreadable[kind][0]
    said = "not a regular file" if kind != "folder" else "a folder, not a regular file"
    for timing, key in ((f"{{compute: table, kernel_table: {path}}}", "timing.kernel_table"),
                        (f"{{compute: {{empirical: {path}}}}}", "timing.compute.empirical")):
        scenario = tmp_path / "s.yaml"
        scenario.write_text(STEPS.format(timing=timing))
        assert main(["predict", str(scenario)]) == 2
        err = capsys.readouterr().err
        assert f"{key}: cannot read" in err and said in err
    assert main(["fit", path]) == 2
    assert said in capsys.readouterr().err
