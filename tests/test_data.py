"""Token files, memory maps, the prefetcher and the synthetic Markov corpus, checked against hand-computed values.

get_batch itself is lecture_utils.batching's, tested in tests/test_batching.py.
"""

import math
import threading
import time

import numpy as np
import pytest
import torch

from lecture_utils.batching import get_batch
from lecture_utils.data import (
    Prefetcher,
    drawn_ahead,
    entropy_rate,
    load_tokens,
    random_transition_matrix,
    sample_markov_chain,
    save_tokens,
    token_dtype,
)


@pytest.mark.parametrize(
    ("vocab_size", "dtype"),
    [(64, np.uint16), (32_000, np.uint16), (2**16, np.uint16), (2**16 + 1, np.uint32), (128_256, np.uint32)],
)
def test_token_dtype_is_the_smallest_that_fits(vocab_size, dtype):
    assert token_dtype(vocab_size) == np.dtype(dtype)
    assert np.iinfo(token_dtype(vocab_size)).max >= vocab_size - 1


def test_token_dtype_rejects_a_vocabulary_beyond_uint32():
    with pytest.raises(ValueError, match="does not fit in uint32"):
        token_dtype(2**32 + 1)


def test_saved_tokens_are_a_real_npy_file_read_through_a_memmap(tmp_path):
    tokens = np.arange(1000) % 50
    path = save_tokens(tmp_path / "train.npy", tokens, vocab_size=50)
    with open(path, "rb") as f:
        assert np.lib.format.read_magic(f) == (1, 0)
        header_bytes = f.tell() + 2 + int.from_bytes(f.read(2), "little")
    assert path.stat().st_size == header_bytes + 2 * len(tokens)  # uint16: 2 bytes a token
    np.testing.assert_array_equal(np.load(path), tokens)  # plain np.load agrees: the format is standard
    data = load_tokens(path)
    assert isinstance(data, np.memmap) and data.dtype == np.uint16
    np.testing.assert_array_equal(data, tokens)
    with pytest.raises(ValueError, match="read-only"):
        data[0] = 1


def test_memmap_reads_the_file_when_indexed_not_when_opened(tmp_path):
    path = save_tokens(tmp_path / "tokens.npy", np.zeros(10_000, dtype=np.int64), vocab_size=10)
    data = load_tokens(path)
    offset = path.stat().st_size - 2 * 10_000 + 2 * 4_321
    with open(path, "r+b") as f:
        f.seek(offset)
        f.write(np.uint16(7).tobytes())
    assert data[4_321] == 7


def test_save_tokens_rejects_bad_input(tmp_path):
    with pytest.raises(ValueError, match=r"\.npy"):
        save_tokens(tmp_path / "train.bin", np.arange(4), vocab_size=4)
    with pytest.raises(ValueError, match=r"\[0, 4\)"):
        save_tokens(tmp_path / "train.npy", np.arange(5), vocab_size=4)


def test_load_tokens_rejects_a_2d_file(tmp_path):
    np.save(tmp_path / "grid.npy", np.zeros((3, 4), dtype=np.uint16))
    with pytest.raises(TypeError, match="1-D"):
        load_tokens(tmp_path / "grid.npy")


def test_transition_matrix_rows_are_distributions():
    p = random_transition_matrix(16, generator=torch.Generator().manual_seed(0))
    assert p.shape == (16, 16) and (p >= 0).all()
    torch.testing.assert_close(p.sum(1), torch.ones(16, dtype=p.dtype))
    assert torch.equal(p, random_transition_matrix(16, generator=torch.Generator().manual_seed(0)))


def test_markov_samples_follow_the_transition_matrix():
    p = random_transition_matrix(4, generator=torch.Generator().manual_seed(0), sharpness=1.0)
    tokens = sample_markov_chain(p, 200_000, generator=torch.Generator().manual_seed(1))
    counts = np.zeros((4, 4))
    np.add.at(counts, (tokens[:-1], tokens[1:]), 1)
    empirical = counts / counts.sum(1, keepdims=True)
    np.testing.assert_allclose(empirical, p.numpy(), atol=0.01)


def test_entropy_rate_matches_hand_computed_chains():
    assert entropy_rate(torch.full((8, 8), 1 / 8)) == pytest.approx(math.log(8))
    assert entropy_rate(torch.eye(5).roll(1, dims=1)) == pytest.approx(0.0, abs=1e-12)  # a cycle is certain
    # Two states: stay in 0 with 0.9; from 1 go either way. Stationary (5/6, 1/6).
    p = torch.tensor([[0.9, 0.1], [0.5, 0.5]], dtype=torch.float64)
    h0 = -(0.9 * math.log(0.9) + 0.1 * math.log(0.1))
    assert entropy_rate(p) == pytest.approx(5 / 6 * h0 + 1 / 6 * math.log(2))
    # Periodic: 0 -> 1 or 2 by a coin flip, both back to 0. Stationary (1/2, 1/4, 1/4).
    bipartite = torch.tensor([[0.0, 0.5, 0.5], [1.0, 0.0, 0.0], [1.0, 0.0, 0.0]], dtype=torch.float64)
    assert entropy_rate(bipartite) == pytest.approx(0.5 * math.log(2))


