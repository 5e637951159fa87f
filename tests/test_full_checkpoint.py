"""Seeding, RNG states, atomic saves that survive a crash, and bit-exact resume for every optimizer,
with a prefetching loop too; a resume under another config is refused, one in another environment warned."""

import os
import pickle
import random
import warnings

import numpy as np
import pytest
import torch

from lecture_utils import checkpointing
from lecture_utils.batching import get_batch
from lecture_utils.data import Prefetcher
from lecture_utils.full_checkpoint import (
    ResumeWarning,
    atomic_save,
    environment,
    load_full_checkpoint,
    rng_state,
    save_full_checkpoint,
    seed_everything,
    set_rng_state,
)
from lecture_utils.optim import OPTIMIZERS
from lecture_utils.resume import Run, resume, train_and_save
from lecture_utils.training import TrainConfig, train, train_step

CONTEXT = 8  # conftest's tiny_lm's
LR = {"sgd": 0.5, "momentum": 0.1, "adagrad": 0.05, "rmsprop": 3e-3, "adam": 3e-3, "adamw": 3e-3}


pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="session")
def tokens(markov_corpus):
    return markov_corpus[0]


@pytest.fixture(scope="session")
def fresh(tiny_lm):
    """fresh(optimizer name, init seed, data seed): a Run of a new model, its optimizer and its data stream."""

    def make(name: str, init_seed: int, data_seed: int) -> Run:
        model = tiny_lm(init_seed)
        return Run(model, OPTIMIZERS[name](model.parameters(), lr=LR[name]), torch.Generator().manual_seed(data_seed))

    return make


def eight_steps(name: str) -> TrainConfig:
    return TrainConfig(max_lr=LR[name], total_steps=8, batch_size=4, context_length=CONTEXT, warmup_steps=2)


def test_seed_everything_reproduces_every_global_stream():
    seed_everything(3)
    first = (random.random(), np.random.rand(), torch.rand(1))
    seed_everything(3)
    assert (random.random(), np.random.rand(), torch.rand(1)) == first
    with pytest.raises(ValueError, match=r"below 2\*\*32"):  # the one rule no annotation states: NumPy's 32 bits
        seed_everything(2**32)


def test_rng_state_restores_every_stream():
    seed_everything(0)
    np.random.randn(1)  # leaves a cached Gaussian in NumPy's state: it must be saved too
    data = torch.Generator().manual_seed(5)
    state = rng_state(data)

    def draw():
        return (
            random.random(),
            random.gauss(0, 1),
            np.random.randn(3).tolist(),
            torch.rand(3).tolist(),
            torch.rand(3, generator=data).tolist(),
        )

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
    """Pickling this raises: the save fails after its file is opened, before any tensor byte is written."""

    def __reduce__(self):
        raise RuntimeError("power cut")


def checkpoint_files(directory):
    return sorted(p.name for p in directory.iterdir())


def save(path, run: Run, step: int):
    return save_full_checkpoint(
        path, model=run.model, optimizer=run.optimizer, step=step, data_generator=run.data_generator
    )


def load(path, run: Run) -> int:
    return load_full_checkpoint(path, model=run.model, optimizer=run.optimizer, data_generator=run.data_generator)


def save_first_checkpoint(tmp_path, fresh):
    run = fresh("adamw", 0, 1)
    path = save(tmp_path / "ckpt.pt", run, step=10)
    return path, path.read_bytes(), run.model


def assert_previous_checkpoint_intact(tmp_path, fresh, path, before, model):
    assert checkpoint_files(tmp_path) == ["ckpt.pt"]  # no temporary file left behind
    assert path.read_bytes() == before
    other = fresh("adamw", 9, 9)
    assert load(path, other) == 10
    assert all(torch.equal(a, b) for a, b in zip(model.parameters(), other.model.parameters(), strict=True))


