"""start_paused_save: a forked save stopped before its rename leaves a complete temporary, the old
checkpoint stays whole, and the start-up sweep keeps the temporary while the saver lives, not after."""

import multiprocessing
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


@pytest.mark.parametrize("device", ["meta", "cuda"])
def test_no_tensor_off_the_cpu_crosses_the_fork(tmp_path, device):
    # A checkpoint loaded without map_location on a GPU machine holds CUDA tensors, deep inside an
    # optimizer state; the forked child could not copy them. Refused before forking, with where.
    # No GPU here: a meta tensor stands for one, and a "cuda" device is faked on a meta tensor.
    tensor = torch.empty(3, device="meta")
    if device == "cuda":
        tensor = _FakeCuda(tensor)
    ckpt = {"model": {"w": torch.ones(3)}, "optimizer": {"state": {0: {"exp_avg": tensor}}}}
    children = len(multiprocessing.active_children())
    with pytest.raises(ValueError, match=r"\['optimizer'\]\['state'\]\[0\]\['exp_avg'\] is on .*map_location='cpu'"):
        start_paused_save(ckpt, tmp_path / "ckpt.pt")
    assert len(multiprocessing.active_children()) == children  # nothing was forked
    assert os.listdir(tmp_path) == []


class _FakeCuda(torch.Tensor):
    """A meta tensor that reports a CUDA device, as a checkpoint loaded on a GPU machine would."""

    @property
    def device(self) -> torch.device:
        return torch.device("cuda", 0)
