"""Verifiers reject bad objects with one clear reason, accept the forms programs really return,
and never raise."""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from evoforge.tasks import get_task
from evoforge.tasks.verifiers.autocorr import DIRECT_MAX, ac1_value, convolve

REF = Path(__file__).parent / "data" / "reference"


def ref_data(name: str):
    return json.loads((REF / name).read_text())["data"]


CP26 = ref_data("cp26__alphaevolve_v2.json")


def verify(task: str, obj):
    return get_task(task).verify(obj)


def rejected(task: str, obj, *words: str):
    v = verify(task, obj)
    assert not v.valid and v.score is None, v
    for w in words:
        assert w in v.reason, v.reason
    assert "\n" not in v.reason
    return v


# ---- circle packing -------------------------------------------------------------------------

def test_cp_accepts_rows_arrays_dicts_and_pairs():
    rows = np.array(CP26)
    expected = verify("circle-packing-26", CP26).score
    assert verify("circle-packing-26", rows).score == expected
    assert verify("circle-packing-26", {"centers": rows[:, :2].tolist(), "radii": rows[:, 2].tolist()}).score == expected
    assert verify("circle-packing-26", [rows[:, :2].tolist(), rows[:, 2].tolist()]).score == expected
    assert verify("circle-packing-26", {"data": CP26}).score == expected


def test_cp_rejects_nan_even_where_comparisons_would_pass():
    rows = np.array(CP26)
    rows[3, 0] = np.nan
    rejected("circle-packing-26", rows, "entry (3, 0)", "NaN")
    rows = np.array(CP26)
    rows[5, 2] = np.inf
    rejected("circle-packing-26-t", rows, "inf")


def test_cp_rejects_negative_radius():
    rows = np.array(CP26)
    rows[4, 2] = -0.01
    rejected("circle-packing-26", rows, "circle 4", "negative radius")


def test_cp_rejects_overlap_with_indices_and_amount():
    rows = np.array(CP26)
    rows[0, 2] += 1e-3
    v = rejected("circle-packing-26", rows, "overlaps", "circle 0")
    assert v.metrics["min_pair_slack"] < 0


def test_cp_rejects_outside_square_and_tolerance_boundary():
    rows = np.array(CP26)
    rows[:, 0] += 1e-3  # shift right: something sticks out of the right side
    rejected("circle-packing-26", rows, "right side")
    rows = np.array(CP26)
    rows[:, 0] += 5e-7  # within the 1e-6 tolerance
    assert not verify("circle-packing-26", rows).valid
    v = verify("circle-packing-26-t", rows)
    assert v.valid and v.metrics["strict_sum_after_shrink"] < v.score


@pytest.mark.parametrize(
    "obj, words",
    [
        (CP26[:25], ["26 rows", "(25, 3)"]),
        ([row[:2] for row in CP26], ["(26, 2)"]),
        ("circles", ["expected numbers"]),
        (None, ["None"]),
        (3.0, ["(26, 3)"]),
        ([[0.1, 0.1, "a"]] * 26, ["numbers"]),
        ([[0.1, 0.1]] * 25 + [[0.1, 0.1, 0.1]], ["rectangular"]),
        ({"centres": [], "radius": []}, ["'centers' and 'radii'"]),
        ([[True, False, True]] * 26, ["booleans"]),
        ([[1 + 1j, 0.1, 0.1]] * 26, ["complex"]),
    ],
)
def test_cp_rejects_wrong_shapes_and_types(obj, words):
    rejected("circle-packing-26", obj, *words)


def test_cp_rectangle_forms():
    v1 = ref_data("cprect21__alphaevolve_v1.json")
    assert verify("circle-packing-rect-21", v1).valid
    v2 = ref_data("cprect21__alphaevolve_v2.json")
    too_wide = dict(v2, width=v2["width"] + 1e-3)
    rejected("circle-packing-rect-21", too_wide, "exceeds 2")
    big = np.array(v1)
    big[:, :2] *= 1.01  # stretch the bounding box
    rejected("circle-packing-rect-21", big, "bounding box")