def test_a_save_interrupted_while_pickling_leaves_the_previous_checkpoint(tmp_path, fresh):
    path, before, model = save_first_checkpoint(tmp_path, fresh)
    with pytest.raises(RuntimeError, match="power cut"):
        atomic_save({"step": 20, "model": model.state_dict(), "crash": PowerCut()}, path)
    assert_previous_checkpoint_intact(tmp_path, fresh, path, before, model)


@pytest.mark.parametrize("failing", ["fsync", "replace"])
def test_a_save_interrupted_after_writing_leaves_the_previous_checkpoint(tmp_path, monkeypatch, failing, fresh):
    path, before, model = save_first_checkpoint(tmp_path, fresh)
    written = []

    def fail(*args):
        written.extend(p.stat().st_size for p in tmp_path.iterdir() if p.name != "ckpt.pt")
        raise OSError(f"{failing} failed")

    monkeypatch.setattr(checkpointing.os, failing, fail)  # the one atomic save lives there
    with pytest.raises(OSError, match=f"{failing} failed"):
        save(path, fresh("adamw", 3, 3), step=20)
    monkeypatch.undo()
    assert len(written) == 1 and written[0] > 0  # the new checkpoint was written in full, beside the old one
    assert_previous_checkpoint_intact(tmp_path, fresh, path, before, model)


def test_the_same_crash_without_atomic_save_destroys_the_checkpoint(tmp_path, fresh):
    # The failure the atomic save prevents is real: writing in place truncates the old file first.
    path, _, model = save_first_checkpoint(tmp_path, fresh)
    with pytest.raises(RuntimeError, match="power cut"):
        torch.save({"model": model.state_dict(), "crash": PowerCut()}, path)
    with pytest.raises(RuntimeError):
        torch.load(path, weights_only=True)


def test_load_refuses_pickles_that_run_code(tmp_path, fresh):
    class RunsCode:
        def __reduce__(self):
            return (os.getcwd, ())

    torch.save({"format_version": 1, "payload": RunsCode()}, tmp_path / "evil.pt")
    with pytest.raises(pickle.UnpicklingError, match="Weights only load failed"):
        load(tmp_path / "evil.pt", fresh("sgd", 0, 0))


def test_load_rejects_a_file_that_is_not_a_checkpoint_or_of_another_format(tmp_path, fresh):
    torch.save({"weights": torch.zeros(3)}, tmp_path / "other.pt")
    with pytest.raises(ValueError, match="not a checkpoint"):
        load(tmp_path / "other.pt", fresh("sgd", 0, 0))
    path = save(tmp_path / "ckpt.pt", fresh("sgd", 0, 0), step=1)
    torch.save(torch.load(path, weights_only=True) | {"format_version": 2}, path)
    with pytest.raises(ValueError, match="format 2 is not the supported"):
        load(path, fresh("sgd", 0, 0))


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
@pytest.mark.parametrize("leave_out", [None, "optimizer", "rng"])
def test_resume_is_bit_exact_with_everything_and_only_then(tmp_path, tokens, name, leave_out, fresh):
    torch.manual_seed(0)
    straight = fresh(name, 0, 1)
    straight_log = train(
        straight.model,
        straight.optimizer,
        tokens,
        eight_steps(name),
        device="cpu",
        data_generator=straight.data_generator,
    )
    torch.manual_seed(0)
    first_log = train_and_save(
        fresh(name, 0, 1), tokens, eight_steps(name), tmp_path / "ckpt.pt", device="cpu", stop_step=4
    )
    torch.manual_seed(1234)  # the loaded state, not this, must decide what follows
    resumed = fresh(name, 99, 99)  # another init and data seed, as a new process might pick
    step, resumed_log = resume(
        tmp_path / "ckpt.pt", resumed, tokens, eight_steps(name), device="cpu", leave_out=leave_out
    )

    assert step == 4 and resumed_log.step == [4, 5, 6, 7]
    same_losses = first_log.train_loss + resumed_log.train_loss == straight_log.train_loss
    same_weights = all(
        torch.equal(a, b)
        for a, b in zip(straight.model.state_dict().values(), resumed.model.state_dict().values(), strict=True)
    )
    # Plain SGD keeps no state, so only for it does losing the optimizer state change nothing.
    assert same_losses == same_weights == (leave_out is None or (leave_out == "optimizer" and name == "sgd"))


