"""Pictures: every object kind draws a real PNG; malformed objects give a card, never raise."""
from __future__ import annotations

import itertools
import json
import logging
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from matplotlib.image import imread

from evoforge.viz import DRAWERS, KINDS, VizError, draw_object, plot_history
from evoforge.viz._canvas import new_figure
from evoforge.viz.geometry import convex_hull, smallest_triangle, _violators
from evoforge.viz.sequences import autoconvolution, convolve, envelope

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
HERE = Path(__file__).parent
REFERENCE_DIRS = [HERE / "data" / "reference", Path("/work/shared/reference")]
# reference file prefix -> the object_kind of its task
KIND_OF_PREFIX = {
    "ac1": "step_function", "ac2": "step_function", "ac3": "step_function",
    "cp26": "circles", "cp32": "circles", "cprect21": "circles_rect",
    "hadamard17": "matrix", "hadamard29": "matrix",
    "heilbronn_convex13": "points2d", "heilbronn_convex14": "points2d",
    "heilbronn_triangle11": "points_triangle", "kissing11": "integer_vectors",
    "maxmin14_3d": "points3d", "maxmin16_2d": "points2d", "sumdiff": "integer_set",
    "erdos": "overlap_step_function",
}

rng = np.random.default_rng(0)
SAMPLES = {
    "circles": [[0.25, 0.25, 0.25], [0.75, 0.25, 0.25], [0.5, 0.75, 0.25]],
    "circles_rect": {"circles": [[0.5, 0.5, 0.5], [1.5, 0.5, 0.5]], "width": 2.0, "height": 1.0},
    "step_function": rng.random(30000).tolist(),
    "matrix": np.sign(rng.standard_normal((17, 17))).tolist(),
    "points2d": rng.random((16, 2)).tolist(),
    "points3d": rng.random((14, 3)).tolist(),
    "points": rng.random((14, 3)).tolist(),
    "overlap_step_function": (rng.random(600) * 0.5 + 0.25).tolist(),
    "points_triangle": [[0.1, 0.05], [0.9, 0.05], [0.5, 0.8], [0.5, 0.3]],
    "integer_vectors": rng.integers(-3, 4, (50, 11)).tolist(),
    "integer_set": sorted({0, *rng.integers(0, 10**7, 3000).tolist()}),
    "generic": {"a": [1, 2, 3], "b": [[4.5], [6]]},
}


def _reference_files() -> list[Path]:
    """The largest reference construction of each task (the most demanding to draw)."""
    for folder in REFERENCE_DIRS:
        largest: dict[str, Path] = {}
        for path in sorted(folder.glob("*__*.json")):
            prefix = path.name.split("__")[0]
            if prefix not in largest or path.stat().st_size > largest[prefix].stat().st_size:
                largest[prefix] = path
        if largest:
            return sorted(largest.values())
    return []


def _assert_picture(path: Path, caplog: pytest.LogCaptureFixture, card: bool = False) -> None:
    assert path.read_bytes()[:8] == PNG_MAGIC
    pixels = imread(path)[..., :3]
    ink = float(np.mean(pixels.min(axis=-1) < 0.9))  # share of non-white pixels
    assert ink > 0.003, "picture is blank"
    carded = any("cannot draw" in r.getMessage() for r in caplog.records)
    assert carded == card, caplog.text


def test_every_kind_has_a_sample() -> None:
    assert set(KINDS) == set(SAMPLES)


@pytest.mark.parametrize("kind", sorted(SAMPLES))
def test_each_kind_draws(kind: str, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="evoforge.viz")
    out = tmp_path / f"{kind}.png"
    draw_object(kind, SAMPLES[kind], out, title=kind)
    _assert_picture(out, caplog)


@pytest.mark.parametrize("path", _reference_files(), ids=lambda p: p.stem)
def test_reference_constructions_draw(path: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="evoforge.viz")
    data = json.loads(path.read_text())["data"]
    out = tmp_path / "ref.png"
    draw_object(KIND_OF_PREFIX[path.name.split("__")[0]], data, out, title=path.stem)
    _assert_picture(out, caplog)


