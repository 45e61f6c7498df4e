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
import math
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

    # the chapter's kernel-free panel works in JupyterLab too, with the kernel shut down
    from lase_nb.runs import COMMITTED_DIR

    for k in lab.api("/api/kernels") or []:  # type: ignore[union-attr]
        lab.api(f"/api/kernels/{k['id']}", method="DELETE")
    _wait("the kernel to be gone", lambda: not lab.api("/api/kernels"))
    expect = _frontier_expect(browser, COMMITTED_DIR / "arith-smollm2")
    frame = _wait("the kernel-free panel", lambda: browser.find_elements(By.CSS_SELECTOR, "iframe.lase-panel"))[0]
    browser.execute_script("arguments[0].scrollIntoView()", frame)
    browser.switch_to.frame(frame)
    _wait("the panel's first numbers", lambda: (r := browser.execute_script(_READOUT)) and "tau_lp" in r)
    for name in ("tau_lp", "tau_h"):
        _moves(browser, name, expect)
    browser.switch_to.default_content()
    print(f"chapter 05 ran in {ran:.1f} s in JupyterLab; {len(steps)} key presses, the last moved the point")


# ---------------------------------------------------------------------------------------------
# The book's kernel-free panels (issue 49): pages opened from disk, the network off
# ---------------------------------------------------------------------------------------------

PAGE_LIMIT = 5_000_000  # bytes a book page may weigh, the panel's inlined BokehJS included
PANEL_CHAPTERS = ("00", "02", "05")
SCREEN_W = 1280

#: JavaScript run inside a panel's iframe: every element matching a selector, through Bokeh's shadow roots.
_DEEP = ("function deep(root, sel, out) { for (const el of root.querySelectorAll('*')) {"
         " if (el.matches(sel)) out.push(el); if (el.shadowRoot) deep(el.shadowRoot, sel, out); } return out; }\n")
#: The panel's printed numbers: ``row.key`` (or ``key``) -> the text shown, and the highlighted tokens.
_READOUT = _DEEP + """
const host = deep(document, '.lase-readout', [])[0];
if (!host) return null;
const root = host.shadowRoot || host, out = {};
for (const e of root.querySelectorAll('[data-key]')) {
  const row = e.closest('tr[data-row]');
  out[(row ? row.dataset.row + '.' : '') + e.dataset.key] = e.innerText.trim();
}
out['marks'] = String(root.querySelectorAll('mark').length);
return out;"""


@pytest.fixture(scope="module")
def book(tmp_path_factory) -> Path:
    """Chapters 00, 02 and 05 executed with papermill and built into the HTML book (a temporary folder)."""
    if missing := _missing():
        pytest.skip(f"browser test needs {', '.join(missing)}: {INSTALL}")
    from lase_nb.book.html import build_book
    from lase_nb.book.execution import run_notebooks

    tmp = tmp_path_factory.mktemp("book")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("LASE_CACHE", str(tmp / "cache.sqlite"))
        mp.setenv("LASE_FIGURES_DIR", str(tmp / "figures"))
        run_notebooks(list(PANEL_CHAPTERS), {"interactive": False, "n_entropy_problems": 1}, out=tmp / "executed")
    build_book(tmp / "executed", tmp / "book")
    (tmp / "book" / "cache.path").write_text(str(tmp / "cache.sqlite"))  # chapter 00's reply, for the test
    return tmp / "book"


@pytest.fixture
def offline(tmp_path: Path):
    """Headless Chromium, 1280 px wide, with the network switched off and every request logged."""
    if missing := _missing():
        pytest.skip(f"browser test needs {', '.join(missing)}: {INSTALL}")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for flag in (*CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'chromium-profile'}", "--proxy-server=127.0.0.1:9",
                 "--host-resolver-rules=MAP * ~NOTFOUND"):
        opts.add_argument(flag)
    opts.set_capability("goog:loggingPrefs", {"performance": "ALL"})
    driver = webdriver.Chrome(options=opts, service=Service(CHROMEDRIVER, log_output=str(tmp_path / "driver.log")))
    try:
        driver.set_window_size(SCREEN_W, 1000)
        driver.set_page_load_timeout(WAIT_S)
        driver.execute_cdp_cmd("Network.enable", {})
        driver.execute_cdp_cmd("Network.emulateNetworkConditions", {"offline": True, "latency": 0,
                                                                    "downloadThroughput": -1, "uploadThroughput": -1})
        yield driver
    finally:
        driver.quit()


