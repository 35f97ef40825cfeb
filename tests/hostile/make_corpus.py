"""Write the hostile corpus: broken scenario, catalog and kernel-table files.

Run once (``python tests/hostile/make_corpus.py``) and commit what it
writes; the files, not this script, are the corpus, so a case can also be
edited by hand. Each scenario file's first line says what ``asgdsim run``
must answer: ``# expect: STATUS KEY``, KEY being the dotted key (or the
catalog's ``K80.peak_flops``-like key) its message must name.
"""

from pathlib import Path

import yaml

HERE = Path(__file__).parent
BASE = {"workload": {"model": "resnet50", "dataset_samples": 1281167, "sub_batch": 32},
        "cluster": {"nodes": 2, "gpus_per_node": 8, "gpu": "V100", "network": "ib-edr"},
        "algorithm": {"kind": "async"},
        "timing": {"compute": {"distribution": "exponential", "mean": "100 ms"},
                   "communication": "ideal"},
        "stop": {"gradients": 200}}

#: the groups of a mixed cluster the group cases break: the contract's example
KFC_GROUP = {"nodes": 2, "machine": "tsubame-kfc-dl"}
P100_GROUP = {"nodes": 1, "gpus_per_node": 4, "gpu": "P100"}

# (name, dotted changes, key the message names); a value of DELETE removes the key
DELETE = object()


def _table(path: str) -> dict:
    """The changes that price the steps by a kernel table at ``path``."""
    return {"timing.compute": "table", "timing.communication": "modelled",
            "timing.kernel_table": path}


