"""asgdsim: a discrete-event simulator of asynchronous-SGD training clusters.

Load a scenario, simulate it, and compare the empirical staleness and
mini-batch-size distributions with the closed-form model::

    import asgdsim
    sc = asgdsim.load_scenario("scenarios/tsubame-kfc-dl-vgg16.yaml")
    res = asgdsim.simulate(sc, seed=3)      # res.gradients, res.updates
    pred = asgdsim.predict(sc)              # closed form, no simulation
"""

from .analytic import Prediction, predict
from .scenario import Scenario, ScenarioError, load_scenario
from .simulation import Result, simulate
from .sweep import sweep
from .timing import step_time

__all__ = ["Prediction", "Result", "Scenario", "ScenarioError", "load_scenario", "predict",
           "simulate", "step_time", "sweep"]
__version__ = "0.1.0"