def _requests(driver) -> list[str]:
    """The URLs the page asked for since the last call (Chromium's performance log)."""
    urls = []
    for entry in driver.get_log("performance"):
        msg = json.loads(entry["message"])["message"]
        if msg.get("method") == "Network.requestWillBeSent":
            urls.append(msg["params"]["request"]["url"])
    return urls


def _open_panel(driver, page: Path, shots: Path) -> None:
    """Open a book page from disk, check its weight and that it asks nothing of the network, take a
    screenshot of its panel, and switch into the panel's iframe."""
    from selenium.webdriver.common.by import By

    size = page.stat().st_size
    assert size <= PAGE_LIMIT, f"{page.name} weighs {size / 1e6:.1f} MB (limit {PAGE_LIMIT / 1e6:.0f} MB)"
    _requests(driver)  # forget what the browser fetched for itself before the page (its new-tab page)
    driver.get(page.as_uri())
    frame = _wait(f"the panel in {page.name}", lambda: driver.find_elements(By.CSS_SELECTOR, "iframe.lase-panel"))[0]
    driver.execute_script("arguments[0].scrollIntoView()", frame)
    driver.switch_to.frame(frame)
    _wait("the panel's first numbers", lambda: (r := driver.execute_script(_READOUT)) and "tau_lp" in r)
    driver.switch_to.default_content()
    shots.mkdir(parents=True, exist_ok=True)
    frame.screenshot(str(shots / f"{page.stem}_panel.png"))
    remote = [u for u in _requests(driver) if u.split(":", 1)[0].lower() in ("http", "https", "ws", "wss", "ftp")]
    assert not remote, f"{page.name} asked the network for {remote[:5]}"
    driver.switch_to.frame(frame)


def _moves(driver, name: str, expect: Callable[[dict], None]) -> int:
    """Move slider ``name`` to three positions with the keyboard and three by dragging; after each,
    wait for the readout to name the slider's new value, then ``expect(readout)``. Returns the
    number of distinct values visited."""
    from selenium.webdriver import ActionChains
    from selenium.webdriver.common.keys import Keys

    handles = driver.execute_script(_DEEP + "return deep(document, '.noUi-handle', []);")
    order = [m for m in ("tau_lp", "tau_h") if driver.execute_script(
        f"return Bokeh.documents[0].get_model_by_name('{m}') !== null;")]
    handle = handles[order.index(name)]
    value = lambda: float(driver.execute_script(f"return Bokeh.documents[0].get_model_by_name('{name}').value;"))  # noqa: E731
    seen = []
    moves = [("key", Keys.ARROW_RIGHT), ("key", Keys.PAGE_DOWN), ("key", Keys.HOME),
             ("drag", 90), ("drag", 140), ("drag", -60)]
    for kind, how in moves:
        before = value()
        if kind == "key":
            handle.send_keys(how)
        else:
            ActionChains(driver).click_and_hold(handle).move_by_offset(how, 0).release().perform()
        _wait(f"{name} to move ({kind} {how!r})", lambda: abs(value() - before) > 1e-9, timeout=10)
        shown = f"{value():.2f}"
        readout = _wait(f"the readout at {name} = {shown}",
                        lambda: (r := driver.execute_script(_READOUT)) and r.get(name) == shown and r, timeout=10)
        expect(readout)
        seen.append(shown)
    assert len(set(seen)) >= 3, seen
    return len(set(seen))


def _point_cells(point, row: str) -> dict[str, str]:
    from lase_nb.chapters.sliders import POINT_FORMATS

    return {f"{row}.accuracy": POINT_FORMATS["accuracy"].format(point["accuracy"]),
            f"{row}.avg_tokens": POINT_FORMATS["avg_tokens"].format(point["avg_tokens"]),
            f"{row}.escalation_rate": POINT_FORMATS["escalation_rate"].format(point["escalation_rate"]),
            f"{row}.stops": " / ".join(str(int(point[k])) for k in point.index if str(k).startswith("stop_"))}


def _check_frontier_page(driver, page: Path, study: Path, shots: Path) -> None:
    """Chapter 05's panel in a book page: every printed number equals replay of ``study`` at the printed thresholds."""
    expect = _frontier_expect(driver, study)
    _open_panel(driver, page, shots)
    for name in ("tau_lp", "tau_h"):
        _moves(driver, name, expect)


