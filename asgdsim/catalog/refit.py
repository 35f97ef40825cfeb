"""Store the kernel tables' fits beside them (fitted.json), so that a
prediction need not import pandas and scipy.optimize to refit them.

    python -m asgdsim.catalog.refit

Run it after changing any file of ``compute.FIT_INPUTS`` (the kernel
tables, same_library.csv, gpus.yaml, models.yaml, whole_network.csv) or the
fitting code; tests/test_catalog.py fails while the file is stale.
"""

import json
from importlib import resources

from asgdsim import compute


def main() -> None:
    path = resources.files("asgdsim.catalog").joinpath(compute.FITTED)
    with resources.as_file(path) as p:
        p.write_text(json.dumps(compute.fresh_fits(), indent=1) + "\n")
        print(f"wrote {p}")


if __name__ == "__main__":
    main()
