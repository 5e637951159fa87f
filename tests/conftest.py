import pytest
import torch


@pytest.fixture
def one_thread():
    """Run a test on one CPU thread: tiny models are fastest that way, and the machine may be shared."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