def test_entropy_rate_is_the_average_surprise_of_a_long_sample():
    p = random_transition_matrix(16, generator=torch.Generator().manual_seed(2))
    tokens = sample_markov_chain(p, 100_000, generator=torch.Generator().manual_seed(3))
    surprise = -np.log(p.numpy()[tokens[:-1], tokens[1:]]).mean()
    assert surprise == pytest.approx(entropy_rate(p), rel=0.02)


def test_markov_helpers_reject_rows_that_are_not_distributions():
    with pytest.raises(ValueError, match="probability distribution"):
        sample_markov_chain(torch.ones(3, 3), 10, generator=torch.Generator())
    with pytest.raises(ValueError, match="probability distribution"):
        entropy_rate(torch.full((2, 2), 0.6, dtype=torch.float64))


def prefetch_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("prefetch")]


def test_prefetcher_yields_a_plain_loops_batches_and_stops_its_thread():
    data = np.arange(500, dtype=np.uint16)
    plain_gen, ahead_gen = torch.Generator().manual_seed(5), torch.Generator().manual_seed(5)
    plain = [get_batch(data, 3, 6, "cpu", generator=plain_gen) for _ in range(7)]
    with Prefetcher(lambda: get_batch(data, 3, 6, "cpu", generator=ahead_gen), 7, "cpu") as batches:
        ahead = list(batches)
        assert len(prefetch_threads()) == 1
    assert len(ahead) == 7 and all(
        torch.equal(a, b) for pa, pb in zip(plain, ahead, strict=True) for a, b in zip(pa, pb, strict=True)
    )
    assert not prefetch_threads()
    # One batch ahead, no more: the generator stands where the plain loop's does.
    assert torch.equal(plain_gen.get_state(), ahead_gen.get_state())


def test_prefetcher_hides_a_slow_source_behind_the_step():
    latency, steps = 0.02, 8

    def slow_batch():
        time.sleep(latency)  # waiting, as on I/O: the CPU is free meanwhile
        return (torch.zeros(2),)

    with Prefetcher(slow_batch, steps, "cpu") as batches:
        for _ in batches:
            time.sleep(1.5 * latency)  # the step
    # A plain loop waits steps x latency; here only the first batch is not hidden.
    # The first fetch starts before the clock does, so on a busy machine its wait can fall well
    # short of one latency; the bound below only shows the wait is measured at all.
    assert 0.25 * latency <= batches.wait_seconds < 0.5 * steps * latency


def test_prefetcher_passes_on_errors_and_rejects_misuse():
    def broken():
        raise OSError("disk gone")

    with pytest.raises(OSError, match="disk gone"), Prefetcher(broken, 3, "cpu") as batches:
        list(batches)
    assert not prefetch_threads()
    with pytest.raises(RuntimeError, match="with"):
        list(Prefetcher(lambda: (torch.zeros(1),), 2, "cpu"))
    with Prefetcher(lambda: (torch.zeros(1),), 0, "cpu") as batches:
        assert list(batches) == [] and batches.wait_seconds == 0


def test_prefetcher_data_state_is_the_plain_loops_while_the_thread_draws_ahead():
    data = np.arange(1_000, dtype=np.uint16)
    plain = torch.Generator().manual_seed(3)
    for _ in range(4):
        get_batch(data, 2, 5, "cpu", generator=plain)
    ahead, made, fifth_made = torch.Generator().manual_seed(3), [], threading.Event()

    def produce():
        batch = get_batch(data, 2, 5, "cpu", generator=ahead)
        made.append(batch)
        if len(made) == 5:
            fifth_made.set()
        return batch

    with Prefetcher(produce, 10, "cpu", generator=ahead) as batches:
        for i, _ in enumerate(batches):
            if i == 3:  # four batches handed out: a checkpoint here must resume at the fifth
                break
        assert fifth_made.wait(30) and drawn_ahead(ahead)
        assert not torch.equal(ahead.get_state(), plain.get_state())  # the thread drew the fifth already
        assert torch.equal(batches.data_state(), plain.get_state())
    # Leaving the block undoes the draws of the batch never handed out.
    assert not drawn_ahead(ahead) and torch.equal(ahead.get_state(), plain.get_state())
    assert all(torch.equal(a, b) for a, b in zip(made[4], get_batch(data, 2, 5, "cpu", generator=ahead), strict=True))


def test_prefetcher_data_state_needs_its_generator_and_one_prefetcher_per_generator():
    with Prefetcher(lambda: (torch.zeros(1),), 2, "cpu") as batches, pytest.raises(RuntimeError, match="generator="):
        batches.data_state()
    shared = torch.Generator()
    with Prefetcher(lambda: (torch.zeros(1),), 2, "cpu", generator=shared):
        with (
            pytest.raises(RuntimeError, match="already drawing"),
            Prefetcher(lambda: (torch.zeros(1),), 2, "cpu", generator=shared),
        ):
            pass
    assert not drawn_ahead(shared)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_prefetcher_on_cuda_copies_on_a_side_stream():
    data = np.arange(1_000, dtype=np.uint16)
    cpu_gen, gpu_gen = torch.Generator().manual_seed(3), torch.Generator().manual_seed(3)
    with Prefetcher(lambda: get_batch(data, 4, 8, "cpu", generator=gpu_gen), 3, "cuda") as batches:
        for x, y in batches:
            x_cpu, y_cpu = get_batch(data, 4, 8, "cpu", generator=cpu_gen)
            assert x.device.type == "cuda" and torch.equal(x.cpu(), x_cpu) and torch.equal(y.cpu(), y_cpu)