@pytest.mark.skipif(not hasattr(os, "lockf"), reason="the sweep needs POSIX locks")
def test_starting_or_resuming_a_run_sweeps_what_killed_saves_left(tmp_path, tokens, fresh):
    # Temporaries no process holds, of per-step names that no later save reuses, beside a file to keep.
    orphans = [".ckpt_2.pt.0123456789ab.tmp", ".ckpt_3.pt.ba9876543210.tmp"]
    for name in orphans:
        (tmp_path / name).write_bytes(b"a complete checkpoint, never renamed")
    (tmp_path / "notes.tmp").write_bytes(b"keep me")
    train_and_save(fresh("sgd", 0, 1), tokens, eight_steps("sgd"), tmp_path / "ckpt_4.pt", device="cpu", stop_step=4)
    assert sorted(os.listdir(tmp_path)) == ["ckpt_4.pt", "notes.tmp"]
    (tmp_path / orphans[0]).write_bytes(b"left by a save killed after the start")
    resume(tmp_path / "ckpt_4.pt", fresh("sgd", 9, 9), tokens, eight_steps("sgd"), device="cpu")
    assert sorted(os.listdir(tmp_path)) == ["ckpt_4.pt", "notes.tmp"]


def test_the_assignments_load_checkpoint_reads_a_full_checkpoint(tmp_path, tokens, fresh):
    # The full format extends the assignment's: its loader restores model, optimizer and iteration.
    run = fresh("adamw", 0, 1)
    train_and_save(run, tokens, eight_steps("adamw"), tmp_path / "ckpt.pt", device="cpu", stop_step=3)
    other = fresh("adamw", 9, 9)
    assert checkpointing.load_checkpoint(tmp_path / "ckpt.pt", other.model, other.optimizer) == 3
    assert all(torch.equal(a, b) for a, b in zip(run.model.parameters(), other.model.parameters(), strict=True))
    assert other.optimizer.state_dict()["state"][0]["step"] == 3


def rewrite(path, change):
    """Load the checkpoint at `path`, let change(checkpoint) edit it, and write it back: a saved value faked."""
    checkpoint = torch.load(path, weights_only=True)
    change(checkpoint)
    torch.save(checkpoint, path)


def test_a_load_in_the_saving_environment_is_silent(tmp_path, fresh):
    path = save(tmp_path / "ckpt.pt", fresh("adamw", 0, 1), step=3)
    assert torch.load(path, weights_only=True)["environment"] == environment()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert load(path, fresh("adamw", 9, 9)) == 3


@pytest.mark.parametrize(
    ("key", "other", "message"),
    [
        ("torch", "2.0.0", "torch version was '2.0.0'"),
        ("threads", 64, r"torch.get_num_threads\(\) was 64"),
        ("gpus", ["NVIDIA H100 80GB HBM3"] * 8, "GPUs was"),
    ],
)
def test_a_load_warns_for_each_part_of_the_environment_that_changed(tmp_path, fresh, key, other, message):
    path = save(tmp_path / "ckpt.pt", fresh("adamw", 0, 1), step=3)
    rewrite(path, lambda checkpoint: checkpoint["environment"].update({key: other}))
    with pytest.warns(ResumeWarning, match=message) as caught:
        load(path, fresh("adamw", 9, 9))
    assert len(caught) == 1  # one warning for the one part that differs


def test_gpu_streams_that_cannot_be_restored_are_warned_about_not_skipped_silently(tmp_path, fresh):
    gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    state = rng_state(torch.Generator())
    state["torch_cuda"] = [torch.get_rng_state()[:16].clone() for _ in range(gpus + 1)]  # one GPU more than here
    with pytest.warns(ResumeWarning, match=f"holds {gpus + 1} GPU random streams and this process sees {gpus}"):
        set_rng_state(state, torch.Generator())


