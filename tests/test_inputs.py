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
    """Each kind of path that is not a regular file of a sane size."""
    pipe = tmp_path / "pipe"
    os.mkfifo(pipe)
    big = tmp_path / "big.yaml"
    with open(big, "wb") as f:        # sparse: its size, none of its bytes
        f.truncate(3 * 2**30)
    return {"device": ("/dev/zero", "not a regular file"),
            "pipe": (str(pipe), "not a regular file"),
            "folder": (str(tmp_path), "a folder, not a regular file"),
            "large": (str(big), f"expected at most {MAX_BYTES:,}")}


@pytest.mark.parametrize("kind", ["device", "pipe", "folder", "large"])
def test_a_scenario_that_is_no_file_to_read_is_refused(unreadable, kind, capsys, monkeypatch):
    path, said = unreadable[kind]
    assert main(["predict", path]) == 2
    assert f"{path}: cannot be read (" in capsys.readouterr().err
    # and a user catalog so named
    monkeypatch.setenv("ASGDSIM_CATALOG", path)
    assert main(["catalog", "gpus"]) == 2
    assert said in capsys.readouterr().err


@pytest.mark.parametrize("kind", ["device", "pipe", "folder"])
def test_a_kernel_table_or_step_file_that_is_no_file_is_refused(unreadable, kind, tmp_path,
                                                                 capsys):
    path, said = unreadable[kind]
    for timing, key in ((f"{{compute: table, kernel_table: {path}}}", "timing.kernel_table"),
                        (f"{{compute: {{empirical: {path}}}}}", "timing.compute.empirical")):
        scenario = tmp_path / "s.yaml"
        scenario.write_text(STEPS.format(timing=timing))
        assert main(["predict", str(scenario)]) == 2
        err = capsys.readouterr().err
        assert f"{key}: cannot read" in err and said in err
    assert main(["fit", path]) == 2
    assert said in capsys.readouterr().err
