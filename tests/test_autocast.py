"""lecture_utils.autocast against the dtypes torch.autocast's CPU list gives."""

import pytest
import torch

from lecture_utils.autocast import autocast_dtypes


def test_autocast_dtypes_on_cpu():
    dtypes = autocast_dtypes("cpu")
    assert dtypes["h = x @ w"] == torch.bfloat16
    assert dtypes["cross_entropy(h, target)"] == torch.float32
    assert dtypes["softmax(h, dtype=float32)"] == torch.float32
    assert dtypes["h + x"] == torch.float32


def test_autocast_dtypes_follow_the_requested_low_precision():
    assert autocast_dtypes("cpu", torch.float16)["h = x @ w"] == torch.float16


def test_autocast_dtypes_explain_that_autocast_lowers_precision():
    with pytest.raises(ValueError, match=r"bfloat16 or torch\.float16"):
        autocast_dtypes("cpu", torch.float32)
