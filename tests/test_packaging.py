"""The package as a user installs it: a built wheel in a fresh virtual
environment, not the editable checkout the other tests see."""

import shutil
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_wheel_installs_and_runs_the_default_scenario(tmp_path):
    # built from a copy, so that setuptools' build/ stays out of the checkout
    source = tmp_path / "source"
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(
        ".git", "runs", "build", "*.egg-info", "__pycache__", ".pytest_cache", ".hypothesis"))
    dist = tmp_path / "dist"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps",
                    "--no-build-isolation", "-w", str(dist), str(source)], check=True)
    wheel = next(dist.glob("asgdsim-*.whl"))
    shipped = set(zipfile.ZipFile(wheel).namelist())
    data = {p.relative_to(ROOT).as_posix() for p in (ROOT / "asgdsim" / "catalog").iterdir()
            if p.suffix in (".csv", ".yaml", ".json")}
    assert data <= shipped, data - shipped

    # the dependencies come from this interpreter's site-packages; the
    # package itself only from the wheel
    env = tmp_path / "env"
    venv.create(env, system_site_packages=True, with_pip=False)
    python = env / "bin" / "python"
    subprocess.run([python, "-m", "pip", "install", "--quiet", "--no-deps", str(wheel)], check=True)
    scenario = tmp_path / "kfc.yaml"
    scenario.write_text((ROOT / "scenarios" / "tsubame-kfc-dl-vgg16.yaml").read_text())
    where = subprocess.run([python, "-c", "import asgdsim.compute as c; print(c.__file__)"],
                           cwd=tmp_path, capture_output=True, text=True, check=True).stdout
    assert Path(where.strip()).is_relative_to(env), where
    run = subprocess.run([env / "bin" / "asgdsim", "run", str(scenario), "--out", "run"],
                         cwd=tmp_path, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert (tmp_path / "run" / "summary.json").is_file()
