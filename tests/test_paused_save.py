"""start_paused_save: a forked save stopped before its rename leaves a complete temporary, the old
checkpoint stays whole, and the start-up sweep keeps the temporary while the saver lives, not after."""

import os
import signal

import pytest
import torch

from lecture_utils.checkpointing import atomic_save, remove_stale_temporaries
from lecture_utils.paused_save import start_paused_save

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork and POSIX signals")


def test_a_paused_save_killed_leaves_a_complete_temporary_and_the_old_file(tmp_path):
    path = tmp_path / "ckpt.pt"
    atomic_save({"iteration": 1, "weights": torch.ones(1000)}, path)
    before = path.read_bytes()
    saver, temporary = start_paused_save({"iteration": 2, "weights": torch.full((1000,), 2.0)}, path)
    try:
        assert saver.is_alive() and temporary.parent == tmp_path
        assert remove_stale_temporaries(tmp_path) == []  # alive: its save is still in progress
    finally:
        saver.kill()
        saver.join()
    assert saver.exitcode == -signal.SIGKILL
    assert path.read_bytes() == before
    assert torch.load(temporary, weights_only=True)["iteration"] == 2  # only the rename was missing
    assert remove_stale_temporaries(tmp_path) == [temporary.name]
    assert os.listdir(tmp_path) == ["ckpt.pt"]


def test_a_save_that_fails_before_the_pause_raises(tmp_path):
    with pytest.raises(RuntimeError, match="paused save failed"):
        start_paused_save({"x": torch.ones(1)}, tmp_path / "no" / "such" / "dir" / "ckpt.pt", timeout_s=30)