# ---- step functions ---------------------------------------------------------------------------

def test_ac1_ac2_reject_negative_heights_ac3_allows_them():
    a = [1.0, 2.0, -0.5, 1.0]
    rejected("ac1", a, "height 2", "negative")
    rejected("ac2", a, "negative")
    assert verify("ac3", a).valid


def test_autocorrelation_rejects_degenerate_inputs():
    rejected("ac1", [0.0, 0.0], "all zero")
    rejected("ac3", [1.0, -1.0], "sum of heights is zero")
    rejected("ac1", [], "at least 1")
    rejected("ac2", [[1.0, 2.0], [3.0, 4.0]], "flat list")
    rejected("ac1", [1.0, float("nan")], "NaN")
    rejected("ac1", {"heights": [1, 2]}, "expected numbers")


def test_autocorrelation_is_scale_free_no_underflow_cheat():
    a = np.array(ref_data("ac1__alphaevolve_v1.json"))
    base = verify("ac1", a).score
    for scale in (1e-300, 1e-200, 1e200):
        assert verify("ac1", a * scale).score == pytest.approx(base, rel=1e-15)
    assert verify("ac1", [1, 2, 3]).valid  # integers are fine


def test_fft_and_direct_convolution_agree_across_the_switch():
    rng = np.random.default_rng(1)
    for n in (DIRECT_MAX - 1, DIRECT_MAX + 1, 3 * DIRECT_MAX):
        a = rng.random(n)
        fast, exact = convolve(a, a), np.convolve(a, a)
        assert np.max(np.abs(fast - exact)) <= 1e-13 * np.max(exact)
    a = rng.random(5000)
    assert ac1_value(a) == pytest.approx(2 * 5000 * np.convolve(a, a).max() / a.sum() ** 2, rel=1e-13)


def test_erdos_constraints():
    n = 10
    rejected("erdos-min-overlap", [0.5] * (n - 1) + [0.6], "sum(h)", "n/2")
    rejected("erdos-min-overlap", [1.2, 0.8] * 5, "h[0]", "above 1")
    rejected("erdos-min-overlap", [-0.2, 1.2] * 5, "below 0")
    v = verify("erdos-min-overlap", [0.5] * n)
    assert v.valid and v.score == pytest.approx(0.5)


# ---- Hadamard ---------------------------------------------------------------------------------

H29 = ref_data("hadamard29__qr_circulant_start.json")


def test_hadamard_entries_and_size():
    m = np.array(H29)
    m[2, 3] = 0
    rejected("hadamard-29", m, "(2, 3)", "+1 or -1")
    m = np.array(H29, dtype=float)
    m[0, 0] = 0.999
    rejected("hadamard-29", m, "+1 or -1")
    rejected("hadamard-29", np.array(H29)[:28, :28], "(29, 29)")
    assert verify("hadamard-29", np.array(H29, dtype=float)).score == pytest.approx(49 / 342, rel=1e-15)


def test_hadamard_exact_determinant_of_singular_and_known_matrices():
    ones = np.ones((29, 29), dtype=int)
    v = verify("hadamard-29", ones)
    assert v.valid and v.score == 0.0 and v.metrics["abs_det"] == "0"
    from evoforge.tasks.verifiers.hadamard import bareiss_det

    rng = np.random.default_rng(3)
    for n in (1, 2, 5, 8):
        m = rng.choice([-1, 1], size=(n, n))
        assert bareiss_det(m.tolist()) == round(np.linalg.det(m))
    h4 = [[1, 1, 1, 1], [1, -1, 1, -1], [1, 1, -1, -1], [1, -1, -1, 1]]
    assert abs(bareiss_det(h4)) == 16


# ---- kissing ----------------------------------------------------------------------------------

