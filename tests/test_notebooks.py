"""Every shipped notebook runs, top to bottom, in a real kernel."""

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))


def test_the_six_notebooks_are_there():
    assert [p.stem for p in NOTEBOOKS] == ["01-quickstart", "02-simulated-vs-closed-form",
                                           "03-what-if", "04-between-sync-and-async",
                                           "05-when-things-go-wrong", "06-does-staleness-hurt"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs(path, monkeypatch):
    monkeypatch.setenv("MPLBACKEND", "Agg")
    notebook = nbformat.read(path, as_version=4)
    NotebookClient(notebook, timeout=300, kernel_name="python3",
                   resources={"metadata": {"path": str(path.parent)}}).execute()
    errors = [o for cell in notebook.cells if cell.cell_type == "code"
              for o in cell.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors
