import matplotlib.pyplot as plt
import pytest
from matplotlib.figure import Figure

from lecture_utils.figures import FIGURES, draw_all, resolve
from lecture_utils.plotting import save_figure


@pytest.mark.parametrize("name", sorted(FIGURES))
def test_every_registered_figure_draws(name):
    fig = resolve(FIGURES[name])()
    assert isinstance(fig, Figure)
    assert fig.axes, f"{name} drew no axes"
    plt.close(fig)


def test_every_committed_image_has_a_generator(tmp_path):
    from pathlib import Path

    images = {p.stem for p in (Path(__file__).resolve().parent.parent / "images").glob("*.png")}
    assert images <= set(FIGURES), f"images without a generator: {sorted(images - set(FIGURES))}"


def test_draw_all_writes_pngs_and_the_bytes_repeat(tmp_path):
    first = draw_all(tmp_path / "a", ["training_days"])
    second = draw_all(tmp_path / "b", ["training_days"])
    assert first[0].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert first[0].read_bytes() == second[0].read_bytes()


def test_bad_names_and_suffixes_are_rejected(tmp_path):
    with pytest.raises(ValueError, match="unknown figure"):
        draw_all(tmp_path, ["no_such_figure"])
    fig = plt.figure()
    with pytest.raises(ValueError, match=".png"):
        save_figure(fig, tmp_path / "figure.jpg")
    plt.close(fig)
