"""The chapter 05 sliders in a real browser: JupyterLab on 127.0.0.1, headless Chromium, a key press.

Needs Chromium and its driver from the system packages and selenium from the test extra:

    apt-get install chromium chromium-driver    # Debian / Ubuntu package names
    pip install -e ".[test]"                    # or just: pip install selenium

and skips with that message where one is missing. Run it alone with
``pytest tests/test_browser.py -m slow``. JupyterLab serves a temporary copy of the chapter (the
recording is linked, figures go to a temporary folder), so nothing in the repository is written.
Every wait is bounded (:data:`WAIT_S`), and JupyterLab, its kernels and the browser are stopped
whatever happens.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

import numpy as np
import pytest

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]
CHAPTER = "05_pareto.ipynb"
TRACES = REPO / "data" / "traces" / "arith-smollm2" / "lase-full"  # the chapter's default recording
TAU_LP, TAU_H, STEP = 0.8, 0.5, 0.01  # the chapter's defaults and its slider step
WAIT_S = 120.0  # the longest any single wait may take
INSTALL = ("install them with `apt-get install chromium chromium-driver` (Debian/Ubuntu) and "
           "`pip install selenium` (or `pip install -e '.[test]'`)")
CHROMIUM_FLAGS = ("--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--disable-dev-shm-usage", "--window-size=1400,1000")

#: JupyterLab user settings: start the notebook's kernel without asking (else a "Select Kernel"
#: dialog can block "Run All"), and no news or update checks (no network, no toast over the page).
SETTINGS = {
    "@jupyterlab/notebook-extension/tracker": {"autoStartDefaultKernel": True},
    "@jupyterlab/apputils-extension/notification": {"fetchNews": "false", "checkForUpdates": False,
                                                    "doNotDisturbMode": True},
}


def _find(names: tuple[str, ...], fixed: tuple[str, ...]) -> str | None:
    for name in names:
        if path := shutil.which(name):
            return path
    return next((p for p in fixed if os.access(p, os.X_OK)), None)


CHROMIUM = _find(("chromium", "chromium-browser"), ("/usr/bin/chromium", "/usr/lib/chromium/chromium"))
CHROMEDRIVER = _find(("chromedriver",), ("/usr/bin/chromedriver", "/usr/lib/chromium/chromedriver"))


def _missing() -> list[str]:
    missing = [name for name, path in (("chromium", CHROMIUM), ("chromedriver", CHROMEDRIVER)) if not path]
    try:
        import selenium  # noqa: F401
    except ImportError:
        missing.append("selenium")
    try:
        import jupyterlab  # noqa: F401
    except ImportError:
        missing.append("jupyterlab")
    return missing


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait(what: str, ready: Callable[[], object], timeout: float = WAIT_S, every: float = 0.25) -> object:
    """Poll ``ready`` until it returns something truthy; fail naming ``what`` after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    last: Exception | None = None
    while time.monotonic() < deadline:
        try:
            if got := ready():
                return got
        except Exception as e:  # noqa: BLE001 - a page in the middle of re-rendering
            last = e
        time.sleep(every)
    pytest.fail(f"timed out after {timeout:.0f} s waiting for {what}" + (f" (last error: {last!r})" if last else ""))


@dataclass
class Lab:
    url: str
    token: str
    root: Path
    log: Path

    def api(self, path: str, method: str = "GET") -> object:
        req = urllib.request.Request(f"{self.url}{path}", method=method,
                                     headers={"Authorization": f"token {self.token}"})
        with urllib.request.urlopen(req, timeout=10) as r:
            body = r.read()
        return json.loads(body) if body else None


@pytest.fixture
def lab(tmp_path: Path) -> Iterator[Lab]:
    """JupyterLab on a free port of 127.0.0.1 with a token, serving a copy of chapter 05."""
    if missing := _missing():
        pytest.skip(f"browser test needs {', '.join(missing)}: {INSTALL}")
    root = tmp_path / "notebooks"
    root.mkdir()
    shutil.copy(REPO / "notebooks" / CHAPTER, root / CHAPTER)
    (tmp_path / "data").symlink_to(REPO / "data", target_is_directory=True)  # the chapter reads ../data/traces
    port, token = _free_port(), secrets.token_hex(16)
    env = {k: v for k, v in os.environ.items() if k != "MPLBACKEND"}
    env.update({
        "PYTHONPATH": os.pathsep.join([str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])]),
        "LASE_FIGURES_DIR": str(tmp_path / "figures"), "LASE_CACHE": str(tmp_path / "cache.sqlite"),
        "JUPYTER_CONFIG_DIR": str(tmp_path / "jupyter-config"), "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime"),
        "JUPYTERLAB_SETTINGS_DIR": str(tmp_path / "lab-settings"),
        "JUPYTERLAB_WORKSPACES_DIR": str(tmp_path / "lab-workspaces"),
        "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
    })
    for plugin, values in SETTINGS.items():  # user settings of this throw-away JupyterLab only
        f = tmp_path / "lab-settings" / f"{plugin}.jupyterlab-settings"
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(json.dumps(values))
    log = tmp_path / "jupyterlab.log"
    cmd = [sys.executable, "-m", "jupyterlab", "--no-browser", "--ServerApp.ip=127.0.0.1",
           f"--ServerApp.port={port}", "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}",
           f"--ServerApp.root_dir={root}", "--LabApp.news_url=None", "--LabApp.check_for_updates_class="
           "jupyterlab.NeverCheckForUpdate"]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        cmd.append("--allow-root")  # CI containers run as root
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, cwd=root, env=env, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
    server = Lab(f"http://127.0.0.1:{port}", token, root, log)
    try:
        def up() -> bool:
            if proc.poll() is not None:
                pytest.fail(f"JupyterLab exited with {proc.returncode}:\n{log.read_text()[-3000:]}")
            try:
                return bool(server.api("/api/status"))
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                return False

        _wait("JupyterLab to answer on 127.0.0.1", up)
        yield server
    finally:
        try:  # shut the kernels down through the server, then the server itself
            for k in server.api("/api/kernels") or []:  # type: ignore[union-attr]
                server.api(f"/api/kernels/{k['id']}", method="DELETE")
        except Exception:  # noqa: BLE001 - the server may already be gone
            pass
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
            proc.wait(timeout=10)