SCENARIOS = [
    ("nodes-zero", {"cluster.nodes": 0}, "cluster.nodes"),
    ("nodes-negative", {"cluster.nodes": -2}, "cluster.nodes"),
    ("nodes-float", {"cluster.nodes": 2.5}, "cluster.nodes"),
    ("nodes-text", {"cluster.nodes": "many"}, "cluster.nodes"),
    ("nodes-1e12-text", {"cluster.nodes": "1e12"}, "cluster.nodes"),
    ("nodes-1e12", {"cluster.nodes": 10**12}, "cluster.nodes"),
    ("nodes-huge", {"cluster.nodes": 10**30}, "cluster.nodes"),
    ("nodes-bool", {"cluster.nodes": True}, "cluster.nodes"),
    ("nodes-null", {"cluster.nodes": None}, "cluster.nodes"),
    ("nodes-list", {"cluster.nodes": [1, 2]}, "cluster.nodes"),
    ("nodes-map", {"cluster.nodes": {"a": 1}}, "cluster.nodes"),
    ("nodes-100000", {"cluster.nodes": 100000}, "cluster.nodes"),
    ("gpus-per-node-zero", {"cluster.gpus_per_node": 0}, "cluster.gpus_per_node"),
    ("gpus-per-node-text", {"cluster.gpus_per_node": "eight"}, "cluster.gpus_per_node"),
    ("gpus-per-learner-3", {"cluster.gpus_per_learner": 3}, "cluster.gpus_per_learner"),
    ("learner-split-bad", {"cluster.learner_split": "rows"}, "cluster.learner_split"),
    ("gpu-unknown", {"cluster.gpu": "K8"}, "cluster.gpu"),
    ("gpu-number", {"cluster.gpu": 80}, "cluster.gpu"),
    ("gpu-inline-bad-flops", {"cluster.gpu": {"name": "x", "peak_flops": "fast",
                                              "memory_bandwidth": "300 GB/s",
                                              "host_link": "pcie3-x16"}}, "cluster.gpu.peak_flops"),
    ("gpu-inline-negative-bw", {"cluster.gpu": {"name": "x", "peak_flops": "10 TFLOP/s",
                                                "memory_bandwidth": "-300 GB/s",
                                                "host_link": "pcie3-x16"}},
     "cluster.gpu.memory_bandwidth"),
    ("gpu-inline-extra", {"cluster.gpu": {"name": "x", "peak_flops": "10 TFLOP/s",
                                          "memory_bandwidth": "300 GB/s", "colour": "green",
                                          "host_link": "pcie3-x16"}}, "cluster.gpu.colour"),
    ("network-unknown", {"cluster.network": "ib-xdr"}, "cluster.network"),
    ("network-bad-bandwidth", {"cluster.network": {"name": "x", "bandwidth": "fast"}},
     "cluster.network.bandwidth"),
    ("network-zero-bandwidth", {"cluster.network": {"name": "x", "bandwidth": 0}},
     "cluster.network.bandwidth"),
    ("network-bandwidth-no-unit", {"cluster.network": {"name": "x", "bandwidth": 10}},
     "cluster.network.bandwidth"),
    ("gpu-flops-no-unit", {"cluster.gpu": {"name": "x", "peak_flops": 15.7,
                                           "memory_bandwidth": "300 GB/s",
                                           "host_link": "pcie3-x16"}},
     "cluster.gpu.peak_flops"),
    ("network-inf-bandwidth", {"cluster.network": {"name": "x", "bandwidth": float("inf")}},
     "cluster.network.bandwidth"),
    ("network-nan-latency", {"cluster.network": {"name": "x", "bandwidth": "10 Gb/s",
                                                 "latency": float("nan")}},
     "cluster.network.latency"),
    ("network-latency-unit", {"cluster.network": {"name": "x", "bandwidth": "10 Gb/s",
                                                  "latency": "3 parsecs"}},
     "cluster.network.latency"),
    ("machine-unknown", {"cluster.machine": "tsubame9"}, "cluster.machine"),
    ("machine-number", {"cluster.machine": 7}, "cluster.machine"),
    ("rails-zero", {"cluster.rails": 0}, "cluster.rails"),
    ("topology-text", {"cluster.topology": "fat-tree"}, "cluster.topology"),
    ("topology-kind-unknown", {"cluster.topology": {"kind": "torus"}}, "cluster.topology.kind"),
    ("topology-switch-missing", {"cluster.topology": {"kind": "fat-tree"}},
     "cluster.topology.nodes_per_switch"),
    ("topology-switch-zero", {"cluster.topology": {"kind": "fat-tree", "nodes_per_switch": 0}},
     "cluster.topology.nodes_per_switch"),
    ("topology-switch-float", {"cluster.topology": {"kind": "fat-tree", "nodes_per_switch": 1.5}},
     "cluster.topology.nodes_per_switch"),
    ("topology-oversubscription-half", {"cluster.topology": {
        "kind": "fat-tree", "nodes_per_switch": 4, "oversubscription": 0.5}},
     "cluster.topology.oversubscription"),
    ("topology-oversubscription-inf", {"cluster.topology": {
        "kind": "fat-tree", "nodes_per_switch": 4, "oversubscription": float("inf")}},
     "cluster.topology.oversubscription"),
    ("topology-oversubscription-ratio", {"cluster.topology": {
        "kind": "fat-tree", "nodes_per_switch": 4, "oversubscription": "1:4"}},
     "cluster.topology.oversubscription"),
    ("topology-non-blocking-switch", {"cluster.topology": {
        "kind": "non-blocking", "nodes_per_switch": 4}}, "cluster.topology.nodes_per_switch"),
    ("cluster-unknown-key", {"cluster.nodez": 2}, "cluster.nodez"),
    ("cluster-list", {"cluster": [1, 2]}, "cluster"),
    ("cluster-missing", {"cluster": DELETE}, "cluster"),
    ("cluster-text", {"cluster": "big"}, "cluster"),
    ("workload-missing", {"workload": DELETE}, "workload"),
    ("model-unknown", {"workload.model": "vgg17"}, "workload.model"),
    ("model-number", {"workload.model": 16}, "workload.model"),
    ("model-empty-layers", {"workload.model": {"name": "e", "layers": []}}, "workload.model"),
    ("model-only-act", {"workload.model": {"name": "e", "layers": [{"act": "relu"}]}},
     "workload.model"),
    ("model-bad-layer", {"workload.model": {"name": "e", "layers": [{"conv": -3}]}},
     "workload.model"),
    ("model-layer-two-kinds", {"workload.model": {"name": "e", "layers": [{"conv": 3, "fc": 3}]}},
     "workload.model"),
    ("model-layer-text", {"workload.model": {"name": "e", "layers": ["conv"]}}, "workload.model"),
    ("model-layers-text", {"workload.model": {"name": "e", "layers": "conv"}}, "workload.model"),
    ("model-fc-1e12", {"workload.model": {"name": "big", "input_shape": [3, 32, 32],
                                          "layers": [{"fc": 10**12}]}}, "workload.model"),
    ("model-input-zero", {"workload.model": {"name": "e", "input_shape": [3, 0, 32],
                                             "layers": [{"fc": 10}]}}, "workload.model"),
    ("model-input-short", {"workload.model": {"name": "e", "input_shape": [3, 32],
                                              "layers": [{"fc": 10}]}}, "workload.model"),
    ("model-conv-too-big", {"workload.model": {"name": "e", "input_shape": [3, 8, 8],
                                               "layers": [{"conv": 8, "kernel": 11}]}},
     "workload.model"),
    ("model-totals-missing", {"workload.model": {"name": "e", "parameters": 1000}},
     "workload.model"),
    ("model-unknown-key", {"workload.model": {"name": "e", "layers": [{"fc": 10}], "depth": 3}},
     "workload.model.depth"),
    ("sub-batch-zero", {"workload.sub_batch": 0}, "workload.sub_batch"),
    ("sub-batch-text", {"workload.sub_batch": "many"}, "workload.sub_batch"),
    ("sub-batch-1e15", {"workload.sub_batch": 10**15}, "workload.sub_batch"),
    ("sub-batch-float", {"workload.sub_batch": 32.5}, "workload.sub_batch"),
    ("sub-batch-negative", {"workload.sub_batch": -32}, "workload.sub_batch"),
    ("sub-batch-misspelt", {"workload.sub_bach": 32}, "workload.sub_bach"),
    ("dataset-zero", {"workload.dataset_samples": 0}, "workload.dataset_samples"),
    ("dataset-text-1e18", {"workload.dataset_samples": "1e18"}, "workload.dataset_samples"),
    ("dataset-1e15-epochs", {"workload.dataset_samples": 10**15, "stop": {"epochs": 1}},
     "stop.epochs"),
    ("dataset-1e18", {"workload.dataset_samples": 10**18}, "workload.dataset_samples"),
    ("dataset-missing", {"workload.dataset_samples": DELETE}, "workload.dataset_samples"),
    ("sample-bytes-negative", {"workload.sample_bytes": "-1 kB"}, "workload.sample_bytes"),
    ("sample-bytes-unit", {"workload.sample_bytes": "3 furlongs"}, "workload.sample_bytes"),
    ("algorithm-unknown", {"algorithm.kind": "hogwild"}, "algorithm.kind"),
    ("algorithm-kind-missing", {"algorithm": {}}, "algorithm"),
    ("algorithm-kind-number", {"algorithm.kind": 3}, "algorithm.kind"),
    ("algorithm-text", {"algorithm": "async"}, "algorithm"),
    ("algorithm-other-kinds-key", {"algorithm.allreduce": "tree"}, "algorithm.allreduce"),
    ("softsync-n-missing", {"algorithm": {"kind": "softsync"}}, "algorithm.n"),
    ("softsync-n-too-big", {"algorithm": {"kind": "softsync", "n": 17}}, "algorithm.n"),
    ("softsync-n-zero", {"algorithm": {"kind": "softsync", "n": 0}}, "algorithm.n"),
    ("ksync-k-too-big", {"algorithm": {"kind": "k-sync", "k": 1000}}, "algorithm.k"),
    ("ksync-k-text", {"algorithm": {"kind": "k-sync", "k": "half"}}, "algorithm.k"),
    ("ssp-negative", {"algorithm": {"kind": "ssp", "staleness_bound": -1}},
     "algorithm.staleness_bound"),
    ("local-sgd-no-period", {"algorithm": {"kind": "local-sgd"}}, "algorithm.period"),
    ("local-sgd-average-bad", {"algorithm": {"kind": "local-sgd", "period": 4, "average": "x"}},
     "algorithm.average"),
    ("downpour-servers-zero", {"algorithm": {"kind": "downpour", "servers": 0}},
     "algorithm.servers"),
    ("allreduce-overlap-2", {"algorithm": {"kind": "allreduce", "overlap": 2}},
     "algorithm.overlap"),
    ("sprint-allreduce-bad", {"algorithm": {"kind": "sprint", "allreduce": "star"}},
     "algorithm.allreduce"),
    ("compute-unknown", {"timing.compute": "tabel"}, "timing.compute"),
    ("compute-number", {"timing.compute": 5}, "timing.compute"),
    ("compute-law-unknown", {"timing.compute": {"distribution": "cauchy", "mean": "1 s"}},
     "timing.compute"),
    ("compute-gamma-no-cv", {"timing.compute": {"distribution": "gamma", "mean": "1 s"}},
     "timing.compute"),
    ("compute-mean-negative", {"timing.compute": {"distribution": "exponential",
                                                  "mean": "-1 s"}}, "timing.compute"),
    ("compute-mean-zero", {"timing.compute": {"distribution": "exponential", "mean": 0}},
     "timing.compute"),
    ("compute-mean-unit", {"timing.compute": {"distribution": "exponential", "mean": "1 kg"}},
     "timing.compute"),
    ("compute-uniform-cv", {"timing.compute": {"distribution": "uniform", "mean": "1 s",
                                               "cv": 0.9}}, "timing.compute"),
    ("compute-shift-too-big", {"timing.compute": {"distribution": "shifted-exponential",
                                                  "mean": "1 s", "shift": "2 s"}},
     "timing.compute"),
    ("communication-bad", {"timing.communication": "psychic"}, "timing.communication"),
    ("update-interval-on-async", {"timing.update_interval": "1 s"}, "timing.update_interval"),
    ("update-interval-unit", {"algorithm": {"kind": "sprint"},
                              "timing.update_interval": "370 parsecs"}, "timing.update_interval"),
    ("update-interval-1ns", {"algorithm": {"kind": "sprint"}, "timing.update_interval": "1 ns",
                             "stop": {"epochs": 1}}, "timing.update_interval"),
    ("update-interval-zero", {"algorithm": {"kind": "sprint"}, "timing.update_interval": 0},
     "timing.update_interval"),
    ("sprint-ideal-no-interval", {"algorithm": {"kind": "sprint"}}, "timing.update_interval"),
    ("jitter-with-law", {"timing.jitter": {"distribution": "lognormal", "cv": 0.1}},
     "timing"),
    ("jitter-mean-two", {"timing.compute": "table",
                         "timing.jitter": {"distribution": "lognormal", "mean": 2, "cv": 0.1}},
     "timing.jitter.mean"),
    ("timing-unknown-key", {"timing.speed": "fast"}, "timing.speed"),
    # walked or held one by one: a period of 10^8 took 9 GB, 10^9 shards were killed at 12.5 GB
    ("local-sgd-period-huge", {"algorithm": {"kind": "local-sgd", "period": 100_000_000}},
     "algorithm.period"),
    ("downpour-n-push-huge", {"algorithm": {"kind": "downpour", "n_push": 100_000_000}},
     "algorithm.n_push"),
    # finite, but past what the arithmetic on them holds: each crashed (exit 1)
    ("step-mean-1e200-s", {"timing.compute": {"distribution": "exponential", "mean": "1e200 s"}},
     "timing.compute.mean"),
    ("step-mean-5e-324-s", {"timing.compute": {"distribution": "exponential",
                                               "mean": "5e-324 s"}}, "timing.compute.mean"),
    ("step-mean-400-digits", {"timing.compute": {"distribution": "exponential",
                                                 "mean": 10**400}}, "timing.compute.mean"),
    ("lognormal-shape-1000", {"timing.compute": {"distribution": "lognormal", "mean": "1 s",
                                                 "shape": 1000}}, "timing.compute"),
    ("network-latency-1e300-s", {"timing.communication": "modelled",
                                 "cluster.network": {"name": "x", "bandwidth": "10 Gb/s",
                                                     "latency": "1e300 s"}},
     "cluster.network.latency"),
    ("disk-1e-300", {"timing.communication": "modelled", "cluster.disk_bandwidth": "1e-300 B/s"},
     "cluster.disk_bandwidth"),
    ("stragglers-slowdown-1e300", {"faults.stragglers": {"probability": 0.1, "slowdown": 1e300}},
     "faults.stragglers.slowdown"),
    ("slow-learners-slowdown-1e100", {"faults.slow_learners": {"learners": [0],
                                                               "slowdown": 1e100}},
     "faults.slow_learners.slowdown"),
    ("fat-tree-oversubscription-1e308", {"timing.communication": "modelled",
                                         "cluster.topology": {"kind": "fat-tree",
                                                              "nodes_per_switch": 1,
                                                              "oversubscription": 1e308}},
     "cluster.topology.oversubscription"),
    ("model-input-side-1e200", {"workload.model": {"name": "m", "parameters": 1000,
                                                   "forward_flops": "1 GFLOP",
                                                   "input_shape": [3, 10**200, 224]}},
     "workload.model.input_shape.1"),
    ("dataset-samples-400-digits", {"workload.dataset_samples": 10**400},
     "workload.dataset_samples"),
    ("fat-tree-leaf-400-digits", {"timing.communication": "modelled",
                                  "cluster.topology": {"kind": "fat-tree",
                                                       "nodes_per_switch": 10**400}},
     "cluster.topology.nodes_per_switch"),
    ("model-parameters-400-digits", {"workload.model": {"name": "m", "parameters": 10**400,
                                                        "forward_flops": "1 GFLOP"}},
     "workload.model.parameters"),
    # layer values that were never read: each ran as if right
    ("layer-act-unknown", {"workload.model": {"name": "m", "layers": [{"fc": 10}, {"act": "swishy"}]}},
     "workload.model"),
    ("layer-dropout-2", {"workload.model": {"name": "m", "layers": [{"fc": 10}, {"dropout": 2}]}},
     "workload.model"),
    ("layer-conv-kernel-0", {"workload.model": {"name": "m", "layers": [{"conv": 8, "kernel": 0}]}},
     "workload.model"),
    ("layer-bias-word", {"workload.model": {"name": "m", "layers": [{"fc": 10, "bias": "no"}]}},
     "workload.model"),
    ("sync-servers-huge", {"algorithm": {"kind": "sync", "servers": 1_000_000_000}},
     "algorithm.servers"),
    ("kernel-table-missing", _table("no-such-table.csv"), "timing.kernel_table"),
    ("kernel-table-text", _table("../tables/text-ms.csv"), "timing.kernel_table"),
    ("kernel-table-negative", _table("../tables/negative-ms.csv"), "timing.kernel_table"),
    ("kernel-table-nan", _table("../tables/nan-ms.csv"), "timing.kernel_table"),
    ("kernel-table-empty", _table("../tables/empty.csv"), "timing.kernel_table"),
    ("kernel-table-no-ms", _table("../tables/no-ms-column.csv"), "timing.kernel_table"),
    ("kernel-table-unknown-gpu", _table("../tables/unknown-gpu.csv"), "timing.kernel_table"),
    ("kernel-table-binary", _table("../tables/binary.csv"), "timing.kernel_table"),
    ("kernel-table-number", {"timing.kernel_table": 5}, "timing.kernel_table"),
    ("steps-missing", {"timing.compute": {"empirical": "no-such-steps.csv"}},
     "timing.compute.empirical"),
    ("steps-no-column", {"timing.compute": {"empirical": "../tables/text-ms.csv"}},
     "timing.compute.empirical"),
    ("steps-negative", {"timing.compute": {"empirical": "../tables/negative-steps.csv"}},
     "timing.compute.empirical"),
    ("steps-too-few", {"timing.compute": {"empirical": "../tables/three-steps.csv"}},
     "timing.compute.empirical"),
    ("steps-number", {"timing.compute": {"empirical": 5}}, "timing.compute.empirical"),
    ("steps-with-jitter", {"timing.compute": {"empirical": "../tables/twenty-steps.csv"},
                           "timing.jitter": {"distribution": "lognormal", "cv": 0.1}}, "timing"),
    ("stop-empty", {"stop": {}}, "stop"),
    ("stop-text", {"stop": "soon"}, "stop"),
    ("stop-time-1us", {"stop": {"time": "1 us"}}, "stop.time"),
    ("stop-time-1e9", {"stop": {"time": "1e9 s"}}, "stop.time"),
    ("stop-time-negative", {"stop": {"time": "-1 s"}}, "stop.time"),
    ("stop-time-unit", {"stop": {"time": "3 fortnights"}}, "stop.time"),
    ("stop-gradients-1e12", {"stop": {"gradients": 10**12}}, "stop.gradients"),
    ("stop-gradients-text", {"stop": {"gradients": "1e12"}}, "stop.gradients"),
    ("stop-gradients-zero", {"stop": {"gradients": 0}}, "stop.gradients"),
    ("stop-updates-1e12", {"stop": {"updates": 10**12}}, "stop.updates"),
    ("stop-epochs-zero", {"stop": {"epochs": 0}}, "stop.epochs"),
    ("stop-epochs-inf", {"stop": {"epochs": float("inf")}}, "stop.epochs"),
    ("stop-epochs-nan", {"stop": {"epochs": float("nan")}}, "stop.epochs"),
    ("stop-epochs-million", {"stop": {"epochs": 1e6}}, "stop.epochs"),
    ("stop-unknown-key", {"stop": {"gradient": 10}}, "stop.gradient"),
    ("warmup-two", {"stop": {"gradients": 200, "warmup": {"time": "1 s", "updates": 3}}},
     "stop.warmup"),
    ("seed-negative", {"seed": -1}, "seed"),
    ("seed-text", {"seed": "one"}, "seed"),
    ("seed-float", {"seed": 1.5}, "seed"),
    ("name-list", {"name": [1]}, "name"),
    ("top-unknown-key", {"colour": "blue"}, "colour"),
    ("faults-stragglers-prob", {"faults": {"stragglers": {"probability": 2, "slowdown": 4}}},
     "faults.stragglers.probability"),
    ("faults-slow-learner-missing", {"faults": {"slow_learners": {"learners": [99],
                                                                 "slowdown": 2}}},
     "faults.slow_learners.learners"),
    ("faults-unknown", {"faults": {"meteor": True}}, "faults.meteor"),
    # mixed clusters (cluster.groups): each group's own key named
    ("groups-no-gpu", {"cluster": {"groups": [KFC_GROUP, {"nodes": 1, "gpus_per_node": 4}]}},
     "cluster.groups.1"),
    ("groups-nodes-zero", {"cluster": {"groups": [KFC_GROUP, {**P100_GROUP, "nodes": 0}]}},
     "cluster.groups.1.nodes"),
    ("groups-nodes-negative", {"cluster": {"groups": [{**KFC_GROUP, "nodes": -1}, P100_GROUP]}},
     "cluster.groups.0.nodes"),
    ("groups-more-gpus-than-machine",
     {"cluster": {"groups": [{**KFC_GROUP, "gpus_per_node": 16}, P100_GROUP]}},
     "cluster.groups.0.gpus_per_node"),
    ("name-with-a-slash", {"name": "../escaped"}, "name"),
    ("gamma-cv-too-wide", {"timing.compute": {"distribution": "gamma", "mean": "100 ms",
                                              "cv": 50}}, "timing.compute"),
    ("slow-learner-twice", {"faults.slow_learners": {"learners": [1, 1], "slowdown": 2}},
     "faults.slow_learners.learners"),
    ("groups-empty-list", {"cluster": {"groups": []}}, "cluster.groups"),
    ("machine-more-gpus-than-it-holds",
     {"cluster": {"nodes": 2, "machine": "dgx1-v100", "gpus_per_node": 16}},
     "cluster.gpus_per_node"),
    ("groups-gpus-per-node-zero", {"cluster": {"groups": [KFC_GROUP, {**P100_GROUP,
                                                                      "gpus_per_node": 0}]}},
     "cluster.groups.1.gpus_per_node"),
    ("groups-and-nodes", {"cluster": {"nodes": 2, "groups": [KFC_GROUP, P100_GROUP]}},
     "cluster.groups"),
    ("groups-empty", {"cluster": {"groups": [], "network": "ib-edr"}}, "cluster.groups"),
    ("groups-text", {"cluster": {"groups": "K80 and P100", "network": "ib-edr"}},
     "cluster.groups"),
    ("groups-unknown-key", {"cluster": {"groups": [KFC_GROUP, {**P100_GROUP, "colour": "red"}]}},
     "cluster.groups.1.colour"),
    ("groups-unknown-machine", {"cluster": {"groups": [{"nodes": 1, "machine": "tsubame-3"},
                                                       P100_GROUP]}},
     "cluster.groups.0.machine"),
    ("groups-bad-host-link", {"cluster": {"groups": [KFC_GROUP, {**P100_GROUP,
                                                                 "host_link": "pcie9"}]}},
     "cluster.groups.1.host_link"),
    ("groups-no-network", {"cluster": {"groups": [P100_GROUP, {**P100_GROUP, "gpu": "V100"}]}},
     "cluster.network"),
    ("groups-gpus-per-learner", {"cluster": {"groups": [KFC_GROUP, {**P100_GROUP,
                                                                    "gpus_per_node": 3}],
                                             "gpus_per_learner": 2}},
     "cluster.gpus_per_learner"),
    ("groups-compute-bad", {"cluster": {"groups": [KFC_GROUP, {**P100_GROUP, "compute": {
        "distribution": "normal", "mean": "80 ms"}}]}}, "cluster.groups.1.compute"),
]