def test_resume_refuses_another_config_but_not_other_evaluation_settings(tmp_path, tokens, fresh):
    config = eight_steps("adamw")
    train_and_save(fresh("adamw", 0, 1), tokens, config, tmp_path / "ckpt.pt", device="cpu", stop_step=4)
    saved = torch.load(tmp_path / "ckpt.pt", weights_only=True)["config"]
    assert saved["total_steps"] == 8 and saved["warmup_steps"] == 2 and saved["max_lr"] == LR["adamw"]
    longer = TrainConfig(max_lr=LR["adamw"], total_steps=16, batch_size=4, context_length=CONTEXT, warmup_steps=2)
    # What the refusal prevents: the same step under the longer schedule gets another rate.
    assert longer.lr(5) != config.lr(5)
    with pytest.raises(ValueError, match="total_steps: 8 saved, 16 now"):
        resume(tmp_path / "ckpt.pt", fresh("adamw", 9, 9), tokens, longer, device="cpu")
    evaluated_more_often = TrainConfig(**(config.trajectory_fields() | {"eval_every": 1}))
    step, log = resume(tmp_path / "ckpt.pt", fresh("adamw", 9, 9), tokens, evaluated_more_often, device="cpu")
    assert step == 4 and log.step == [4, 5, 6, 7]


def test_resume_refuses_a_checkpoint_saved_without_its_config(tmp_path, tokens, fresh):
    save(tmp_path / "ckpt.pt", fresh("adamw", 0, 1), step=4)
    with pytest.raises(ValueError, match="saved without a config"):
        resume(tmp_path / "ckpt.pt", fresh("adamw", 9, 9), tokens, eight_steps("adamw"), device="cpu")


def prefetched_steps(run: Run, tokens, config: TrainConfig, start: int, *, save_at=None, path=None) -> list[float]:
    """Steps start .. total_steps - 1 on batches a Prefetcher makes ahead; at save_at, save from inside the loop."""

    def produce():
        return get_batch(tokens, config.batch_size, config.context_length, "cpu", generator=run.data_generator)

    losses = []
    with Prefetcher(produce, config.total_steps - start, "cpu", generator=run.data_generator) as batches:
        for step, (x, y) in enumerate(batches, start):
            loss, _ = train_step(run.model, run.optimizer, x, y, lr=config.lr(step), max_grad_norm=config.max_grad_norm)
            losses.append(loss)
            if step + 1 == save_at:
                with pytest.raises(ValueError, match="draws ahead"):  # the generator alone is a batch ahead
                    save(path, run, step=save_at)
                save_full_checkpoint(
                    path,
                    model=run.model,
                    optimizer=run.optimizer,
                    step=save_at,
                    data_generator=run.data_generator,
                    config=config.trajectory_fields(),
                    data_state=batches.data_state(),
                )
                break
    return losses


def test_a_prefetching_run_resumes_bit_for_bit(tmp_path, tokens, fresh):
    config = eight_steps("adamw")
    torch.manual_seed(0)
    straight = fresh("adamw", 0, 1)
    straight_log = train(straight.model, straight.optimizer, tokens, config, device="cpu",
                         data_generator=straight.data_generator)  # fmt: skip
    first = prefetched_steps(fresh("adamw", 0, 1), tokens, config, 0, save_at=4, path=tmp_path / "ckpt.pt")
    resumed = fresh("adamw", 99, 99)
    assert load(tmp_path / "ckpt.pt", resumed) == 4
    rest = prefetched_steps(resumed, tokens, config, 4)
    assert first + rest == straight_log.train_loss  # the serial loop's losses, step for step
    assert all(
        torch.equal(a, b)
        for a, b in zip(straight.model.state_dict().values(), resumed.model.state_dict().values(), strict=True)
    )
