"""The config's schedule against torch's cosine scheduler, one step against hand-computed clipping, the loop's log."""

import copy
import dataclasses
import math

import pytest
import torch
from torch import nn

from lecture_utils.models import truncated_normal_std
from lecture_utils.nn_basics import cross_entropy
from lecture_utils.training import TrainConfig, deterministic_algorithms, evaluate, train, train_step
from lecture_utils.transformer import TinyLM, init_weights_

VOCAB, CONTEXT = 16, 8  # the sizes of conftest's tiny_lm and markov_corpus


pytestmark = pytest.mark.usefixtures("one_thread")


def test_config_lr_is_the_assignments_schedule_at_hand_computed_points():
    config = TrainConfig(max_lr=1.0, total_steps=14, warmup_steps=4, min_lr_ratio=0.1)
    assert [config.lr(s) for s in range(5)] == [0.0, 0.25, 0.5, 0.75, 1.0]  # t / T_w, the peak at T_w
    assert config.lr(9) == pytest.approx(0.55)  # halfway down: (max + min) / 2
    assert config.lr(14) == pytest.approx(0.1)
    assert config.lr(1_000) == 0.1


def test_config_lr_decay_matches_torch_cosine_annealing():
    config = TrainConfig(max_lr=3e-3, total_steps=60, warmup_steps=10, min_lr_ratio=0.1)
    param = nn.Parameter(torch.zeros(1))
    optimizer = torch.optim.SGD([param], lr=config.max_lr)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=60 - 10, eta_min=3e-4)
    for step in range(10, 60 + 1):
        assert config.lr(step) == pytest.approx(scheduler.get_last_lr()[0], rel=1e-9, abs=1e-15)
        optimizer.step()
        scheduler.step()


def test_train_config_rejects_rules_between_fields():
    # Each field's own rule (a positive int, a positive float) is its annotation: tests/test_validation.py.
    with pytest.raises(ValueError, match="warmup_steps must lie in"):
        TrainConfig(max_lr=1e-3, total_steps=10, warmup_steps=11)
    with pytest.raises(ValueError, match="share of max_lr"):
        TrainConfig(max_lr=1e-3, total_steps=10, min_lr_ratio=1.5)
    assert TrainConfig(max_lr=1.0, total_steps=10, warmup_steps=0, min_lr_ratio=0.5).lr(10) == 0.5


def test_trajectory_fields_are_every_field_but_the_evaluation_settings():
    config = TrainConfig(max_lr=1e-3, total_steps=50, warmup_steps=5, eval_every=7, eval_seed=3)
    fields = config.trajectory_fields()
    assert set(fields) == {f.name for f in dataclasses.fields(TrainConfig)} - {
        "eval_every",
        "eval_batches",
        "eval_seed",
    }
    rebuilt = TrainConfig(**fields)  # the defaults fill in the evaluation settings
    assert [rebuilt.lr(s) for s in range(60)] == [config.lr(s) for s in range(60)]
    assert rebuilt.batch_size == config.batch_size and rebuilt.eval_every != config.eval_every


def test_init_weights_depends_on_its_generator_only(tiny_lm):
    torch.manual_seed(0)
    a = tiny_lm(seed=5)
    torch.manual_seed(1)  # a different global stream must not change the init
    b = tiny_lm(seed=5)
    c = tiny_lm(seed=6)
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters(), strict=True))
    assert not torch.equal(a.unembedding.weight, c.unembedding.weight)

    model = TinyLM(a.config)
    torch.manual_seed(0)
    init_weights_(model, torch.Generator().manual_seed(5))
    drawn_after_init = torch.rand(1)
    torch.manual_seed(0)
    assert torch.equal(torch.rand(1), drawn_after_init)  # init drew nothing from the global stream


def test_init_weights_draws_small_truncated_normals():
    layer = init_weights_(nn.Linear(256, 256), torch.Generator().manual_seed(0), std=0.02)
    assert layer.weight.std().item() == pytest.approx(0.02 * truncated_normal_std(3.0), rel=0.02)
    assert layer.weight.abs().max().item() <= 0.06
    assert torch.equal(layer.bias, torch.zeros(256))


def test_train_step_clips_then_applies_the_scheduled_lr(markov_corpus, tiny_lm):
    model = tiny_lm()
    reference = copy.deepcopy(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=123.0)
    x = torch.randint(0, VOCAB, (4, CONTEXT), generator=torch.Generator().manual_seed(0))
    y = torch.randint(0, VOCAB, (4, CONTEXT), generator=torch.Generator().manual_seed(1))

    cross_entropy(reference(x), y).backward()
    grads = [p.grad for p in reference.parameters()]
    norm = torch.linalg.vector_norm(torch.cat([g.flatten() for g in grads])).item()
    max_norm = norm / 4  # force clipping

    loss, reported = train_step(model, optimizer, x, y, lr=0.5, max_grad_norm=max_norm)
    assert reported == pytest.approx(norm, rel=1e-5)
    assert optimizer.param_groups[0]["lr"] == 0.5
    assert loss == pytest.approx(cross_entropy(reference(x), y).item())
    for new, old, g in zip(model.parameters(), reference.parameters(), grads, strict=True):
        torch.testing.assert_close(new, old - 0.5 * g * (max_norm / norm), rtol=1e-4, atol=1e-6)
    clipped = torch.linalg.vector_norm(torch.cat([p.grad.flatten() for p in model.parameters()]))
    assert clipped.item() == pytest.approx(max_norm, rel=1e-4)


