"""save_checkpoint / load_checkpoint through a path and a BytesIO: training resumes exactly; saves are atomic."""

import io
import os
import pickle
import tempfile
from pathlib import Path

import pytest
import torch
from torch import nn

from lecture_utils.adamw import AdamW
from lecture_utils.checkpointing import load_checkpoint, save_checkpoint
from lecture_utils.nn_basics import Linear

pytestmark = pytest.mark.usefixtures("one_thread")


def fresh(seed: int) -> tuple[nn.Module, AdamW]:
    torch.manual_seed(seed)
    model = nn.Sequential(Linear(5, 8), nn.Tanh(), Linear(8, 1))
    return model, AdamW(model.parameters(), lr=1e-2, weight_decay=0.1)


def steps(model: nn.Module, optimizer: AdamW, start: int, stop: int) -> None:
    """Iterations start .. stop - 1; batch i depends on i alone, so a resumed run sees the same data."""
    for i in range(start, stop):
        g = torch.Generator().manual_seed(i)
        x, y = torch.randn(4, 5, generator=g), torch.randn(4, 1, generator=g)
        optimizer.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        optimizer.step()


@pytest.mark.parametrize("target", ["str", "pathlike", "bytesio"])
def test_round_trip_resumes_training_exactly(target):
    model, optimizer = fresh(0)
    steps(model, optimizer, 0, 3)
    with tempfile.TemporaryDirectory() as tmp:
        out = {"str": os.path.join(tmp, "ckpt.pt"), "pathlike": Path(tmp) / "ckpt.pt", "bytesio": io.BytesIO()}[target]
        save_checkpoint(model, optimizer, 3, out)
        if target != "bytesio":
            assert os.listdir(tmp) == ["ckpt.pt"]  # no temporary file left beside it
        else:
            out.seek(0)
        steps(model, optimizer, 3, 6)  # the run that was never interrupted

        resumed, resumed_optimizer = fresh(1)  # different weights until the load
        assert load_checkpoint(out, resumed, resumed_optimizer) == 3
    assert resumed_optimizer.state[next(resumed.parameters())]["step"] == 3
    steps(resumed, resumed_optimizer, 3, 6)
    for p, q in zip(model.parameters(), resumed.parameters(), strict=True):
        assert torch.equal(p, q)


def test_a_failed_save_keeps_the_old_checkpoint_and_leaves_no_temporary(monkeypatch):
    model, optimizer = fresh(0)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "ckpt.pt")
        save_checkpoint(model, optimizer, 1, path)
        with open(path, "rb") as f:
            before = f.read()

        def crash(obj, f):
            f.write(b"half a checkpoint")
            raise OSError("disk full")

        monkeypatch.setattr(torch, "save", crash)
        with pytest.raises(OSError, match="disk full"):
            save_checkpoint(model, optimizer, 2, path)
        monkeypatch.undo()
        assert os.listdir(tmp) == ["ckpt.pt"]
        with open(path, "rb") as f:
            assert f.read() == before
        assert load_checkpoint(path, *fresh(1)) == 1


class NotATensor:
    """Any class: weights_only=True refuses to unpickle it."""


def test_load_refuses_arbitrary_objects_and_foreign_files():
    model, optimizer = fresh(0)
    unsafe = io.BytesIO()
    torch.save(
        {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "iteration": 0, "extra": NotATensor()},
        unsafe,
    )
    unsafe.seek(0)
    with pytest.raises(pickle.UnpicklingError):
        load_checkpoint(unsafe, model, optimizer)
    foreign = io.BytesIO()
    torch.save({"weights": torch.zeros(1)}, foreign)
    foreign.seek(0)
    with pytest.raises(ValueError, match="expected keys"):
        load_checkpoint(foreign, model, optimizer)


def test_saving_into_a_missing_directory_says_so():
    with pytest.raises(FileNotFoundError, match="does not exist"):
        save_checkpoint(*fresh(0), 1, "/no/such/directory/ckpt.pt")