# raw texts: what no mapping can express (YAML itself)
BOMB = "\n".join(
    [f"{'abcdefghi'[0]}: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]"]
    + [f"{c}: &{c} [{','.join(['*' + p] * 9)}]" for p, c in zip("abcdefgh", "bcdefghi")]) + "\n"
TEXTS = [
    ("alias-bomb", BOMB, "b.0"),
    ("alias-simple", "workload: &w {model: vgg16, dataset_samples: 100, sub_batch: 32}\n"
     "other: *w\n", "other"),
    ("merge-key", "base: &b {nodes: 2}\ncluster:\n  <<: *b\n", "cluster.<<"),
    # without an alias: the merged 64 gave way to the 2 without a word
    ("name-300-bytes", "name: " + "x" * 300 + "\n", "name"),
    ("nodes-octal", "cluster: {nodes: 010}\n", "cluster.nodes"),
    ("stop-base-60", "stop: {gradients: 3:20}\n", "stop.gradients"),
    ("merge-key-inline", "cluster: {<<: {nodes: 64}, nodes: 2}\n", "cluster.<<"),
    ("merge-key-list", "cluster: {<<: [{nodes: 64}, {rails: 2}], nodes: 2}\n", "cluster.<<"),
    ("nested-20000", "workload: " + "[" * 20000 + "]" * 20000 + "\n", "workload"),
    ("nested-maps-10000", "workload: " + "{a: " * 10000 + "1" + "}" * 10000 + "\n", "workload"),
    ("duplicate-nodes", "workload: {model: vgg16, dataset_samples: 100, sub_batch: 32}\n"
     "cluster:\n  nodes: 8\n  gpu: K80\n  nodes: 16\n", "cluster.nodes"),
    ("duplicate-section", "workload: {model: vgg16, dataset_samples: 100, sub_batch: 32}\n"
     "workload: {model: vgg11, dataset_samples: 100, sub_batch: 32}\n", "workload"),
    ("duplicate-quoted", "seed: 1\n'seed': 2\n", "seed"),
    ("duplicate-flow", "cluster: {nodes: 1, nodes: 2}\n", "cluster.nodes"),
    ("duplicate-deep", "workload:\n  model:\n    name: x\n    name: y\n", "workload.model.name"),
    ("empty-file", "", ""),
    ("only-comment", "# nothing\n", ""),
    ("a-list", "- a\n- b\n", ""),
    ("a-number", "42\n", ""),
    ("a-string", "hello\n", ""),
    ("unclosed", "workload: [unclosed\n", ""),
    ("tab-indent", "workload:\n  model: vgg16\n\tsub_batch: 3\n", ""),
    ("two-documents", "seed: 1\n---\nseed: 2\n", ""),
    ("binary-tag", "seed: !!binary aGVsbG8=\n", "seed"),
    ("python-tag", "seed: !!python/object/apply:os.system ['true']\n", ""),
    ("huge-file", "# " + "x" * 200_000 + "\n", ""),
    ("null-bytes", "seed: 1\x00\n", ""),
    ("complex-key", "? [a, b]\n: 1\n", ""),
]

