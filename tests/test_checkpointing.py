"""save_checkpoint / load_checkpoint through a path and a BytesIO: training resumes exactly; saves are atomic,
survive a SIGKILL before the rename, a start-up sweep removes what such a kill leaves but not a live save's
temporary, and files follow the umask."""

import errno
import io
import os
import pickle
import select
import signal
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
import torch
from torch import nn

from lecture_utils import checkpointing
from lecture_utils.adamw import AdamW
from lecture_utils.checkpointing import atomic_save, load_checkpoint, remove_stale_temporaries, save_checkpoint
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


# A saving process that stops once its temporary file is written and fsynced, before the rename,
# and says so on stdout; the test then kills it with SIGKILL (no cleanup code of its runs) or lets it
# wait, alive, while a sweep runs.
PAUSED_SAVER = """
import sys, time
import torch
from lecture_utils.checkpointing import atomic_save

def pause(temporary):
    print(temporary, flush=True)
    time.sleep(60)

atomic_save({"iteration": 2, "weights": torch.full((10_000,), 2.0)}, sys.argv[1], _before_replace=pause)
"""


def start_paused_saver(path: Path) -> tuple[subprocess.Popen, Path]:
    """Run PAUSED_SAVER on `path` until it pauses before the rename; return it and its temporary."""
    child = subprocess.Popen(
        [sys.executable, "-c", PAUSED_SAVER, str(path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    ready, _, _ = select.select([child.stdout], [], [], 120)
    line = child.stdout.readline().strip() if ready else ""
    if not line:
        stop(child)
        raise AssertionError("the saver never reached the rename")
    return child, Path(line)


def stop(child: subprocess.Popen) -> int:
    """SIGKILL `child` (if still running), reap it, close its pipes; return its exit code."""
    child.kill()
    code = child.wait(timeout=60)
    child.stdout.close()
    child.stderr.close()
    return code


needs_signals_and_locks = pytest.mark.skipif(
    not hasattr(signal, "SIGKILL") or os.name != "posix", reason="needs POSIX signals and file locks"
)


@needs_signals_and_locks
def test_a_killed_save_keeps_the_old_checkpoint_and_the_start_up_sweep_removes_its_temporary(tmp_path):
    path = tmp_path / "ckpt_20.pt"  # a per-step name: no later save has it
    atomic_save({"iteration": 1, "weights": torch.ones(10_000)}, path)
    before = path.read_bytes()

    child, temporary = start_paused_saver(path)
    assert stop(child) == -signal.SIGKILL

    assert path.read_bytes() == before
    old = torch.load(path, weights_only=True)
    assert old["iteration"] == 1 and torch.equal(old["weights"], torch.ones(10_000))
    assert sorted(os.listdir(tmp_path)) == sorted(["ckpt_20.pt", temporary.name]) and temporary.parent == tmp_path
    assert temporary.name.startswith(".ckpt_20.pt.") and temporary.name.endswith(".tmp")
    assert torch.load(temporary, weights_only=True)["iteration"] == 2  # complete: only the rename was missing

    save_checkpoint(*fresh(0), 30, tmp_path / "ckpt_30.pt")  # the next save, under another name,
    assert temporary.exists()  # does not sweep: only start-up does
    # Beside it, files that are not atomic_save's temporaries: look-alikes, a backup, notes.
    others = [".ckpt.pt.notes.tmp", ".ckpt.pt.0123456789AB.tmp", ".ckpt.pt.012345.tmp", "ckpt.pt.bak", ".x.tmp"]
    for name in others:
        (tmp_path / name).write_bytes(b"keep me")
    assert remove_stale_temporaries(tmp_path, rank=1) == []  # only rank 0 sweeps
    assert temporary.exists()
    assert remove_stale_temporaries(tmp_path) == [temporary.name]  # no process group: rank 0
    assert sorted(os.listdir(tmp_path)) == sorted(["ckpt_20.pt", "ckpt_30.pt", *others])
    assert path.read_bytes() == before


@needs_signals_and_locks
def test_the_sweep_keeps_the_temporary_of_a_save_still_running(tmp_path):
    path = tmp_path / "ckpt.pt"
    child, temporary = start_paused_saver(path)  # alive, paused before its rename
    try:
        assert remove_stale_temporaries(tmp_path) == []
        assert temporary.exists()
    finally:
        stop(child)
    assert remove_stale_temporaries(tmp_path) == [temporary.name]  # now its writer is dead


def test_the_sweep_reads_the_rank_of_the_process_group(tmp_path, monkeypatch):
    (tmp_path / ".ckpt.pt.0123456789ab.tmp").write_bytes(b"left by a killed save")
    monkeypatch.setattr(checkpointing.dist, "is_initialized", lambda: True)
    monkeypatch.setattr(checkpointing.dist, "get_rank", lambda: 3)
    assert remove_stale_temporaries(tmp_path) == []
    monkeypatch.setattr(checkpointing.dist, "get_rank", lambda: 0)
    expected = [".ckpt.pt.0123456789ab.tmp"] if hasattr(os, "lockf") else []
    assert remove_stale_temporaries(tmp_path) == expected


@pytest.mark.skipif(os.name != "posix", reason="POSIX permission bits")
@pytest.mark.parametrize(("umask", "mode"), [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_a_checkpoint_gets_the_permissions_open_would_give_it(tmp_path, umask, mode):
    previous = os.umask(umask)  # the process's umask: set for this test only
    try:
        save_checkpoint(*fresh(0), 1, tmp_path / "ckpt.pt")
        (tmp_path / "plain").write_bytes(b"")  # the reference: a file made by open()
    finally:
        os.umask(previous)
    assert stat.S_IMODE((tmp_path / "ckpt.pt").stat().st_mode) == mode
    assert stat.S_IMODE((tmp_path / "plain").stat().st_mode) == mode


@pytest.mark.skipif(not hasattr(os, "lockf"), reason="needs os.lockf")
@pytest.mark.parametrize("code", ["ENOLCK", "ENOSYS", "EOPNOTSUPP"])
def test_where_the_file_system_refuses_locks_saves_go_on_and_the_sweep_removes_nothing(tmp_path, monkeypatch, code):
    def refuse(fd, command, length):
        raise OSError(getattr(errno, code), os.strerror(getattr(errno, code)))

    monkeypatch.setattr(os, "lockf", refuse)  # as NFS without lockd, Lustre noflock, some FUSE
    save_checkpoint(*fresh(0), 7, tmp_path / "ckpt.pt")
    assert load_checkpoint(tmp_path / "ckpt.pt", *fresh(1)) == 7
    left = tmp_path / ".ckpt.pt.0123456789ab.tmp"  # live or stale: without a lock nobody can tell
    left.write_bytes(b"maybe a save still running")
    assert remove_stale_temporaries(tmp_path) == []
    assert left.exists()


@pytest.mark.skipif(not hasattr(os, "lockf"), reason="needs os.lockf")
def test_a_temporary_gone_before_its_removal_is_skipped(tmp_path, monkeypatch):
    names = [".a.pt.0123456789ab.tmp", ".b.pt.0123456789ab.tmp"]
    for name in names:
        (tmp_path / name).write_bytes(b"left by a killed save")
    real_lock = checkpointing._lock

    def another_sweeper_first(fd, blocking):  # the other sweeper removes .a between our open and lock
        (tmp_path / names[0]).unlink(missing_ok=True)
        return real_lock(fd, blocking)

    monkeypatch.setattr(checkpointing, "_lock", another_sweeper_first)
    real_listdir = os.listdir
    monkeypatch.setattr(os, "listdir", lambda d: [*real_listdir(d), ".c.pt.0123456789ab.tmp"])  # gone at open
    assert remove_stale_temporaries(tmp_path) == [names[1]]
    assert real_listdir(tmp_path) == []


def test_before_the_process_group_the_sweep_reads_torchruns_rank(tmp_path, monkeypatch):
    (tmp_path / ".ckpt.pt.0123456789ab.tmp").write_bytes(b"left by a killed save")
    monkeypatch.setenv("RANK", "2")
    assert remove_stale_temporaries(tmp_path) == []
    assert (tmp_path / ".ckpt.pt.0123456789ab.tmp").exists()
    monkeypatch.setenv("RANK", "0")
    expected = [".ckpt.pt.0123456789ab.tmp"] if hasattr(os, "lockf") else []
    assert remove_stale_temporaries(tmp_path) == expected