# bad for every kind
MALFORMED = [None, [], "circles", {"x": object()}, [[math.nan, 0.5, 0.1]], [[math.inf] * 3],
             [["a", "b", "c"]], [[1, 2, 3], [4, "x"]]]
# bad only for one kind (the shape is wrong for it)
MALFORMED_FOR = {
    "circles": [[[0.1, 0.2]], [[0.5, 0.5, -0.1]], [[1, 2, 3], [4, 5]]],
    "circles_rect": [[[0.1, 0.2, 0.3, 0.4]], {"circles": [[0.5, 0.5, -1.0]]}],
    "step_function": [[[1.0, 2.0], [3.0, 4.0]], {"heights": "flat"}],
    "overlap_step_function": [[[1.0, 2.0], [3.0, 4.0]]],
    "matrix": [[1.0, 2.0, 3.0], [[[1.0]]]],
    "points2d": [[[1.0, 2.0, 3.0]], [1.0, 2.0]],
    "points3d": [[[1.0, 2.0]]],
    "points_triangle": [[[0.1, 0.1, 0.1]]],
    "integer_vectors": [[1, 2, 3], [[1]]],
    "integer_set": [[0.5, 1.0], [[1, 2], [3, 4]]],
}
CASES = [(kind, obj) for kind in [*MALFORMED_FOR, "generic", "no-such-kind"] for obj in MALFORMED]
CASES += [(kind, obj) for kind, objs in MALFORMED_FOR.items() for obj in objs]


@pytest.mark.parametrize("kind,obj", CASES, ids=[f"{k}-{o!r:.40}" for k, o in CASES])
def test_drawers_refuse_malformed_objects(kind: str, obj: object) -> None:
    drawer = DRAWERS.get(kind, DRAWERS["generic"])
    # a ValueError with a one-line reason: draw_object shows it on a card instead of the object
    with pytest.raises(ValueError) as err:
        drawer(new_figure(), obj)
    assert str(err.value).strip() and "\n" not in str(err.value)


@pytest.mark.parametrize("kind,obj", [("circles", [[math.nan, 0.5, 0.1]]), ("step_function", "abc"),
                                      ("matrix", None), ("points3d", [[1.0, 2.0]]),
                                      ("no-such-kind", {"x": object()})])
def test_malformed_objects_give_a_card(kind: str, obj: object, tmp_path: Path,
                                       caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="evoforge.viz")
    out = tmp_path / "bad.png"
    draw_object(kind, obj, out)
    _assert_picture(out, caplog, card=True)


class _Hostile:
    def __repr__(self) -> str:
        raise RuntimeError("no repr for you")

    def __len__(self) -> int:
        raise RuntimeError("no len either")


def test_hostile_object_gives_a_card(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="evoforge.viz")
    draw_object("circles", [_Hostile()], tmp_path / "h.png")
    _assert_picture(tmp_path / "h.png", caplog, card=True)


def test_unknown_kind_draws_generic(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="evoforge.viz")
    draw_object("hexagons", [[1.0, 2.0], [3.0, 4.0]], tmp_path / "g.png")
    _assert_picture(tmp_path / "g.png", caplog)


def test_history_plot(tmp_path: Path) -> None:
    evals = list(range(1, 201))
    scores = [None if i % 3 == 0 else math.sin(i) + i / 100 for i in evals]
    best, top = [], -math.inf
    for s in scores:
        top = max(top, s) if s is not None else top
        best.append(top)
    out = tmp_path / "h.png"
    plot_history(evals, best, out, title="t", target=3.0, scores=scores)
    assert out.read_bytes()[:8] == PNG_MAGIC
    plot_history(evals, [-b for b in best], tmp_path / "m.png", direction="min")
    assert (tmp_path / "m.png").stat().st_size > 1000


