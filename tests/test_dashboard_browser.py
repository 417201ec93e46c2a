"""The dashboard in a real headless browser (Debian's Chromium + ChromeDriver, driven by selenium):
the pages draw the run's figures, navigation works, the live badge follows the run, and a
hostile program's markup runs no script.

Needs ``apt-get install -y chromium chromium-driver`` (skips with that line when absent).
``EVOFORGE_SCREENSHOTS=docs/img`` also writes the screenshots of docs/DASHBOARD.md, of the
runs listed in ``EVOFORGE_SCREENSHOT_RUNS`` (colon-separated run directories) when given.
"""
from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path

import pytest

pytest.importorskip("starlette", reason="the dashboard extra (starlette) is not installed")
pytest.importorskip("uvicorn", reason="the dashboard extra (uvicorn) is not installed")
pytest.importorskip("selenium", reason="selenium is not installed (pip install -e '.[test]')")

from selenium import webdriver  # noqa: E402
from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

from dashboard_fixture import add_step, copy_of_run, free_port  # noqa: E402
from evoforge.dashboard.server import serve_in_thread  # noqa: E402

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
if not (os.path.exists(CHROMIUM) and os.path.exists(CHROMEDRIVER)):
    pytest.skip("no Chromium/ChromeDriver: apt-get update && apt-get install -y chromium chromium-driver",
                allow_module_level=True)

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage", "--window-size=1400,1000"]


@pytest.fixture(scope="module")
def site(tmp_path_factory, pool):
    directory = tmp_path_factory.mktemp("dashb") / "cp26-small"
    info = copy_of_run(directory, pool)
    server = serve_in_thread([directory], port=free_port())
    info.update(dir=directory, base=server.url)
    yield info
    server.stop()


@pytest.fixture(scope="module")
def browser():
    profile = tempfile.mkdtemp(prefix="evoforge-chromium-")
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for flag in FLAGS + [f"--user-data-dir={profile}"]:
        opts.add_argument(flag)
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=opts)
    driver.set_page_load_timeout(30)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def _open(driver, url: str) -> None:
    driver.get(url)
    WebDriverWait(driver, 20).until(lambda d: d.execute_script("return document.body.dataset.ready === '1'"))


def _drawn(driver, ident: str) -> int:
    """Points in the uPlot chart ``ident`` (0 when it drew nothing); it must hold a canvas."""
    el = driver.find_element(By.ID, ident)
    assert el.find_elements(By.TAG_NAME, "canvas"), f"{ident} has no chart"
    return int(el.get_attribute("data-points") or 0)


def test_pages_draw_the_runs_figures_and_navigate(browser, site):
    _open(browser, site["base"] + "/")
    assert _drawn(browser, "overlay-evals") >= 2 and _drawn(browser, "overlay-time") >= 1
    browser.find_element(By.LINK_TEXT, "cp26-small").click()
    _open(browser, browser.current_url)
    assert browser.current_url.endswith("/run/0")
    for ident in ("best-evals", "best-time", "classes", "rate", "times"):
        assert _drawn(browser, ident) >= 1, ident
    train = [h.text for h in browser.find_elements(By.CSS_SELECTOR, "#train h2")]
    assert train[:5] == ["Training (per step)", "reward_mean", "kl_ref_per_token", "beta_mean", "loss"]
    assert _drawn(browser, "train-3") == site["steps"]  # loss: one point per step
    best = f"{site['summary']['best_score']:.10g}"
    assert best in browser.find_element(By.CSS_SELECTOR, "table.facts").text
    # uPlot's legend shows the series of the best-score chart
    legend = browser.find_element(By.ID, "best-evals").text
    assert "best so far" in legend and "best known" in legend
    browser.find_element(By.PARTIAL_LINK_TEXT, "best program").click()
    _open(browser, browser.current_url)
    assert browser.current_url.endswith(f"/program/{site['best_id']}")
    assert browser.find_elements(By.CSS_SELECTOR, ".hl span.k")  # highlighted keywords
    img = browser.find_element(By.CSS_SELECTOR, "img.object")
    WebDriverWait(browser, 20).until(lambda d: d.execute_script("return arguments[0].naturalWidth", img) > 100)
    browser.find_element(By.PARTIAL_LINK_TEXT, "tree (").click()
    _open(browser, browser.current_url)
    assert _drawn(browser, "lineage-plot") >= 1
    forest = browser.find_element(By.ID, "forest")
    assert int(forest.get_attribute("data-nodes")) >= 2
    assert forest.find_elements(By.CSS_SELECTOR, f'circle[data-id="{site["best_id"]}"]')
    rows = browser.find_elements(By.CSS_SELECTOR, "table.lineage tbody tr")
    assert rows and rows[-1].text.startswith(f"#{site['best_id']}")
    rows[0].find_element(By.PARTIAL_LINK_TEXT, "children").click()  # down from the seed
    _open(browser, browser.current_url)
    assert "lineage of #1" in browser.find_element(By.TAG_NAME, "h1").text
    assert browser.find_elements(By.CSS_SELECTOR, "table.children tbody tr")
    browser.find_element(By.CSS_SELECTOR, f'#forest circle[data-id="{site["best_id"]}"]').click()  # the tree's nodes
    _open(browser, browser.current_url)
    assert browser.current_url.endswith(f"/tree?node={site['best_id']}")
    browser.find_element(By.LINK_TEXT, "cp26-small").click()  # the breadcrumb back
    _open(browser, browser.current_url)
    browser.find_element(By.LINK_TEXT, "the islands of the selector").click()
    _open(browser, browser.current_url)
    assert len(browser.find_elements(By.CSS_SELECTOR, "svg.grid-map")) >= 2
    browser.find_element(By.CSS_SELECTOR, "svg.grid-map a rect").click()  # an elite of island 0
    _open(browser, browser.current_url)
    assert "/program/" in browser.current_url
    browser.find_element(By.LINK_TEXT, "cp26-small").click()
    _open(browser, browser.current_url)
    browser.find_element(By.LINK_TEXT, "the idea tree").click()
    _open(browser, browser.current_url)
    assert "use a hexagonal grid" in browser.find_element(By.CSS_SELECTOR, "ul.ideas").text
    browser.find_element(By.CSS_SELECTOR, "ul.ideas ul a").click()  # the program that tested the idea
    _open(browser, browser.current_url)
    assert browser.current_url.endswith(f"/program/{site['best_id']}")