@pytest.fixture
def browser(tmp_path: Path, lab: Lab):
    """Headless Chromium driven by the system chromedriver; quit whatever the test does."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for flag in (*CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'chromium-profile'}"):
        opts.add_argument(flag)
    driver = webdriver.Chrome(options=opts, service=Service(CHROMEDRIVER, log_output=str(tmp_path / "driver.log")))
    try:
        driver.set_page_load_timeout(WAIT_S)
        driver.set_script_timeout(30)
        yield driver
    finally:
        driver.quit()


def _expected_steps(max_steps: int = 30) -> list[tuple[float, bool, object]]:
    """(tau_lp, unchanged?, operating point) after each right-arrow press, up to the first that
    changes the point: what the page must show, computed from the same recording by replay."""
    from lase_nb.replay import chains_from_stages, operating_point, stop_stages
    from lase_nb.traces import load_run

    chains = chains_from_stages(load_run(TRACES).stages)
    steps, before = [], stop_stages(chains, TAU_LP, TAU_H)
    for k in range(1, max_steps + 1):
        tl = round(TAU_LP + k * STEP, 2)
        stops = stop_stages(chains, tl, TAU_H)
        same = bool(np.array_equal(stops, before))
        steps.append((tl, same, operating_point(chains, tl, TAU_H)))
        if not same:
            return steps
        before = stops
    pytest.fail(f"no tau_lp within {max_steps} steps of {TAU_LP} changes the operating point of {TRACES}")


def test_tau_lp_slider_moves_the_operating_point_in_jupyterlab(lab: Lab, browser, tmp_path: Path):
    try:
        _move_the_slider(lab, browser)
    except BaseException:  # pytest.fail raises a BaseException: keep what the page showed
        shot = tmp_path / "failure.png"
        browser.save_screenshot(str(shot))
        print(f"screenshot: {shot}\nJupyterLab log (end):\n{lab.log.read_text()[-2000:]}")
        raise


def _move_the_slider(lab: Lab, browser) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    steps = _expected_steps()
    t0 = time.monotonic()
    browser.get(f"{lab.url}/lab/tree/{CHAPTER}?token={lab.token}")

    def kernel_idle() -> bool:
        for dialog in browser.find_elements(By.CSS_SELECTOR, ".jp-Dialog"):  # should not come: see SETTINGS
            for button in dialog.find_elements(By.CSS_SELECTOR, "button"):
                if button.text.strip() == "Select":
                    button.click()
        sessions = lab.api("/api/sessions") or []
        started = any(s.get("path", "").endswith(CHAPTER) and (s.get("kernel") or {}).get("execution_state") == "idle"
                      for s in sessions)  # type: ignore[union-attr]
        return started and bool(browser.find_elements(
            By.CSS_SELECTOR, ".jp-NotebookPanel .jp-Notebook-ExecutionIndicator[data-status='idle']"))

    _wait("the notebook's kernel to start and be idle", kernel_idle)

    # Run > Run All Cells, as a reader would (the menu is found by its labels)
    run = _wait("the 'Run' menu", lambda: [i for i in browser.find_elements(By.CSS_SELECTOR, ".lm-MenuBar-item")
                                           if i.text.strip() == "Run"])
    run[0].click()  # type: ignore[index]
    entry = "//li[contains(@class,'lm-Menu-item')][.//div[contains(@class,'lm-Menu-itemLabel')][.='Run All Cells']]"
    _wait("the 'Run All Cells' menu entry", lambda: browser.find_elements(By.XPATH, entry), timeout=30)[0].click()

    handle_xpath = ("//div[contains(@class,'widget-hslider')][.//label[contains(., 'tau_lp')]]"
                    "//div[contains(@class,'noUi-handle')]")
    handle = _wait("the tau_lp slider (all cells run)", lambda: browser.find_elements(By.XPATH, handle_xpath))[0]
    text = lambda: browser.find_element(By.CSS_SELECTOR, ".lase-point-text").text  # noqa: E731
    _wait("the first operating point", lambda: f"tau_lp = {TAU_LP:.3g} and tau_h = {TAU_H:.3g}" in text())
    first = text()
    ran = time.monotonic() - t0

    for tl, unchanged, point in steps:
        handle.send_keys(Keys.ARROW_RIGHT)
        shown = _wait(f"the sentence at tau_lp = {tl:.3g}",
                      lambda: (s := text()) and f"tau_lp = {tl:.3g} and" in s and s)
        assert ("Operating point unchanged" in shown) == unchanged, shown
        assert f"{point['avg_tokens']:,.0f} tokens per problem" in shown, shown
        assert f"accuracy {point['accuracy']:.1%}" in shown, shown
    assert "Operating point moved" in shown and shown != first
    assert not steps[-1][1] and all(s[1] for s in steps[:-1])
    print(f"chapter 05 ran in {ran:.1f} s in JupyterLab; {len(steps)} key presses, the last moved the point")
