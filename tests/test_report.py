"""``asgdsim report``: one self-contained page, checked in a real browser.

The browser is Debian's Chromium driven through its chromedriver (the
``chromium`` and ``chromium-driver`` packages; .ci/run installs them) by
Selenium, which is told where the driver is so that it never tries to
download one. Without them the browser tests fail, saying what to
install: a report nobody looked at in a browser is not tested.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from asgdsim.cli import main

SCREEN = (1200, 1600)


def write_small(tmp_path: Path, extra: str = "") -> Path:
    path = tmp_path / "small.yaml"
    path.write_text("name: small\nworkload: {model: alexnet, dataset_samples: 2000, sub_batch: 8}\n"
                    "cluster: {nodes: 2, gpus_per_node: 2, gpu: K80, network: ib-fdr}\n"
                    "algorithm: {kind: sprint}\nstop: {epochs: 1}\n" + extra)
    return path


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("report")
    out = tmp / "run"
    assert main(["run", str(write_small(tmp)), "--out", str(out)]) == 0
    assert main(["report", str(out)]) == 0
    return out


@pytest.fixture(scope="module")
def fault_run_dir(tmp_path_factory) -> Path:
    """A mixed cluster whose learners fail: the report's groups and failures."""
    tmp = tmp_path_factory.mktemp("faults")
    path = tmp / "mixed.yaml"
    path.write_text(
        "name: mixed\nworkload: {model: alexnet, dataset_samples: 4000, sub_batch: 8}\n"
        "cluster:\n  network: ib-fdr\n  groups:\n"
        "    - {nodes: 1, gpus_per_node: 2, gpu: K80}\n"
        "    - {nodes: 1, gpus_per_node: 2, gpu: P100}\n"
        "algorithm: {kind: async}\n"
        "timing: {compute: {distribution: exponential, mean: 50 ms}, communication: ideal}\n"
        "faults: {failures: {mtbf: 2 s, repair: 0.5 s, scope: learner}}\n"
        "stop: {epochs: 1}\n")
    out = tmp / "run"
    assert main(["run", str(path), "--out", str(out)]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary.get("groups") and summary.get("faults")
    assert main(["report", str(out)]) == 0
    return out


def test_report_is_self_contained(run_dir):
    page = (run_dir / "report.html").read_text()
    figures = sorted(p.name for p in (run_dir / "figures").glob("*.png"))
    for name in figures:
        assert f"<figcaption>{name}</figcaption>" in page
    sources = re.findall(r'<img src="([^"]*)"', page)
    assert len(sources) == len(figures) and all(s.startswith("data:image/png;base64,")
                                               for s in sources)
    # nothing to fetch: no script, no external link, no style sheet elsewhere
    assert "<script" not in page and "<link" not in page
    assert not re.search(r'(src|href)="(https?:)?//', page)
    assert "Simulated against the closed form" in page and "epoch time (s)" in page
    assert "kind: sprint" in page          # the resolved scenario


def test_report_has_groups_and_faults_where_the_run_has_them(fault_run_dir, run_dir):
    page = (fault_run_dir / "report.html").read_text()
    assert "<h2>Groups</h2>" in page and "<h2>Failures</h2>" in page
    plain = (run_dir / "report.html").read_text()
    assert "<h2>Groups</h2>" not in plain and "<h2>Failures</h2>" not in plain


@pytest.mark.parametrize("remove", ["summary.json", "comparison.csv", "figures/staleness.png"])
def test_an_incomplete_run_folder_is_refused(run_dir, tmp_path, capsys, remove):
    copy = tmp_path / "copy"
    shutil.copytree(run_dir, copy)
    (copy / remove).unlink()
    (copy / "report.html").unlink()
    assert main(["report", str(copy)]) == 2
    err = capsys.readouterr().err
    assert str(copy) in err and remove in err and "Traceback" not in err
    assert not (copy / "report.html").exists()


def test_a_missing_or_broken_folder_is_refused(tmp_path, capsys, run_dir):
    assert main(["report", str(tmp_path / "nowhere")]) == 2
    assert "nowhere" in capsys.readouterr().err
    (tmp_path / "file").write_text("x")
    assert main(["report", str(tmp_path / "file")]) == 2
    copy = tmp_path / "copy"
    shutil.copytree(run_dir, copy)
    (copy / "summary.json").write_text("{not json")
    assert main(["report", str(copy)]) == 2
    assert "summary.json" in capsys.readouterr().err
    (copy / "summary.json").write_text(json.dumps({"scenario": "x"}))
    assert main(["report", str(copy)]) == 2
    assert "incomplete" in capsys.readouterr().err


@pytest.mark.parametrize("key, value, said", [
    ("analytic", [], "analytic is list, not a mapping"),
    ("learners", None, "learners is None, not a number"),
    ("staleness", "0.5", "staleness is str, not a mapping"),
    ("scenario", None, "scenario is None, not text"),
])
def test_a_summary_with_its_keys_but_not_their_kinds_is_refused_by_key(tmp_path, capsys, run_dir,
                                                                      key, value, said):
    """Each crashed with AttributeError, or was refused in Python's words
    ('string indices must be integers')."""
    copy = tmp_path / "copy"
    shutil.copytree(run_dir, copy)
    summary = json.loads((copy / "summary.json").read_text())
    summary[key] = value
    (copy / "summary.json").write_text(json.dumps(summary))
    assert main(["report", str(copy)]) == 2
    assert f"summary.json: not what a run writes: {said}" in capsys.readouterr().err


# --- in a real browser ------------------------------------------------------

def _browser():
    """Headless Chromium under Selenium, or a failure that says what to install."""
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    if not chromium or not driver:
        pytest.fail("the report's browser tests need Debian's Chromium and its driver: "
                    "apt-get install chromium chromium-driver (.ci/run does)")
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        pytest.fail("the report's browser tests need Selenium: pip install -e '.[dev]'")
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--hide-scrollbars", f"--window-size={SCREEN[0]},{SCREEN[1]}"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(executable_path=driver), options=options)


@pytest.fixture(scope="module")
def browser():
    driver = _browser()
    yield driver
    driver.quit()


@pytest.mark.parametrize("which", ["plain", "groups and faults"])
def test_report_renders_in_chromium(browser, run_dir, fault_run_dir, tmp_path, which):
    folder = run_dir if which == "plain" else fault_run_dir
    browser.get((folder / "report.html").resolve().as_uri())
    errors = [entry for entry in browser.get_log("browser") if entry["level"] == "SEVERE"]
    assert errors == [], errors
    images = browser.execute_script(
        "return Array.from(document.images).map(i => [i.alt, i.complete, i.naturalWidth,"
        " i.naturalHeight, i.getBoundingClientRect().width, i.getBoundingClientRect().height])")
    expected = len(list((folder / "figures").glob("*.png"))) + (0 if which == "plain" else 2)
    assert len(images) == expected
    for alt, complete, natural_w, natural_h, width, height in images:
        assert complete and natural_w > 0 and natural_h > 0, alt
        assert width > 0 and height > 0, alt
    assert browser.execute_script("return document.title").startswith("asgdsim: ")


def test_report_screenshot(browser, run_dir, tmp_path):
    """The page as a person sees it: a PNG of the window's size, not blank."""
    from PIL import Image

    browser.set_window_size(*SCREEN)
    browser.get((run_dir / "report.html").resolve().as_uri())
    shot = tmp_path / "report.png"
    assert browser.save_screenshot(str(shot))
    with Image.open(shot) as image:
        width, height = browser.execute_script("return [window.innerWidth, window.innerHeight]")
        assert image.size == (width, height) and width > 800
        colours = image.convert("RGB").getcolors(maxcolors=1 << 20)
        assert colours is not None and len(colours) > 50      # text and figures, not one colour
        white = max(colours)[0] / (image.size[0] * image.size[1])
        assert white < 0.97


def test_a_report_html_the_user_wrote_is_not_replaced_without_asking(run_dir, tmp_path, capsys):
    copy = tmp_path / "copy"
    shutil.copytree(run_dir, copy)
    page = (copy / "report.html").read_text()
    assert main(["report", str(copy)]) == 0               # its own: written again
    (copy / "report.html").write_text("<html>my notes</html>")
    assert main(["report", str(copy)]) == 2
    err = capsys.readouterr().err
    assert "--overwrite" in err and "Traceback" not in err
    assert (copy / "report.html").read_text() == "<html>my notes</html>"
    assert main(["report", str(copy), "--overwrite"]) == 0
    assert (copy / "report.html").read_text() == page
    (copy / "report.html").unlink()
    (copy / "report.html").mkdir()                        # a folder where the file goes
    assert main(["report", str(copy), "--overwrite"]) == 2
    assert "is a folder" in capsys.readouterr().err


def test_a_run_written_again_removes_its_own_report_only(run_dir, tmp_path):
    scenario = write_small(tmp_path)
    for content, kept in [(None, False), ("<html>my notes</html>", True),
                          # a page of an earlier version: signed at its foot, no mark at its head
                          ("<html><p class=note>Written by <code>asgdsim report</code> from the "
                           "files of this folder.</p></html>", False)]:
        copy = tmp_path / f"copy{len(list(tmp_path.iterdir()))}"
        shutil.copytree(run_dir, copy)
        if content is not None:
            (copy / "report.html").write_text(content)
        if not kept and content is not None:
            assert main(["report", str(copy)]) == 0          # the earlier version's: its own
            (copy / "report.html").write_text(content)
        assert main(["run", str(scenario), "--out", str(copy), "--overwrite"]) == 0
        assert (copy / "report.html").exists() == kept
    (copy / "report.html").mkdir()                            # a folder of that name: the user's
    assert main(["run", str(scenario), "--out", str(copy), "--overwrite"]) == 0
    assert (copy / "report.html").is_dir()


def test_a_run_written_again_keeps_the_users_files_of_derived_names(run_dir, tmp_path):
    # trace.json, replay.csv and its figure are removed when a run wrote them
    # (they would describe another run), kept when the user did
    scenario = write_small(tmp_path)
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    assert main(["run", str(scenario), "--out", str(ours), "--trace"]) == 0
    assert main(["replay", str(ours)]) == 0
    shutil.copytree(run_dir, theirs)
    (theirs / "trace.json").write_text('{"mine": true}')
    (theirs / "replay.csv").write_text("epoch,loss\n1,0.5\n")
    (theirs / "figures" / "replay.png").write_bytes(b"my figure")
    for folder, kept in ((ours, False), (theirs, True)):
        assert main(["run", str(scenario), "--out", str(folder), "--overwrite"]) == 0
        for name in ("trace.json", "replay.csv", "figures/replay.png"):
            assert (folder / name).exists() == kept, (folder, name)


def test_compare_written_over_a_run_removes_its_event_tables(tmp_path):
    """compare writes no event tables: a run's left beside its summary
    would describe another run, and replay trained on them without a word
    (a new user's trial: 4,006 rows of sub-batch 16 under a summary of
    8,009 gradients of 8). Tables the user put there stay."""
    import pandas as pd

    scenario = write_small(tmp_path)
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    assert main(["run", str(scenario), "--out", str(ours), "--quiet"]) == 0
    theirs.mkdir()
    pd.DataFrame({"epoch": [1], "loss": [0.5]}).to_parquet(theirs / "gradients.parquet")
    (theirs / "updates.parquet").write_text("not parquet")
    for folder, kept in ((ours, False), (theirs, True)):
        assert main(["compare", str(scenario), "--out", str(folder), "--overwrite",
                     "--quiet"]) == 0
        for name in ("gradients.parquet", "updates.parquet"):
            assert (folder / name).exists() == kept, (folder, name)
    assert main(["replay", str(ours)]) == 2
