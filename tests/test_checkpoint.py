"""Seeding, RNG states, atomic saves that survive a crash, and bit-exact resume for every optimizer."""

from __future__ import annotations

import os
import pickle
import random

import numpy as np
import pytest
import torch

from lecture_utils import checkpointing
from lecture_utils.checkpoint import (
    atomic_save,
    load_full_checkpoint,
    rng_state,
    save_full_checkpoint,
    seed_everything,
    set_rng_state,
)
from lecture_utils.data import random_transition_matrix, sample_markov_chain
from lecture_utils.optim import OPTIMIZERS
from lecture_utils.training import TrainConfig, init_weights_, train
from lecture_utils.transformer import TinyLM, TransformerConfig

VOCAB, CONTEXT = 16, 8
MODEL = TransformerConfig(vocab_size=VOCAB, max_seq_len=CONTEXT, d_model=16, n_layers=1, n_heads=2, d_ff=32)
LR = {"sgd": 0.5, "momentum": 0.1, "adagrad": 0.05, "rmsprop": 3e-3, "adam": 3e-3, "adamw": 3e-3}


pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def tokens():
    p = random_transition_matrix(VOCAB, generator=torch.Generator().manual_seed(0))
    return sample_markov_chain(p, 4_000, generator=torch.Generator().manual_seed(1))


def fresh(name: str, init_seed: int, data_seed: int):
    model = init_weights_(TinyLM(MODEL), torch.Generator().manual_seed(init_seed))
    return model, OPTIMIZERS[name](model.parameters(), lr=LR[name]), torch.Generator().manual_seed(data_seed)


def run(model, optimizer, generator, tokens, name, start, stop):
    config = TrainConfig(max_lr=LR[name], total_steps=8, batch_size=4, context_length=CONTEXT, warmup_steps=2)
    return train(model, optimizer, tokens, config, device="cpu", data_generator=generator, start_step=start, stop_step=stop)


def test_seed_everything_reproduces_every_global_stream():
    seed_everything(3)
    first = (random.random(), np.random.rand(), torch.rand(1))
    seed_everything(3)
    assert (random.random(), np.random.rand(), torch.rand(1)) == first
    with pytest.raises(ValueError, match="seed"):
        seed_everything(-1)
    with pytest.raises(ValueError, match=r"below 2\*\*32"):
        seed_everything(2**32)
    with pytest.raises(TypeError, match="seed must be an int"):
        seed_everything(1.0)


def test_rng_state_restores_every_stream():
    seed_everything(0)
    np.random.randn(1)  # leaves a cached Gaussian in NumPy's state: it must be saved too
    data = torch.Generator().manual_seed(5)
    state = rng_state(data)

    def draw():
        return (random.random(), random.gauss(0, 1), np.random.randn(3).tolist(), torch.rand(3).tolist(),
                torch.rand(3, generator=data).tolist())

    expected = draw()
    seed_everything(123)
    data.manual_seed(77)
    set_rng_state(state, data)
    assert draw() == expected


def test_rng_state_is_loadable_with_weights_only(tmp_path):
    atomic_save(rng_state(torch.Generator()), tmp_path / "rng.pt")
    loaded = torch.load(tmp_path / "rng.pt", weights_only=True)
    assert set(loaded) == {"python", "numpy", "torch_cpu", "torch_cuda", "data"}


def test_set_rng_state_rejects_an_incomplete_state():
    with pytest.raises(ValueError, match="missing"):
        set_rng_state({"python": None}, torch.Generator())


class PowerCut:
    """Pickling this raises, as a crash would part-way through writing a checkpoint."""

    def __reduce__(self):
        raise RuntimeError("power cut")


def checkpoint_files(directory):
    return sorted(p.name for p in directory.iterdir())


def save_first_checkpoint(tmp_path):
    model, optimizer, generator = fresh("adamw", 0, 1)
    path = save_full_checkpoint(tmp_path / "ckpt.pt", model=model, optimizer=optimizer, step=10, data_generator=generator)
    return path, path.read_bytes(), model


def assert_previous_checkpoint_intact(tmp_path, path, before, model):
    assert checkpoint_files(tmp_path) == ["ckpt.pt"]  # no temporary file left behind
    assert path.read_bytes() == before
    other, optimizer, generator = fresh("adamw", 9, 9)
    assert load_full_checkpoint(path, model=other, optimizer=optimizer, data_generator=generator) == 10
    assert all(torch.equal(a, b) for a, b in zip(model.parameters(), other.parameters()))


def test_a_save_interrupted_while_pickling_leaves_the_previous_checkpoint(tmp_path):
    path, before, model = save_first_checkpoint(tmp_path)
    with pytest.raises(RuntimeError, match="power cut"):
        atomic_save({"step": 20, "model": model.state_dict(), "crash": PowerCut()}, path)
    assert_previous_checkpoint_intact(tmp_path, path, before, model)


@pytest.mark.parametrize("failing", ["fsync", "replace"])
def test_a_save_interrupted_after_writing_leaves_the_previous_checkpoint(tmp_path, monkeypatch, failing):
    path, before, model = save_first_checkpoint(tmp_path)
    written = []

    def fail(*args):
        written.extend(p.stat().st_size for p in tmp_path.iterdir() if p.name != "ckpt.pt")
        raise OSError(f"{failing} failed")

    monkeypatch.setattr(checkpointing.os, failing, fail)  # the one atomic save lives there
    model2, optimizer, generator = fresh("adamw", 3, 3)
    with pytest.raises(OSError, match=f"{failing} failed"):
        save_full_checkpoint(path, model=model2, optimizer=optimizer, step=20, data_generator=generator)
    monkeypatch.undo()
    assert len(written) == 1 and written[0] > 0  # the new checkpoint was written in full, beside the old one
    assert_previous_checkpoint_intact(tmp_path, path, before, model)