def _frontier_expect(driver, study: Path) -> Callable[[dict], None]:
    """What chapter 05's panel must print, read from ``study`` by replay at the printed thresholds."""
    from lase_nb.chapters.pareto import baseline_points
    from lase_nb.replay import operating_point
    from lase_nb.runs import common_ids, load_runs

    runs = load_runs(study, ["lase", "mv", "mad"])
    from lase_nb.replay import chains_from_stages

    chains = chains_from_stages(runs["lase"].stages)
    others = {k: v for k, v in runs.items() if k != "lase"}
    shared = common_ids(others, chains.problem_ids) if others else []
    common = chains.subset(np.isin(chains.problem_ids.astype(str), shared)) if len(shared) else None
    base = baseline_points(others, shared) if others else None

    def expect(r: dict) -> None:
        tl, th = float(r["tau_lp"]), float(r["tau_h"])
        want = _point_cells(operating_point(chains, tl, th), "lase")
        if common is not None:
            want |= _point_cells(operating_point(common, tl, th), "lase-common")
            for _, b in base.iterrows():
                want |= {f"{b['strategy']}.accuracy": f"{b['accuracy']:.1%}",
                         f"{b['strategy']}.avg_tokens": f"{b['avg_tokens']:,.0f}"}
        got = {k: r.get(k) for k in want}
        assert got == want, f"at tau_lp = {tl}, tau_h = {th}"
        pt = operating_point(chains, tl, th)
        xy = driver.execute_script("const d = Bokeh.documents[0].get_model_by_name('star').data; return [d.x[0], d.y[0]];")
        assert xy == pytest.approx([pt["avg_tokens"], pt["accuracy"]])  # the star sits on that point

    return expect


@pytest.mark.slow
def test_book_panels_work_from_disk_with_the_network_off(book: Path, offline, tmp_path: Path):
    """Chapters 05, 02 and 00 in the book: each slider moved by keyboard and by dragging, every
    printed number equal to replay (05), gate_split (02) or the gate on the reply (00) at the
    printed threshold; nothing asked of the network; each page at most 5 MB; a screenshot of each
    panel at 1280 px wide (in ``$LASE_PANEL_SHOTS`` when set)."""
    from lase_nb.runs import COMMITTED_DIR

    shots = Path(os.environ.get("LASE_PANEL_SHOTS", tmp_path / "shots"))
    try:
        _check_frontier_page(offline, book / "05_pareto.html", COMMITTED_DIR / "arith-smollm2", shots)
        _check_gate_page(offline, book / "02_calibration.html", COMMITTED_DIR / "arith-smollm2", shots)
        _check_token_page(offline, book / "00_quickstart.html", _quickstart_reply(book), shots)
    except BaseException:
        offline.switch_to.default_content()
        offline.save_screenshot(str(tmp_path / "failure.png"))
        print(f"screenshot: {tmp_path / 'failure.png'}")
        raise


def _check_gate_page(driver, page: Path, study: Path, shots: Path) -> None:
    """Chapter 02's panel: the printed shares equal gate_split's at the printed tau_lp (entropy gate off)."""
    from lase_nb.chapters.gate_panel import ESCALATED_COLOR, gate_counts
    from lase_nb.confidence import confidence_frame
    from lase_nb.runs import load_runs

    frame = confidence_frame(load_runs(study, ["lase"])["lase"], stage=0)
    driver.switch_to.default_content()
    _open_panel(driver, page, shots)

    def expect(r: dict) -> None:
        c = gate_counts(frame, float(r["tau_lp"]), math.inf)  # the panel's gate: exp(LP_min) alone
        share = lambda k, n: f"{k} of {n} ({k / n:.1%})"  # noqa: E731
        assert (r["escalated"], r["caught"], r["right_escalated"]) == (
            share(c["escalated"], c["answers"]), share(c["caught"], c["errors"]),
            share(c["right_escalated"], c["right"])), r
        colors = driver.execute_script("return Array.from(Bokeh.documents[0].get_model_by_name('answers').data.color);")
        assert colors.count(ESCALATED_COLOR) == c["escalated"]  # the dots say the same

    _moves(driver, "tau_lp", expect)


