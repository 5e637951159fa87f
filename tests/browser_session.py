"""JupyterLab in headless Chromium for the browser tests: the lab `make lab` starts, and a driver on it.

Needs Debian's chromium and chromium-driver (`make browser`). Without them a browser test module
is skipped, unless REQUIRE_BROWSER_TEST=1 (set by .ci/run), where it fails instead.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from lab_server import Lab, running_lab
from selenium import webdriver  # in the test extra: a missing selenium is a broken install, not a skip

CHROMIUM, CHROMEDRIVER = shutil.which("chromium"), shutil.which("chromedriver")


def require_browser() -> None:
    """Skip the calling test module when chromium or chromedriver is missing, unless REQUIRE_BROWSER_TEST=1."""
    if not (CHROMIUM and CHROMEDRIVER) and os.environ.get("REQUIRE_BROWSER_TEST") != "1":
        pytest.skip("needs chromium and chromedriver: `make browser` installs them (Debian)", allow_module_level=True)


# The slide page (/rise/<path>) has no setting that exposes its app as the lab's page does, so the
# tests add a lab extension of one plugin that does: a module-federation container written by hand
# (what a built extension's remoteEntry.js provides: init, and get(module) -> factory), served from
# a temporary folder that only the test's server knows.
_HOOK_PACKAGE = {
    "name": "lecture-test-hook",
    "version": "0.1.0",
    "jupyterlab": {"extension": True, "_build": {"load": "static/remoteEntry.js", "extension": "./extension"}},
}
_HOOK_ENTRY = """
(window._JUPYTERLAB = window._JUPYTERLAB || {})['lecture-test-hook'] = {
  init: () => Promise.resolve(),
  get: () => Promise.resolve(() => ({
    __esModule: true,
    default: {id: 'lecture-test-hook:expose-app', autoStart: true, activate: app => { window.jupyterapp = app; }},
  })),
};
"""


def _write_hook(folder: Path) -> None:
    """Write the extension that exposes the app as window.jupyterapp into the lab extensions folder `folder`."""
    (folder / "lecture-test-hook" / "static").mkdir(parents=True)
    (folder / "lecture-test-hook" / "package.json").write_text(json.dumps(_HOOK_PACKAGE))
    (folder / "lecture-test-hook" / "static" / "remoteEntry.js").write_text(_HOOK_ENTRY)


@contextlib.contextmanager
def lab_in_chromium(
    *lab_args: str, script_timeout: float, window: tuple[int, int] = (1280, 800)
) -> Iterator[tuple[webdriver.Chrome, Lab]]:
    """(driver, lab): headless Chromium on JupyterLab's page, the app started; both stopped on exit.

    `lab_args` go to the server after the tests' only addition to `make lab`: the app object is
    exposed as window.jupyterapp, on the lab's page and on the slides' page, so a test can drive
    it. The browser profile is temporary.
    """
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    with (
        tempfile.TemporaryDirectory(prefix="chromium-") as profile,
        tempfile.TemporaryDirectory(prefix="lab-hook-") as hook,
    ):
        _write_hook(Path(hook))
        lab_args = (
            f"--LabApp.extra_labextensions_path={hook}",
            f"--RiseApp.extra_labextensions_path={hook}",
            *lab_args,
        )
        for flag in (
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-quic",
            f"--window-size={window[0]},{window[1]}",
            f"--user-data-dir={profile}",
        ):
            options.add_argument(flag)
        with running_lab("--LabApp.expose_app_in_browser=True", *lab_args) as lab:
            driver = webdriver.Chrome(options=options, service=webdriver.ChromeService(CHROMEDRIVER))
            try:
                driver.set_script_timeout(script_timeout)
                driver.get(f"{lab.url}/lab?reset&token={lab.token}")
                driver.execute_async_script("""
                    const done = arguments[arguments.length - 1];
                    const wait = () => window.jupyterapp ? window.jupyterapp.started.then(() => done(true))
                                                         : setTimeout(wait, 100);
                    wait();""")
                yield driver, lab
            finally:
                driver.quit()


def opening_notebook(then: str) -> str:
    """An async script: open the notebook at path arguments[0], wait for its kernel, show it, then run `then`.

    `then` is JavaScript with `app`, `panel`, `dirtyOnOpen` (whether opening marked the notebook
    modified) and `done` in scope; it must call done(...). A failure anywhere gives done({error}).
    """
    return (
        """
const [path, done] = [arguments[0], arguments[arguments.length - 1]];
(async () => {
  const app = window.jupyterapp;
  const panel = await app.commands.execute('docmanager:open', {path, factory: 'Notebook'});
  await panel.context.ready;
  await panel.sessionContext.ready;
  const dirtyOnOpen = panel.context.model.dirty;
  app.shell.activateById(panel.id);
"""
        + then
        + """
})().catch(error => done({error: String(error.stack || error)}));
"""
    )


# Shut the notebook's kernel down and drop its view without saving: the lab never writes the notebook.
CLOSE = """
const [id, done] = [arguments[0], arguments[arguments.length - 1]];
const panel = window.jupyterapp.shell.widgets('main').find(w => w.id === id);
panel.sessionContext.shutdown().then(() => { panel.dispose(); done(true); });
"""


def show_on(driver: webdriver.Chrome, screen: tuple[int, int], zoom: float) -> None:
    """Emulate a screen of `screen` device pixels at browser zoom `zoom`: the CSS viewport is screen / zoom."""
    width, height = (round(side / zoom) for side in screen)
    driver.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride",
        {"width": width, "height": height, "deviceScaleFactor": zoom, "mobile": False},
    )