def test_kissing_rejections_and_exactness():
    pts = ref_data("kissing11__alphaevolve.json")
    rejected("kissing-11", pts + [[0] * 11], "origin")
    rejected("kissing-11", pts + [pts[0]], "coincide")
    rejected("kissing-11", [[1.5] + [0] * 10], "not an exact integer")
    rejected("kissing-11", [[1, 0]], "11 integer coordinates")
    # move one point by 1 in one coordinate of ~1e13: exact arithmetic still decides correctly
    close = [list(p) for p in pts]
    i, j = 0, 1
    close[j] = [a + (b - a) // 10**6 for a, b in zip(close[i], close[j])]  # far too close to point i
    rejected("kissing-11", close, "too close")


def test_kissing_d11_roots_valid():
    v = verify("kissing-11", [[1, 1] + [0] * 9, [1, -1] + [0] * 9, [-1, 1] + [0] * 9, [-1, -1] + [0] * 9])
    assert v.valid and v.score == 4.0


# ---- point sets -------------------------------------------------------------------------------

def test_heilbronn_and_distance_ratio_rejections():
    pts = ref_data("heilbronn_triangle11__alphaevolve.json")
    bad = [list(p) for p in pts]
    bad[0] = [0.5, 0.9]  # above the apex
    rejected("heilbronn-triangle-11", bad, "point 0", "outside")
    rejected("heilbronn-triangle-11", pts[:10], "11 points")
    rejected("heilbronn-convex-13", [[t, 2 * t] for t in range(13)], "collinear")
    v = verify("heilbronn-convex-13", [[0, 0], [0, 0]] + [[t, t * t] for t in range(2, 13)])
    assert v.valid and v.score == 0.0  # a repeated point makes a zero-area triangle
    pts = ref_data("maxmin16_2d__alphaevolve.json")
    rejected("min-distance-ratio-16-2d", pts[:15] + [pts[0]], "coincide")
    rejected("min-distance-ratio-14-3d", pts[:14], "dimension 3")


# ---- sums and differences ---------------------------------------------------------------------

def test_sums_differences_rules():
    rejected("sums-differences", [1, 2, 5], "0 must be in U")
    rejected("sums-differences", [0, -1, 3], "negative")
    rejected("sums-differences", [0, 1, 1, 3], "repeated")
    rejected("sums-differences", [0, 1.5], "integer")
    rejected("sums-differences", [0], "positive element")
    v = verify("sums-differences", [0, 1, 3])
    assert v.metrics["sums"] == 6 and v.metrics["differences"] == 7
    assert v.score == pytest.approx(1 + math.log(7 / 6) / math.log(7), rel=1e-15)


@pytest.mark.parametrize("long_runs", [1, 64, 10**9])  # run by run / mixed / all pairs expanded at once
def test_sums_differences_sweep_matches_fft(monkeypatch, long_runs):
    from evoforge.tasks.verifiers import sumdiff

    rng = np.random.default_rng(5)
    u = np.unique(np.concatenate([[0], rng.integers(1, 3000, size=300), 2900 + np.arange(80)]))
    fft = sumdiff._count_by_fft(u)
    monkeypatch.setattr(sumdiff, "WINDOW", 777)  # several windows
    monkeypatch.setattr(sumdiff, "LONG_RUNS", long_runs)
    sweep = sumdiff._count_by_sweep(u, negate=False), sumdiff._count_by_sweep(u, negate=True)
    brute = len({a + b for a in u for b in u}), len({a - b for a in u for b in u})
    assert fft == sweep == brute


def test_verifier_never_raises_on_garbage():
    garbage = [object(), {"x": 1}, [[[]]], "nan", float("nan"), [None], b"\x00", 10**400]
    for name in ("circle-packing-26", "ac1", "ac3", "hadamard-29", "erdos-min-overlap", "kissing-11",
                 "heilbronn-convex-14", "min-distance-ratio-14-3d", "sums-differences", "circle-packing-rect-21"):
        for g in garbage:
            v = get_task(name).verify(g)
            assert not v.valid and v.reason, (name, g)