def test_hostile_program_runs_no_script(browser, site):
    for path in (f"/run/0/program/{site['hostile_id']}", "/run/0/table/memory_ideas", "/run/0/ideas",
                 "/run/0/programs?sort=score",
                 f"/run/0/tree?node={site['hostile_id']}"):
        _open(browser, site["base"] + path)
        time.sleep(0.3)  # give an onerror/onload handler its chance
        assert browser.execute_script("return window.__pwned === undefined"), path
        injected = "return document.querySelectorAll('img[src=\"x\"], svg[onload], iframe').length"
        assert browser.execute_script(injected) == 0, path
        scripts = browser.execute_script("return Array.from(document.scripts).map(s => s.src)")
        assert scripts == [site["base"] + "/static/uPlot.iife.min.js", site["base"] + "/static/dashboard.js"], path
    _open(browser, site["base"] + f"/run/0/program/{site['hostile_id']}")
    response = browser.find_element(By.CSS_SELECTOR, "pre.response").text
    assert response.startswith("<script>window.__pwned=1</script><img src=x onerror=")  # shown, as text
    assert "<svg onload=" in browser.find_element(By.CSS_SELECTOR, "div.hl").text


def test_live_badge_follows_the_run(browser, site):
    _open(browser, site["base"] + "/run/0")
    badge = browser.find_element(By.ID, "live")
    WebDriverWait(browser, 10).until(lambda d: badge.text.startswith("step "))
    step = add_step(site["dir"])
    WebDriverWait(browser, 15).until(lambda d: badge.text.startswith(f"step {step} "))
    steps = browser.find_element(By.CSS_SELECTOR, '[data-live="steps"]')
    WebDriverWait(browser, 5).until(lambda d: steps.text == str(step))  # the facts table follows too
    WebDriverWait(browser, 15).until(
        lambda d: int(d.find_element(By.ID, "classes").get_attribute("data-points")) >= 1)


@pytest.mark.skipif(not os.environ.get("EVOFORGE_SCREENSHOTS"), reason="set EVOFORGE_SCREENSHOTS=DIR to write them")
def test_screenshots(browser, site, tmp_path):
    out = Path(os.environ["EVOFORGE_SCREENSHOTS"])
    out.mkdir(parents=True, exist_ok=True)
    runs = [Path(p) for p in os.environ.get("EVOFORGE_SCREENSHOT_RUNS", "").split(":") if p]
    server = serve_in_thread(runs, port=free_port()) if runs else None
    base = server.url if server else site["base"]
    try:
        from evoforge.dashboard.data import RunReader

        best = RunReader(runs[-1]).summary()["best_id"] if runs else site["best_id"]
        last = len(runs) - 1 if runs else 0
        for name, path, height in (("overview", "/", 900), ("run", f"/run/{last}", 1500), ("islands", "/run/0/islands", 1000),
                                   ("tree", f"/run/{last}/tree", 1100),
                                   ("program", f"/run/{last}/program/{best}", 1500),
                                   ("hostile", f"/run/0/program/{site['hostile_id']}", 900)):
            if name == "hostile":
                base = site["base"]
            browser.set_window_size(1400, height)
            _open(browser, base + path)
            time.sleep(0.5)
            browser.save_screenshot(str(out / f"dashboard_{name}.png"))
    finally:
        if server:
            server.stop()
        browser.set_window_size(1400, 1000)
