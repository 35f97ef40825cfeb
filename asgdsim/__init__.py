"""asgdsim: a discrete-event simulator of asynchronous-SGD training clusters.

Load a scenario, simulate it, and compare the empirical staleness and
mini-batch-size distributions with the closed-form model::

    import asgdsim
    sc = asgdsim.load_scenario("scenarios/tsubame-kfc-dl-vgg16.yaml")
    res = asgdsim.simulate(sc, seed=3)      # res.gradients, res.updates
    pred = asgdsim.predict(sc)              # closed form, no simulation
"""

import importlib

#: public name -> the module that defines it; imported on first use, so that
#: ``asgdsim predict`` does not pay for pandas, SimPy and Dask
_HOMES = {"Prediction": "analytic", "predict": "analytic", "Scenario": "scenario",
          "ScenarioError": "scenario", "load_scenario": "scenario", "Result": "simulation",
          "simulate": "simulation", "sweep": "sweep", "step_time": "timing"}

__all__ = sorted(_HOMES)
__version__ = "0.1.0"


def __getattr__(name: str):
    if name not in _HOMES:
        raise AttributeError(f"module 'asgdsim' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{_HOMES[name]}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_HOMES])
