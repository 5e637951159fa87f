import os
import tempfile

import pytest

# The committed outputs are CPU outputs, so nbval's comparison must run on the CPU even where a GPU
# is: its kernels inherit this environment. `make gpu` sets LECTURE_TEST_CUDA=1 to run the unit
# tests' CUDA paths (it runs the notebooks on the GPU separately, without comparing outputs).
if os.environ.get("LECTURE_TEST_CUDA") != "1":
    os.environ["CUDA_VISIBLE_DEVICES"] = ""

# Imported after CUDA is hidden, so torch never sees the GPU in this process.
import torch

from lecture_utils.device import torch_threads

# torch makes a compile cache (/tmp/torchinductor_<user>) the first time FlopCounterMode, DDP or
# torch.compile runs. Keep it in a directory of this test run, which nbval's kernels and the lab
# server inherit, and remove it at the end: a test run leaves nothing behind.
_compile_cache = tempfile.TemporaryDirectory(prefix="torchinductor-tests-")
os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", _compile_cache.name)


def pytest_sessionfinish(session, exitstatus):
    _compile_cache.cleanup()


@pytest.fixture
def one_thread():
    """Run a test on one CPU thread: tiny models are fastest that way, and the machine may be shared."""
    with torch_threads(1):
        yield


@pytest.fixture
def two_threads():
    """Run a test with a two-thread pool, e.g. to check that forked ranks still work after it was used."""
    with torch_threads(2):
        yield


@pytest.fixture(scope="session")
def markov_corpus():
    """(train, eval) tokens of one 16-symbol Markov chain, 20,000 and 2,000 long: what the training tests learn."""
    from lecture_utils.data import random_transition_matrix, sample_markov_chain

    chain = random_transition_matrix(16, generator=torch.Generator().manual_seed(0), sharpness=3.0)
    draws = torch.Generator().manual_seed(1)
    return sample_markov_chain(chain, 20_000, generator=draws), sample_markov_chain(chain, 2_000, generator=draws)


@pytest.fixture(scope="session")
def tiny_lm():
    """tiny_lm(seed=0): a one-block TinyLM over those 16 symbols with a context of 8, initialised from `seed`."""
    from lecture_utils.transformer import TinyLM, TransformerConfig, init_weights_

    config = TransformerConfig(vocab_size=16, max_seq_len=8, d_model=16, n_layers=1, n_heads=2, d_ff=32)
    return lambda seed=0: init_weights_(TinyLM(config), torch.Generator().manual_seed(seed))


@pytest.fixture
def small_mlp():
    """small_mlp(): a 6 -> 8 -> 1 tanh MLP from torch.manual_seed(0), the same on every call (the optimizer tests)."""

    def make() -> torch.nn.Module:
        torch.manual_seed(0)
        return torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))

    return make


@pytest.fixture
def h100_bf16():
    """An 8192-cubed bf16 matmul record on an H100 SXM at 1.383 ms: the matmul and roofline tests' GPU example."""
    from lecture_utils.flops import matmul_flops
    from lecture_utils.matmul_benchmark import MatmulResult

    return MatmulResult(
        n=8192,
        dtype="bfloat16",
        precision="bf16",
        flops=matmul_flops((8192, 8192), (8192, 8192)),
        seconds=1.383e-3,
        peak_flops_per_s=989.5e12,
        peak_source="H100 SXM dense bf16, NVIDIA H100 Tensor Core GPU datasheet",
        peak_estimate=False,
    )
