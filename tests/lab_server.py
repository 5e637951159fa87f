"""Start JupyterLab exactly as `make lab` does (same config file), on a free port, for the tests."""

from __future__ import annotations

import contextlib
import os
import secrets
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CONFIG = ROOT / "lab" / "jupyter_lab_config.py"


@dataclass(frozen=True)
class Lab:
    url: str  # http://127.0.0.1:PORT
    token: str

    def get(self, path: str) -> tuple[int, str, bytes]:
        """GET a server path with the token; (status, content type, body)."""
        request = urllib.request.Request(
            f"{self.url}/{path.lstrip('/')}", headers={"Authorization": f"token {self.token}"}
        )
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return response.status, response.headers.get("Content-Type", ""), response.read()
        except urllib.error.HTTPError as error:
            return error.code, error.headers.get("Content-Type", ""), b""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def running_lab(*extra_args: str, startup_s: float = 90) -> Iterator[Lab]:
    """A JupyterLab server from lab/jupyter_lab_config.py; stopped, kernels included, on exit.

    Jupyter's per-user state (runtime files, workspaces, user settings, IPython profile) and the
    checkpoints JupyterLab makes when it opens a notebook go to a temporary directory, so the test
    touches neither the checkout nor the user's home.
    """
    lab = Lab(f"http://127.0.0.1:{free_port()}", secrets.token_hex(16))
    with tempfile.TemporaryDirectory(prefix="lab-test-") as state:
        env = os.environ | {
            "JUPYTER_RUNTIME_DIR": f"{state}/runtime",
            "JUPYTERLAB_WORKSPACES_DIR": f"{state}/workspaces",
            "JUPYTERLAB_SETTINGS_DIR": f"{state}/settings",
            "IPYTHONDIR": f"{state}/ipython",
            "MPLCONFIGDIR": f"{state}/matplotlib",
            "CUDA_VISIBLE_DEVICES": "",  # the committed outputs are CPU outputs
        }
        command = [
            sys.executable,
            "-m",
            "jupyterlab",
            f"--config={CONFIG}",
            "--no-browser",
            f"--ServerApp.port={lab.url.rsplit(':', 1)[1]}",
            f"--IdentityProvider.token={lab.token}",
            f"--FileCheckpoints.checkpoint_dir={state}/checkpoints",
            *extra_args,
        ]
        with open(f"{state}/server.log", "wb") as log:
            server = subprocess.Popen(command, cwd=state, env=env, stdout=log, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + startup_s
            while True:
                if server.poll() is not None:
                    raise RuntimeError(
                        f"jupyter lab exited with {server.returncode}:\n" + Path(f"{state}/server.log").read_text()
                    )
                with contextlib.suppress(OSError):
                    if lab.get("api/status")[0] == 200:
                        break
                if time.monotonic() > deadline:
                    raise TimeoutError(f"jupyter lab did not answer within {startup_s} s")
                time.sleep(0.25)
            yield lab
        finally:
            server.terminate()  # SIGTERM: the server shuts its kernels down, then exits
            try:
                server.wait(timeout=20)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
