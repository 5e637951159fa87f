import os
import tempfile

import pytest
import torch

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
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