CATALOGS = {
    # file name -> (text, key its message names)
    "k80-text-flops.yaml": ("gpus:\n  K80:\n    peak_flops: fast\n    memory_bandwidth: 240 GB/s\n"
                            "    host_link: pcie3-x16\n", "gpus.K80.peak_flops"),
    "aliases-number.yaml": ("gpus:\n  X1:\n    aliases: 5\n    peak_flops: 1 TFLOP/s\n"
                            "    memory_bandwidth: 240 GB/s\n    host_link: pcie3-x16\n",
                            "gpus.X1.aliases"),
    "aliases-mixed.yaml": ("gpus:\n  X1:\n    aliases: [a, 3]\n    peak_flops: 1 TFLOP/s\n"
                           "    memory_bandwidth: 240 GB/s\n    host_link: pcie3-x16\n",
                           "gpus.X1.aliases"),
    "gpus-list.yaml": ("gpus: [1, 2]\n", "gpus"),
    "entry-number.yaml": ("gpus:\n  X1: 5\n", "gpus.X1"),
    "unknown-kind.yaml": ("tpus:\n  v4: {}\n", "tpus"),
    "top-list.yaml": ("- gpus\n", ""),
    "duplicate-entry.yaml": ("gpus:\n  X1: {peak_flops: 1 TFLOP/s}\n  X1: {peak_flops: 2 TFLOP/s}\n",
                             "gpus.X1"),
    "duplicate-key.yaml": ("networks:\n  n1: {bandwidth: 1 Gb/s, bandwidth: 2 Gb/s}\n",
                           "networks.n1.bandwidth"),
    "network-negative.yaml": ("networks:\n  n1: {bandwidth: -1}\n", "networks.n1.bandwidth"),
    "network-missing-bw.yaml": ("networks:\n  n1: {latency: 1 us}\n", "networks.n1.bandwidth"),
    "machine-bad.yaml": ("machines:\n  m1: {gpu: K99, gpus_per_node: 8, network: ib-fdr}\n",
                         "machines.m1.gpu"),
    "machine-zero-gpus.yaml": ("machines:\n  m1: {gpu: K80, gpus_per_node: 0, network: ib-fdr}\n",
                               "machines.m1.gpus_per_node"),
    "machine-max-nodes.yaml": ("machines:\n  m1: {gpu: K80, gpus_per_node: 4, network: ib-fdr, "
                               "max_nodes: -1}\n", "machines.m1.max_nodes"),
    "model-empty.yaml": ("models:\n  m2: {layers: []}\n", "models.m2"),
    "model-no-totals.yaml": ("models:\n  m2: {parameters: 5}\n", "models.m2"),
    "alias-bomb.yaml": (BOMB.replace("a:", "gpus:", 1), "b.0"),
    "nested.yaml": ("gpus: " + "[" * 5000 + "]" * 5000 + "\n", "gpus"),
    "not-yaml.yaml": ("gpus: [unclosed\n", ""),
    "binary.yaml": ("\udcff".encode("utf-8", "surrogateescape").decode("latin-1") * 10, ""),
}