def _check_token_page(driver, page: Path, reply, shots: Path) -> None:
    """Chapter 00's panel: the tokens below the printed tau_lp counted and highlighted, the verdict the gate's."""
    from lase_nb.confidence import is_uncertain

    gen, conf = reply
    probs = np.exp([t.logprob for t in gen.tokens])
    driver.switch_to.default_content()
    _open_panel(driver, page, shots)

    def expect(r: dict) -> None:
        tl, th = float(r["tau_lp"]), float(r["tau_h"])
        below = int((probs < tl).sum())
        assert r["below"].startswith(f"{below} of {len(probs)} tokens are below tau_lp"), r
        assert r["marks"] == str(below)  # as many tokens highlighted in the reply
        assert r["verdict"].startswith("Unsure (U = 1)" if is_uncertain(conf, tl, th) else "Sure (U = 0)"), r
        if conf.answer is not None:
            side = "below" if conf.p_min < tl else "at or above"
            assert f"exp(LP_min) = {conf.p_min:.3f} is {side} tau_lp = {tl:.2f}" in r["why"], r

    for name in ("tau_lp", "tau_h"):
        _moves(driver, name, expect)
    if conf.answer is not None and conf.h_max is not None:  # both verdicts: the laxest gate lets the answer pass
        from selenium.webdriver.common.keys import Keys

        lp_handle, h_handle = driver.execute_script(_DEEP + "return deep(document, '.noUi-handle', []);")
        lp_handle.send_keys(Keys.HOME)
        h_handle.send_keys(Keys.END)
        lax = _wait("the laxest gate", lambda: (r := driver.execute_script(_READOUT)) and r["tau_lp"] == "0.00"
                    and r["tau_h"] != "0.00" and r)
        expect(lax)
        assert lax["verdict"].startswith("Sure (U = 0)"), lax


def _quickstart_reply(book: Path):
    """Chapter 00's reply, from the call cache the chapter wrote (the same call, no new generation)."""
    import papermill as pm

    from lase_nb.confidence import measure
    from lase_nb.engine import Call
    from lase_nb.live import live_engine
    from lase_nb.prompts import solver_messages
    from lase_nb.strategies import default_examples
    from lase_nb.types import GenParams, Problem

    p = {k: v["default"] for k, v in pm.inspect_notebook(str(REPO / "notebooks" / "00_quickstart.ipynb")).items()}
    p = {k: (None if v == "None" else v.strip("\"'")) for k, v in p.items()}
    problem = Problem("quickstart", p["question"], gold="", kind=p["kind"])
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("LASE_CACHE", (book / "cache.path").read_text())
        engine = live_engine("local")
        messages = solver_messages(problem, examples=default_examples("local", None))
        (gen,) = engine.run([Call("solver", 0, messages, GenParams(max_tokens=160, top_logprobs=int(p["top_logprobs"])))])
    assert engine.stats.cache_hits == 1, "chapter 00's reply is not in its call cache: the test's call differs"
    return gen, measure(gen, problem.kind)


@pytest.mark.slow
def test_a_users_study_gets_the_same_working_panel(offline, tmp_path: Path, monkeypatch, capsys):
    """``lase-nb record`` over the OpenAI wire server, ``lase-nb notebooks 05 -p traces STUDY`` and
    ``lase-nb book`` from the user's folder: chapter 05's panel replays the user's study, in the
    book opened from disk with the network off."""
    from lase_nb import cli
    from lase_nb.datasets import load_dataset
    from tests.responders import student
    from tests.wire_servers import OpenAIWireServer

    monkeypatch.setenv("LASE_CACHE", str(tmp_path / "cache.sqlite"))
    monkeypatch.setenv("LASE_FIGURES_DIR", str(tmp_path / "figures"))
    monkeypatch.chdir(tmp_path)  # the user's folder: relative paths are read from here
    n = 20
    problems = load_dataset("arith_noop", None, n, 0) + load_dataset("arith_noop", None, 60, 1000)
    with OpenAIWireServer(student(problems)) as srv:
        rc = cli.main(["record", "--backend", "openai", "--base-url", srv.base_url, "--dataset", "arith-noop",
                       "--n", str(n), "--out", "studies/mine", "--label", "my model", "--quiet"])
        assert rc == 0, capsys.readouterr().err
    rc = cli.main(["notebooks", "05", "--out", "executed", "-p", "traces", "studies/mine", "-p", "studies", "None",
                   "-p", "interactive", "False"])
    assert rc == 0, capsys.readouterr().err
    assert cli.main(["book", "--executed", "executed", "--out", "book"]) == 0
    try:
        _check_frontier_page(offline, tmp_path / "book" / "05_pareto.html", tmp_path / "studies" / "mine",
                             tmp_path / "shots")
    except BaseException:
        offline.switch_to.default_content()
        offline.save_screenshot(str(tmp_path / "failure.png"))
        print(f"screenshot: {tmp_path / 'failure.png'}")
        raise
