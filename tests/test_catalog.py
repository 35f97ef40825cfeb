"""The catalog: every contract name, sources on every entry, user files."""

import math

import pytest
import yaml

from asgdsim import catalog, simulate
from asgdsim.cli import main
from asgdsim.scenario import ScenarioError

from conftest import BASE, make


def with_cluster(cluster: dict, **overrides):
    """A test scenario whose cluster is exactly ``cluster``."""
    from asgdsim.scenario import scenario_from_dict
    data = {**BASE, "cluster": cluster}
    return scenario_from_dict(data, {k.replace("__", "."): v for k, v in overrides.items()})

CONTRACT = {
    "gpus": ["K20X", "K20", "K40", "K80", "M40", "M60", "TitanX-Maxwell", "TitanX-Pascal",
             "GTX1080", "GTX1080Ti", "P100", "V100", "A100", "H100", "H200"],
    "networks": ["ib-qdr", "ib-fdr", "ib-edr", "ib-hdr", "ib-ndr", "10gbe", "25gbe", "100gbe",
                 "pcie2-x16", "pcie3-x16", "pcie4-x16", "pcie5-x16", "nvlink1", "nvlink2",
                 "nvlink3", "nvlink4"],
    "models": ["alexnet", "caffenet", "overfeat", "vgg11", "vgg16", "vgg19", "googlenet",
               "resnet18", "resnet34", "resnet50", "resnet101", "resnet152"],
    "machines": ["tsubame2.5", "tsubame-kfc-dl", "dgx1-v100", "dgx-a100", "dgx-h100"],
}


@pytest.mark.parametrize("kind", sorted(CONTRACT))
def test_every_contract_name_resolves_case_insensitively_with_a_source(kind):
    for name in CONTRACT[kind]:
        entry = catalog.lookup(kind, name.upper())
        assert entry["name"] == name and entry.get("source"), (kind, name)


def test_machine_presets_fill_the_node():
    c = with_cluster({"machine": "tsubame2.5", "nodes": 4}).cluster
    assert (c.gpu.name, c.gpus_per_node, c.host_link.name) == ("K20X", 3, "pcie2-x16")
    assert (c.network.name, c.rails) == ("ib-qdr", 2)         # dual-rail QDR
    assert c.node_network.bandwidth == 2 * c.network.bandwidth
    explicit = with_cluster({"machine": "tsubame2.5", "nodes": 4, "gpus_per_node": 2})
    assert explicit.cluster.gpus_per_node == 2          # explicit keys win


def test_a_users_own_catalog_file(tmp_path, monkeypatch, capsys):
    mine = tmp_path / "mine.yaml"
    mine.write_text(yaml.safe_dump({
        "gpus": {"LabGPU": {"peak_flops": "20 TFLOP/s", "memory_bandwidth": "1 TB/s",
                            "host_link": "pcie4-x16", "architecture": "ampere",
                            "source": "our lab's datasheet"}},
        "networks": {"lab-net": {"bandwidth": "100 Gb/s", "latency": "2 us", "source": "ours"}},
        "machines": {"lab-box": {"gpu": "LabGPU", "gpus_per_node": 4, "network": "lab-net",
                                 "host_link": "pcie4-x16", "gpus_per_host_link": 1,
                                 "host_memory_bandwidth": "200 GB/s", "disk_bandwidth": "3 GB/s",
                                 "source": "ours"}},
        "models": {"tiny-cnn": {"input_shape": [3, 32, 32], "source": "ours",
                                "layers": [{"conv": 16, "kernel": 3, "pad": 1}, {"act": "relu"},
                                           {"pool": "max", "kernel": 2}, {"fc": 10}]}},
    }))
    monkeypatch.setenv(catalog.USER_CATALOG, str(mine))
    sc = with_cluster({"machine": "lab-box", "nodes": 2}, workload__model="tiny-cnn",
                      timing__compute="table")
    assert sc.cluster.gpu.name == "LabGPU" and sc.cluster.gpus_per_node == 4
    assert sc.workload.model.parameters == (16 * 27 + 16) + (16 * 16 * 16 * 10 + 10)
    assert simulate(sc).summary["gradients"] == 10     # BASE stops after 10
    assert main(["catalog", "gpus"]) == 0
    out = capsys.readouterr().out
    assert "LabGPU" in out
    # a measured STREAM rate is listed with its source
    assert "stream_bandwidth 836.9 GB/s" in out and "stream: BabelStream" in out
    mine.write_text("gpus: [not, a, mapping]\n")
    catalog.reload()
    with pytest.raises(ScenarioError) as error:
        make(cluster__gpu="LabGPU")
    assert "ASGDSIM_CATALOG file" in str(error.value)


