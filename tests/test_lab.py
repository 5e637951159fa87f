"""The lab `make lab` starts serves what the notebooks show, and never saves over them by itself."""

from __future__ import annotations

import json
import posixpath
import re
from pathlib import Path

import nbformat
import pytest
from lab_server import CONFIG, ROOT, running_lab

NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
IMAGE_REF = re.compile(r"!\[[^\]]*\]\(([^)\s]+)\)|<img[^>]+src=\"([^\"]+)\"")


@pytest.fixture(scope="module")
def lab():
    with running_lab() as server:
        yield server


def image_refs(path: Path) -> list[str]:
    nb = nbformat.read(path, as_version=4)
    refs = [a or b for cell in nb.cells if cell.cell_type == "markdown" for a, b in IMAGE_REF.findall(cell.source)]
    return [ref for ref in refs if not ref.startswith(("http:", "https:", "data:", "attachment:"))]


def test_make_lab_and_the_readme_use_the_one_config_file():
    relative = CONFIG.relative_to(ROOT).as_posix()
    makefile = (ROOT / "Makefile").read_text()
    lab_recipe = makefile.split("\nlab:", 1)[1].split("\n\n", 1)[0]
    assert f"--config={relative}" in lab_recipe, "make lab must start JupyterLab from the config file the tests use"
    assert f"jupyter lab --config={relative}" in (ROOT / "README.md").read_text(), "the README's conda command"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_every_image_a_notebook_shows_is_served(lab, path):
    for ref in image_refs(path):
        # JupyterLab resolves a markdown link against the notebook's directory within the server root.
        served = posixpath.normpath(posixpath.join(path.parent.relative_to(ROOT).as_posix(), ref))
        assert not served.startswith("../"), f"{path.name}: {ref} lies outside the server root"
        status, content_type, body = lab.get(f"files/{served}")
        assert status == 200, f"{path.name}: {ref} is a {status} in the lab"
        assert content_type.startswith("image/"), f"{path.name}: {ref} served as {content_type}"
        assert body == (ROOT / served).read_bytes()


def test_autosave_is_off_in_this_lab(lab):
    status, _, body = lab.get("lab/api/settings/@jupyterlab/docmanager-extension:plugin")
    assert status == 200
    plugin = json.loads(body)
    # overrides.json changes the schema's default; a student's own setting could still turn it on.
    assert plugin["schema"]["properties"]["autosave"]["default"] is False
    assert plugin["settings"].get("autosave", False) is False


def test_the_notebooks_carry_the_metadata_jupyterlab_writes_on_open():
    for path in NOTEBOOKS:
        kernelspec = nbformat.read(path, as_version=4).metadata.get("kernelspec", {})
        assert kernelspec.get("name") == "python3", f"{path.name}: opening it would mark it modified"


def test_the_lab_serves_each_notebook_as_slides(lab):
    # jupyterlab-rise's page: the slideshow of the notebook at that path, run live in this server
    for path in NOTEBOOKS:
        status, content_type, body = lab.get(f"rise/{path.relative_to(ROOT).as_posix()}")
        assert status == 200 and content_type.startswith("text/html"), f"{path.name}: {status} {content_type}"
        assert b"jupyter-config-data" in body


def test_the_slides_read_this_labs_settings(lab):
    status, _, body = lab.get("lab/api/settings/jupyterlab-rise:plugin")
    assert status == 200, "jupyterlab-rise is not installed: `make setup` installs the lab extra"
    properties = json.loads(body)["schema"]["properties"]
    assert properties["transition"]["default"] == "none"
    assert "jp-Notebook-footer" in properties["overlay"]["default"]


def test_the_lab_leaves_the_jupyterlab_3_mathjax_extension_off(lab):
    # RISE pulls in jupyterlab-mathjax3, built for JupyterLab 3; the lab's own MathJax 3 renders math
    status, _, body = lab.get("lab")
    assert status == 200
    assert b'"disabledExtensions": ["@jupyterlab/mathjax3-extension"]' in body
