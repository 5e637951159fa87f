"""JupyterLab as `make lab` starts it. The one place its settings live: tests/test_lab.py starts
its server from this file too, so what the tests check is what a student gets."""

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
c = get_config()

# The server root is the repository, not notebooks/: the notebooks show figures from ../images,
# and a link that leaves the server root is a 404 in the browser.
c.ServerApp.root_dir = str(ROOT)
c.ServerApp.ip = "127.0.0.1"
c.LabApp.default_url = "/lab/tree/notebooks"
# overrides.json there turns autosave off, so running cells never rewrites the committed notes,
# and the news prompt off, so nothing pops up in front of a class. The slides (jupyterlab-rise,
# served at /rise/<path>) read the same settings: overrides.json also sets their look (no
# transition, slide numbers, the notebook's "Click to add a cell" bar hidden). page_config.json
# there disables jupyterlab-mathjax3, which RISE installs: it was built for JupyterLab 3, and the
# lab's own MathJax 3 renders the math, in the lab and on the slides.
c.LabApp.app_settings_dir = str(ROOT / "lab" / "settings")
# Quiet log: the last line `make lab` prints is the URL with its token.
c.Application.log_level = "WARN"
# Jupyter refuses to start as root unless told; containers and cloud machines often run as root.
c.ServerApp.allow_root = True