def test_stored_fits_are_those_of_the_shipped_tables():
    # fitted.json spares every prediction the pandas/scipy fit; it must be
    # what fitting the shipped tables gives (python -m asgdsim.catalog.refit)
    import json
    from importlib import resources

    from asgdsim import compute
    stored = json.loads(resources.files("asgdsim.catalog").joinpath(compute.FITTED).read_text())
    assert same_fits(stored, json.loads(json.dumps(compute.fresh_fits()))), \
        "fitted.json is stale: run python -m asgdsim.catalog.refit"
    assert compute.shipped_fits() is not None


def same_fits(stored, fresh) -> bool:
    """Equal structure and text, floats to 1e-6: another numpy, scipy or
    pandas sums in another order, and least_squares, which stops once a step
    moves the fit by less than its xtol (1e-8, relative), lands elsewhere
    within that (6e-15 between pandas 2 and 3.0, 3e-9 with pandas 3.1),
    while a changed table moves a fit in its first few digits."""
    if isinstance(stored, float) or isinstance(fresh, float):
        return math.isclose(stored, fresh, rel_tol=1e-6, abs_tol=1e-300)
    if isinstance(stored, dict):
        return stored.keys() == fresh.keys() and all(same_fits(stored[k], fresh[k])
                                                     for k in stored)
    if isinstance(stored, list):
        return len(stored) == len(fresh) and all(map(same_fits, stored, fresh))
    return stored == fresh


@pytest.fixture
def users_catalog(tmp_path, monkeypatch):
    """Use a user's catalog file of the given text; the shipped one again after."""
    def use(text: str) -> None:
        mine = tmp_path / "mine.yaml"
        mine.write_text(text)
        monkeypatch.setenv(catalog.USER_CATALOG, str(mine))
        catalog.reload()
    yield use
    monkeypatch.delenv(catalog.USER_CATALOG, raising=False)
    catalog.reload()


def test_step_times_follow_a_reloaded_catalog(users_catalog):
    # derived figures (specs, kernel fits, step times) are cached under the
    # catalog's fingerprint: after a reload they equal a fresh process's
    import subprocess
    import sys

    from asgdsim import step_time
    before = step_time("V100", "resnet50", 16)
    users_catalog("gpus:\n  V100: {architecture: volta, peak_flops: 7 TFLOP/s, "
                  "memory_bandwidth: 900 GB/s, memory: 16 GB, host_link: pcie3-x16}\n")
    after = step_time("V100", "resnet50", 16)
    fresh = subprocess.run(
        [sys.executable, "-c", "from asgdsim import step_time; print(repr(step_time('V100', 'resnet50', 16)))"],
        capture_output=True, text=True, check=True).stdout
    assert after == float(fresh) and after != before
    users_catalog("")                                     # an empty file: the shipped figures
    assert step_time("V100", "resnet50", 16) == before


def test_a_users_entry_replaces_the_shipped_one_whatever_its_case_or_alias(users_catalog):
    # `k80` is the K80: tesla-k80, gk210 and the machine presets name the user's figures
    from asgdsim import step_time

    shipped = step_time("K80", "vgg16", 32)
    users_catalog("gpus:\n  k80: {architecture: kepler, peak_flops: 100 TFLOP/s, "
                  "memory_bandwidth: 240 GB/s, host_link: pcie3-x16}\n")
    times = {name: step_time(name, "vgg16", 32) for name in ("K80", "k80", "tesla-k80", "gk210")}
    assert len(set(times.values())) == 1 and times["K80"] < shipped / 2
    assert [n for n in catalog.names("gpus") if n.lower() == "k80"] == ["k80"]
    assert catalog.lookup("machines", "aws-p2.8xlarge")["gpu"] == "K80"   # named by the preset...
    assert catalog.lookup("gpus", "K80")["peak_flops"] == "100 TFLOP/s"   # ...which is the user's