def test_the_same_crash_without_atomic_save_destroys_the_checkpoint(tmp_path):
    # The failure the atomic save prevents is real: writing in place truncates the old file first.
    path, _, model = save_first_checkpoint(tmp_path)
    with pytest.raises(RuntimeError, match="power cut"):
        torch.save({"model": model.state_dict(), "crash": PowerCut()}, path)
    with pytest.raises(RuntimeError):
        torch.load(path, weights_only=True)


def test_load_refuses_pickles_that_run_code(tmp_path):
    class RunsCode:
        def __reduce__(self):
            return (os.getcwd, ())

    torch.save({"format_version": 1, "payload": RunsCode()}, tmp_path / "evil.pt")
    model, optimizer, generator = fresh("sgd", 0, 0)
    with pytest.raises(pickle.UnpicklingError, match="Weights only load failed"):
        load_full_checkpoint(tmp_path / "evil.pt", model=model, optimizer=optimizer, data_generator=generator)


def test_load_rejects_a_file_that_is_not_a_checkpoint(tmp_path):
    torch.save({"weights": torch.zeros(3)}, tmp_path / "other.pt")
    model, optimizer, generator = fresh("sgd", 0, 0)
    with pytest.raises(ValueError, match="not a checkpoint"):
        load_full_checkpoint(tmp_path / "other.pt", model=model, optimizer=optimizer, data_generator=generator)


def test_save_checkpoint_rejects_bad_arguments(tmp_path):
    model, optimizer, generator = fresh("sgd", 0, 0)
    with pytest.raises(ValueError, match="step"):
        save_full_checkpoint(tmp_path / "c.pt", model=model, optimizer=optimizer, step=-1, data_generator=generator)
    with pytest.raises(TypeError, match="optimizer must be a torch.optim.Optimizer"):
        save_full_checkpoint(tmp_path / "c.pt", model=model, optimizer=optimizer.state_dict(), step=1, data_generator=generator)
    with pytest.raises(TypeError, match="model must be an nn.Module"):
        load_full_checkpoint(tmp_path / "c.pt", model=model.state_dict(), optimizer=None, data_generator=None)
    assert checkpoint_files(tmp_path) == []


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_resume_is_bit_exact_for_every_optimizer(tmp_path, tokens, name):
    torch.manual_seed(0)
    straight, optimizer, generator = fresh(name, 0, 1)
    straight_log = run(straight, optimizer, generator, tokens, name, 0, 8)

    torch.manual_seed(0)
    model, optimizer, generator = fresh(name, 0, 1)
    first_log = run(model, optimizer, generator, tokens, name, 0, 4)
    path = save_full_checkpoint(tmp_path / "ckpt.pt", model=model, optimizer=optimizer, step=4, data_generator=generator)
    del model, optimizer, generator
    torch.manual_seed(1234)  # the loaded state, not this, must decide what follows
    resumed, optimizer, generator = fresh(name, 99, 99)
    step = load_full_checkpoint(path, model=resumed, optimizer=optimizer, data_generator=generator)
    resumed_log = run(resumed, optimizer, generator, tokens, name, step, 8)

    assert step == 4
    assert first_log.train_loss + resumed_log.train_loss == straight_log.train_loss
    for a, b in zip(straight.state_dict().values(), resumed.state_dict().values()):
        assert torch.equal(a, b)


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
@pytest.mark.parametrize("skip", ["optimizer", "rng"])
def test_resume_without_optimizer_or_rng_state_diverges(tmp_path, tokens, name, skip):
    straight, optimizer, generator = fresh(name, 0, 1)
    run(straight, optimizer, generator, tokens, name, 0, 8)

    model, optimizer, generator = fresh(name, 0, 1)
    run(model, optimizer, generator, tokens, name, 0, 4)
    path = save_full_checkpoint(tmp_path / "ckpt.pt", model=model, optimizer=optimizer, step=4, data_generator=generator)
    resumed, optimizer, generator = fresh(name, 0, 1)
    load_full_checkpoint(
        path, model=resumed,
        optimizer=None if skip == "optimizer" else optimizer,
        data_generator=None if skip == "rng" else generator,
    )
    run(resumed, optimizer, generator, tokens, name, 4, 8)
    same = all(torch.equal(a, b) for a, b in zip(straight.parameters(), resumed.parameters()))
    # Plain SGD keeps no state, so only for it does losing the optimizer state change nothing.
    assert same == (skip == "optimizer" and name == "sgd")


def test_the_assignments_load_checkpoint_reads_a_full_checkpoint(tmp_path, tokens):
    # The full format extends the assignment's: its loader restores model, optimizer and iteration.
    model, optimizer, generator = fresh("adamw", 0, 1)
    run(model, optimizer, generator, tokens, "adamw", 0, 3)
    path = save_full_checkpoint(tmp_path / "ckpt.pt", model=model, optimizer=optimizer, step=3, data_generator=generator)
    other, other_optimizer, _ = fresh("adamw", 9, 9)
    assert checkpointing.load_checkpoint(path, other, other_optimizer) == 3
    assert all(torch.equal(a, b) for a, b in zip(model.parameters(), other.parameters()))
    assert other_optimizer.state_dict()["state"][0]["step"] == 3
