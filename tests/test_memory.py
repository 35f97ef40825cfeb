"""GPU memory: the floor of memory.py by hand, and scenarios that do not fit refused."""

import pytest

from asgdsim import load_scenario
from asgdsim.cli import main
from asgdsim.scenario import ModelSpec, ScenarioError

from test_cli import DEFAULT, small

TINY = {"name": "tiny", "input_shape": [3, 8, 8],
        "layers": [{"conv": 4, "kernel": 3, "pad": 1}, {"act": "relu"},
                   {"pool": "max", "kernel": 2, "stride": 2}, {"fc": 10}]}


def test_footprint_of_a_small_network_by_hand():
    from asgdsim.memory import footprint
    model = ModelSpec.model_validate(TINY)
    assert model.parameters == (4 * 3 * 9 + 4) + (64 * 10 + 10)
    need = footprint(model.parameters, model.input_shape, model.graph, 16, None)
    # values per sample: input 192, conv 256, (relu in place), pool 64, fc 10.
    # The peak is at the relu's backward: kept so far 192 + 256 = 448, and its
    # gradients in and out 256 + 256
    assert need.weights == 3 * 4 * 762
    assert need.activations == 4 * 16 * 448 and need.backward == 4 * 16 * 512
    assert need.fits and need.total == 3 * 4 * 762 + 4 * 16 * 960


def test_a_scenario_that_does_not_fit_is_refused_with_the_figures(tmp_path, capsys):
    # VGG-16 at sub-batch 512 on a 6 GB K20X (TSUBAME 2.5)
    t25 = DEFAULT.parent / "tsubame2.5-vgg16-16nodes.yaml"
    with pytest.raises(ScenarioError) as refused:
        load_scenario(t25, {"workload.sub_batch": 512})
    message = str(refused.value)
    assert message.startswith(f"{t25}: workload.sub_batch: vgg16 at sub-batch 512 does not fit "
                              "in the 6 GB of a K20X")
    assert "activations of 512 samples 30.3 GB" in message and "= 33.6 GB" in message
    for command in ("run", "predict", "compare"):
        assert main([command, str(t25), "--set", "workload.sub_batch=512",
                     "--out", str(tmp_path / command)] if command != "predict" else
                    [command, str(t25), "--set", "workload.sub_batch=512"]) == 2
        assert "does not fit in the 6 GB of a K20X" in capsys.readouterr().err
        assert not (tmp_path / command).exists()
    # the same network at 128 fits in a 12 GB K80 die
    assert main(["predict", str(small(tmp_path, **{"workload.sub_batch": 128}))]) == 0