def test_train_step_does_not_accumulate_gradients(tiny_lm):
    model = tiny_lm()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.0)
    x = torch.randint(0, VOCAB, (4, CONTEXT), generator=torch.Generator().manual_seed(0))
    train_step(model, optimizer, x, x, lr=0.0, max_grad_norm=1e9)
    once = [p.grad.clone() for p in model.parameters()]
    train_step(model, optimizer, x, x, lr=0.0, max_grad_norm=1e9)  # lr 0: same weights, same gradient
    for g, p in zip(once, model.parameters(), strict=True):
        assert torch.equal(g, p.grad)


def test_train_logs_the_schedule_the_optimizer_really_used(markov_corpus, tiny_lm):
    train_data, eval_data = markov_corpus
    config = TrainConfig(
        max_lr=1e-2, total_steps=30, batch_size=8, context_length=CONTEXT, warmup_steps=5, eval_every=10
    )
    model = tiny_lm()
    optimizer = torch.optim.AdamW(model.parameters(), lr=999.0)
    log = train(
        model,
        optimizer,
        train_data,
        config,
        device="cpu",
        data_generator=torch.Generator().manual_seed(0),
        eval_data=eval_data,
    )
    assert log.step == list(range(30))
    assert log.lr == [config.lr(s) for s in range(30)]
    assert (
        log.lr[0] == 0.0 and log.lr[5] == pytest.approx(1e-2) and log.lr[-1] < 2e-3
    )  # 0 at step 0, the peak at warmup_steps
    assert log.eval_step == [10, 20, 30]
    assert len(log.train_loss) == len(log.grad_norm) == 30 and len(log.eval_loss) == 3


def test_training_learns_and_learning_rates_matter(markov_corpus, tiny_lm):
    train_data, eval_data = markov_corpus
    logs = {}
    for lr in (1e-3, 3e-2):
        config = TrainConfig(
            max_lr=lr, total_steps=60, batch_size=8, context_length=CONTEXT, warmup_steps=5, eval_every=20
        )
        model = tiny_lm()
        logs[lr] = train(
            model,
            torch.optim.AdamW(model.parameters(), lr=lr),
            train_data,
            config,
            device="cpu",
            data_generator=torch.Generator().manual_seed(0),
            eval_data=eval_data,
        )
    # Small weights start near a uniform guess; a good rate gets well below it.
    assert logs[1e-3].train_loss[0] == pytest.approx(math.log(VOCAB), abs=0.05)
    assert logs[3e-2].eval_loss[-1] < math.log(VOCAB) - 0.5
    assert logs[3e-2].eval_loss[-1] < logs[1e-3].eval_loss[-1] - 0.2


def test_evaluation_is_repeatable_and_leaves_training_untouched(markov_corpus, tiny_lm):
    train_data, eval_data = markov_corpus
    config = TrainConfig(max_lr=1e-2, total_steps=12, batch_size=8, context_length=CONTEXT, eval_every=3)
    models = []
    for with_eval in (True, False):
        model = tiny_lm()
        train(
            model,
            torch.optim.AdamW(model.parameters(), lr=1e-2),
            train_data,
            config,
            device="cpu",
            data_generator=torch.Generator().manual_seed(0),
            eval_data=eval_data if with_eval else None,
        )
        models.append(model)
    for a, b in zip(models[0].parameters(), models[1].parameters(), strict=True):
        assert torch.equal(a, b)
    kwargs = dict(batch_size=8, context_length=CONTEXT, batches=3, device="cpu", seed=4)
    model = models[0].train()
    assert evaluate(model, eval_data, **kwargs) == evaluate(model, eval_data, **kwargs)
    assert model.training


def test_train_rejects_a_backwards_range(markov_corpus, tiny_lm):
    model = tiny_lm()
    with pytest.raises(ValueError, match="start_step"):
        train(
            model,
            torch.optim.SGD(model.parameters(), lr=0.1),
            markov_corpus[0],
            TrainConfig(max_lr=0.1, total_steps=5, warmup_steps=1),
            device="cpu",
            data_generator=torch.Generator(),
            start_step=4,
            stop_step=2,
        )


def test_deterministic_algorithms_sets_the_flags_and_restores_them_even_on_error():
    before = (torch.are_deterministic_algorithms_enabled(), torch.backends.cudnn.benchmark)
    with pytest.raises(KeyError), deterministic_algorithms("cpu"):
        assert torch.are_deterministic_algorithms_enabled() and torch.backends.cudnn.deterministic
        assert not torch.backends.cudnn.benchmark
        raise KeyError("stop half-way")
    assert (torch.are_deterministic_algorithms_enabled(), torch.backends.cudnn.benchmark) == before


def test_deterministic_algorithms_on_cuda_needs_the_cublas_setting(monkeypatch):
    monkeypatch.delenv("CUBLAS_WORKSPACE_CONFIG", raising=False)
    with pytest.raises(RuntimeError, match="CUBLAS_WORKSPACE_CONFIG"), deterministic_algorithms("cuda"):
        pass
    assert not torch.are_deterministic_algorithms_enabled()
