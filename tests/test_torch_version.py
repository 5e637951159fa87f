"""The torch the package runs on: an older one is refused at import; a CUDA build's GPU-less notice is quiet."""

import logging
import subprocess
import sys
from pathlib import Path

import torch

import lecture_utils


def import_with_torch_version(version: str) -> subprocess.CompletedProcess:
    """Import lecture_utils in a fresh interpreter whose torch reports `version`."""
    code = f"import torch; torch.__version__ = torch.torch_version.TorchVersion({version!r}); import lecture_utils"
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)


def test_an_older_torch_is_refused_with_the_release_needed():
    result = import_with_torch_version("2.12.1+cu126")
    assert result.returncode != 0
    assert "ImportError: lecture_utils needs torch 2.13 or newer" in result.stderr
    assert "this environment has torch 2.12.1+cu126" in result.stderr


def test_the_oldest_supported_release_imports():
    result = import_with_torch_version(f"{lecture_utils.OLDEST_TORCH}.0")
    assert result.returncode == 0, result.stderr


def test_the_declared_range_starts_at_the_checked_release():
    # pyproject.toml is what pip reads; the check above is what a conda or hand-made environment meets.
    pyproject = (Path(__file__).resolve().parent.parent / "pyproject.toml").read_text()
    assert f'"torch>={lecture_utils.OLDEST_TORCH},' in pyproject
    assert torch.torch_version.TorchVersion(torch.__version__) >= lecture_utils.OLDEST_TORCH


def test_only_the_no_cuda_runtime_notice_of_cpp_extension_is_dropped(caplog):
    logger = logging.getLogger("torch.utils.cpp_extension")
    with caplog.at_level(logging.WARNING, logger="torch.utils.cpp_extension"):
        logger.warning("No CUDA runtime is found, using CUDA_HOME='%s'", "/usr/local/cuda")
        logger.warning("Error checking compiler version for %s", "c++")
    assert [record.getMessage() for record in caplog.records] == ["Error checking compiler version for c++"]