def test_history_with_unaligned_scores_leaves_the_scatter_out(tmp_path: Path,
                                                               caplog: pytest.LogCaptureFixture) -> None:
    plot_history([1, 2, 3], [1.0, 2.0, 2.0], tmp_path / "u.png", scores=[1.0, 2.0])
    assert (tmp_path / "u.png").read_bytes()[:8] == PNG_MAGIC
    assert "scatter left out: 2 scores for 3 evaluations" in caplog.text


def test_history_without_valid_scores_draws_a_card(tmp_path: Path) -> None:
    plot_history([1, 2], [float("nan"), None], tmp_path / "e.png")  # type: ignore[list-item]
    plot_history([], [], tmp_path / "empty.png")
    assert (tmp_path / "empty.png").read_bytes()[:8] == PNG_MAGIC


@pytest.mark.parametrize("kwargs,message", [
    ({"evaluations": [1, 2], "best_scores": [1.0]}, "2 evaluations but 1 best scores"),
    ({"evaluations": [1], "best_scores": [1.0], "direction": "up"}, "direction must be"),
])
def test_history_bad_arguments(kwargs: dict, message: str, tmp_path: Path) -> None:
    with pytest.raises(VizError, match=message):
        plot_history(path=tmp_path / "x.png", **kwargs)


# --- the numbers the pictures print -------------------------------------------------------

def test_autoconvolution_matches_direct() -> None:
    a = rng.standard_normal(777)
    assert np.allclose(autoconvolution(a), np.convolve(a, a), atol=1e-9)


def test_overlap_curve_matches_the_reference_formula() -> None:
    h = rng.random(301)
    assert np.allclose(convolve(h, (1 - h)[::-1]), np.correlate(h, 1 - h, "full"), atol=1e-9)


def test_envelope_keeps_extremes() -> None:
    values = rng.standard_normal(12345)
    values[4321] = 50.0
    idx, lo, hi = envelope(values, bins=100)
    assert idx[0] == 0 and idx[-1] == len(values) and len(lo) == len(hi) == len(idx) - 1
    assert hi.max() == 50.0 and lo.min() == values.min()
    for k in (0, 37, len(lo) - 1):
        chunk = values[idx[k]:idx[k + 1]]
        assert lo[k] == chunk.min() and hi[k] == chunk.max()


def test_smallest_triangle_is_the_brute_force_minimum() -> None:
    pts = rng.random((12, 2))
    (i, j, k), area = smallest_triangle(pts)

    def tri(a: int, b: int, c: int) -> float:
        (x1, y1), (x2, y2), (x3, y3) = pts[a], pts[b], pts[c]
        return abs((x2 - x1) * (y3 - y1) - (y2 - y1) * (x3 - x1)) / 2

    assert area == pytest.approx(min(tri(*t) for t in itertools.combinations(range(12), 3)))
    assert area == pytest.approx(tri(i, j, k))


def test_convex_hull_of_square_with_inner_points() -> None:
    pts = np.array([[0, 0], [1, 0], [1, 1], [0, 1], [0.5, 0.5], [0.2, 0.7]], dtype=float)
    assert sorted(map(tuple, convex_hull(pts))) == [(0, 0), (0, 1), (1, 0), (1, 1)]


def test_violations_flag_overlap_and_outside() -> None:
    rows = np.array([[0.25, 0.25, 0.25], [0.75, 0.25, 0.25], [0.5, 0.8, 0.3]])
    assert _violators(rows, (0, 0, 1, 1)).tolist() == [False, False, True]  # third leaves the top
    rows[2] = [0.5, 0.6, 0.2]  # now inside, but overlaps both lower circles
    assert _violators(rows, (0, 0, 1, 1)).tolist() == [True, True, True]


def test_import_never_loads_pyplot() -> None:
    code = "import sys, evoforge.viz; print('matplotlib.pyplot' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_every_builtin_task_kind_has_a_drawer() -> None:
    from evoforge.tasks import builtin_names, get_task

    kinds = {name: get_task(name).object_kind for name in builtin_names()}
    assert kinds and {k for k in kinds.values() if k not in KINDS} == set(), kinds