TABLES = {
    "text-ms.csv": "gpu,op,pass,ms\nV100,conv,fwd,fast\n",
    "negative-ms.csv": "gpu,op,pass,ms\nV100,conv,fwd,-1\n",
    "nan-ms.csv": "gpu,op,pass,ms\nV100,conv,fwd,nan\n",
    "empty.csv": "",
    "no-ms-column.csv": "gpu,op,pass\nV100,conv,fwd\n",
    "unknown-gpu.csv": "gpu,op,pass,ms\nK99,conv,fwd,1\n",
    "negative-steps.csv": "step_s\n" + "0.1\n" * 12 + "-0.1\n",
    "three-steps.csv": "step_s\n0.1\n0.1\n0.1\n",
    "twenty-steps.csv": "step_s\n" + "0.1\n0.12\n" * 10,
}


def _changed(changes: dict) -> dict:
    import copy
    data = copy.deepcopy(BASE)
    for dotted, value in changes.items():
        *parents, last = dotted.split(".")
        node = data
        for key in parents:
            node = node.setdefault(key, {})
        if value is DELETE:
            node.pop(last, None)
        else:
            node[last] = value
    return data


def main() -> None:
    for folder in ("scenarios", "catalogs", "tables"):
        (HERE / folder).mkdir(exist_ok=True)
    (HERE / "scenarios" / "base.yaml").write_text(
        "# expect: 0\n" + yaml.safe_dump(BASE, sort_keys=False))
    # a valid mixed cluster of two node shapes, for the command lines that break it
    (HERE / "scenarios" / "groups-ok.yaml").write_text("# expect: 0\n" + yaml.safe_dump(
        _changed({"cluster": {"groups": [KFC_GROUP, P100_GROUP]}}), sort_keys=False))
    for name, changes, key in SCENARIOS:
        text = yaml.safe_dump(_changed(changes), sort_keys=False)
        (HERE / "scenarios" / f"{name}.yaml").write_text(f"# expect: 2 {key}\n{text}")
    for name, text, key in TEXTS:
        (HERE / "scenarios" / f"{name}.yaml").write_bytes(
            f"# expect: 2 {key}\n".encode() + text.encode("utf-8", "surrogateescape"))
    for name, (text, key) in CATALOGS.items():
        (HERE / "catalogs" / name).write_bytes(
            f"# expect: 2 {key}\n".encode() + text.encode("latin-1", "replace"))
    for name, text in TABLES.items():
        (HERE / "tables" / name).write_text(text)


if __name__ == "__main__":
    main()
