"""The built-in tasks: AlphaEvolve's / ThetaEvolve's problems with exact verifiers.

Every value below carries its source; exact definitions and the reference constructions are in
tests/data/reference/ (README there) and docs/TASKS.md. ``initial_score`` is the score of the
shipped initial program (tests re-run each program and check it).
"""
from __future__ import annotations

import dataclasses
import functools
import re
from dataclasses import dataclass, field
from importlib import resources
from typing import Any, Callable

from evoforge.tasks.base import Direction, KnownValue, Shaping, Task, Verdict
from evoforge.tasks.verifiers import autocorr, circles, hadamard, kissing, points, sumdiff

MAX, MIN = Direction.MAX, Direction.MIN
AE_V1 = "AlphaEvolve (2025), google-deepmind/alphaevolve_results"
AE_V2 = "AlphaEvolve v2 (Nov 2025), google-deepmind/alphaevolve_repository_of_problems"
THETA = "ThetaEvolve (2025), ypwang61/ThetaEvolve"
TOGETHER = "Together AI / EinsteinArena (2026), togethercomputer/EinsteinArena-new-SOTA"


def load_program(filename: str, **params: int) -> str:
    """Text of a shipped initial program, with ``NAME = value`` parameter lines substituted."""
    text = resources.files("evoforge.tasks.programs").joinpath(filename).read_text(encoding="utf-8")
    for name, value in params.items():
        text, count = re.subn(rf"^{name} = \d+", f"{name} = {value}", text, count=1, flags=re.M)
        if count != 1:
            raise RuntimeError(f"program {filename} has no parameter line '{name} = ...'")
    return text


@dataclass(frozen=True)
class Spec:
    """What it takes to build one built-in Task (programs are read lazily)."""

    name: str
    title: str
    direction: Direction
    verify: Callable[[Any], Verdict]
    object_kind: str
    program: str
    program_params: dict[str, int]
    returns: str  # what solve() must return
    rules: str  # validity constraints
    score: str  # exact scoring formula
    hints: str
    initial_score: float
    initial_note: str
    best_human: KnownValue | None
    best_ai: KnownValue | None
    time_limit: float = 70.0
    program_limit: float = 60.0
    memory_mb: int = 2048
    shaping: Shaping | None = None
    params: dict[str, Any] = field(default_factory=dict)

    def description(self) -> str:
        goal = "maximise" if self.direction is MAX else "minimise"
        known = []
        for label, kv in (("best human", self.best_human), ("best AI", self.best_ai)):
            if kv is not None:
                known.append(f"{label} {kv.value:.10g} ({kv.source})")
        return "\n".join(
            [
                f"{self.title}. Goal: {goal} the score.",
                f"Your program must define `solve()` taking no arguments; it returns {self.returns}",
                f"Valid object: {self.rules}",
                f"Score ({goal}): {self.score}",
                f"Limits: solve() must finish within {self.program_limit:g} s (hard limit {self.time_limit:g} s) "
                f"and {self.memory_mb} MB; use only numpy and scipy. Only code between the EVOLVE-BLOCK markers may change.",
                f"Known values: {'; '.join(known) or 'none'}. Initial program: {self.initial_score:.10g} ({self.initial_note}).",
                f"Hints: {self.hints}",
            ]
        )

    def build(self) -> Task:
        return Task(
            name=self.name,
            description=self.description(),
            initial_program=load_program(self.program, **self.program_params),
            direction=self.direction,
            verify=self.verify,
            entry="solve",
            object_kind=self.object_kind,
            best_human=self.best_human,
            best_ai=self.best_ai,
            initial_score=self.initial_score,
            time_limit=self.time_limit,
            memory_mb=self.memory_mb,
            evolve_blocks=True,
            shaping=self.shaping,
            params=dict(self.params),
        )


def _cp_square(n: int, tol: float) -> Spec:
    strict = tol == 0.0
    name = f"circle-packing-{n}" + ("" if strict else "-t")
    rule_tol = "with zero tolerance (AlphaEvolve's strict rules)" if strict else f"each inequality relaxed by {tol:g} (OpenEvolve/ThetaEvolve CirclePacking-T)"
    human = {26: KnownValue(2.634, "previous record quoted by AlphaEvolve (2025)"), 32: KnownValue(2.936, "previous record quoted by AlphaEvolve (2025)")}[n]
    if n == 26 and not strict:
        ai = KnownValue(2.6359857, f"{THETA}, 8B w/ RL, valid only with tolerance (worst overlap 3.1e-7)")
    elif n == 26:
        ai = KnownValue(2.6359830849, f"{AE_V2}, stored construction (ThetaEvolve-Formal: 2.6359830774)")
    else:
        ai = KnownValue(2.9395727712, f"{AE_V2}, stored construction (TTT-Discover reports 2.939572)")
    if n == 26 and not strict:
        program, params, init, note = "circle_packing.py", {}, 0.9597642169962064, "ThetaEvolve's / OpenEvolve's start, published 0.9597642"
    elif n == 26:
        program, params, init, note = "circle_packing_strict.py", {"N": 26}, 0.9597642169952467, "ThetaEvolve's start (0.9597642) with radii shrunk by 1e-12 to be strictly valid"
    else:
        program, params, init, note = "circle_packing_strict.py", {"N": 32}, 0.9597642169952467, "the same rings; the 7 extra circles start with radius 0"
    metrics_note = "" if strict else " Feedback metrics include the strict score after the uniform radius shrink that removes all violations."
    return Spec(
        name=name,
        title=f"Circle packing: {n} disjoint circles in the unit square, maximise the sum of radii ({'strict' if strict else f'tolerance {tol:g}'})",
        direction=MAX,
        verify=functools.partial(circles.verify_circles_in_square, n=n, tol=tol),
        object_kind="circles",
        program=program,
        program_params=params,
        returns=f"the packing as {n} rows [x, y, r] (a numpy array of shape ({n}, 3) or nested lists); "
        '{"centers": (n,2), "radii": (n,)} or a pair [centers, radii] are accepted too.',
        rules=f"r >= 0, all numbers finite, x - r >= 0, x + r <= 1, y - r >= 0, y + r <= 1 and "
        f"sqrt((x_i-x_j)^2 + (y_i-y_j)^2) >= r_i + r_j for every pair, {rule_tol}.",
        score="sum of the radii (recomputed from the object; any value the program prints is ignored)." + metrics_note,
        hints="Good packings mix circle sizes and are far from symmetric; optimise centres and radii jointly "
        "(e.g. scipy.optimize with the pair and wall constraints, or a linear program for the radii given the centres), "
        "and start from several layouts.",
        initial_score=init,
        initial_note=note,
        best_human=human,
        best_ai=ai,
        params={"n": n, "tolerance": tol},
    )


STEPS_NOTE = "step heights a_0..a_{n-1}: a list or 1-d numpy array of n floats, the values of f on n equal steps of [-1/4, 1/4]"
CONV_NOTE = "c = np.convolve(a, a) (length 2n-1); f*f is piecewise linear through the knots c/(2n), so the formula is exact"


def _specs() -> list[Spec]:
    specs = [_cp_square(26, 0.0), _cp_square(32, 0.0), _cp_square(26, 1e-6), _cp_square(32, 1e-6)]
    specs.append(Spec(
        name="ac1", title="First autocorrelation inequality (upper bound on C1, the Sidon-set constant)", direction=MIN,
        verify=autocorr.verify_ac1, object_kind="step_function", program="ac1_naive.py", program_params={},
        returns=STEPS_NOTE + ".",
        rules="1 <= n <= 2,000,000, every height finite and >= 0, sum of heights > 0.",
        score=f"2n * max(c) / sum(a)^2 with {CONV_NOTE}; it equals max(f*f) / (integral f)^2. Scale-invariant.",
        hints="Known good functions have thousands of steps with a rough, spiky profile; gradient methods on "
        "max(c) (or a smoothed max / LP over a few peaks) and upsampling a good short function both work.",
        initial_score=1.9793932183224265, initial_note="a gentle ramp on 24 steps, every height written out (ours; the paper's start is ac1-paper)",
        best_human=KnownValue(1.5097201507, "Matolcsi & Vinuesa (2010), 208 steps (paper: 1.50992)"),
        best_ai=KnownValue(1.50286286, "Together AI (2026); public 30000-step TTT-Discover vector scores 1.5028629"),
        time_limit=1150, program_limit=1000, memory_mb=4096,
    ))
    specs.append(Spec(
        name="ac2", title="Second autocorrelation inequality (lower bound on C2)", direction=MAX,
        verify=autocorr.verify_ac2, object_kind="step_function", program="ac2.py", program_params={},
        returns=STEPS_NOTE + ".",
        rules="1 <= n <= 2,000,000, every height finite and >= 0, not all zero.",
        score=f"||f*f||_2^2 / (||f*f||_1 * ||f*f||_inf) computed exactly from the knots: with y = [0, c, 0], "
        f"L2sq = sum(y_k^2 + y_k*y_(k+1) + y_(k+1)^2)/3, L1 = sum(c), Linf = max(c), score = L2sq / (L1 * Linf); {CONV_NOTE}.",
        hints="The best functions have tens of thousands of steps and a comb-like structure; Adam on the "
        "exact objective with non-negativity projection, then upsampling, is a strong baseline.",
        initial_score=0.721637715636041, initial_note="a raised-cosine bump on 600 steps (ours; ThetaEvolve's optimiser start scores 0.9055)",
        best_human=KnownValue(0.8892, "Matolcsi & Vinuesa (2010), as quoted by AlphaEvolve"),
        best_ai=KnownValue(0.961206, "Together AI (2026); ImprovEvolve claims 0.96258 without a public construction"),
        time_limit=350, program_limit=300, memory_mb=4096,
        shaping=Shaping(lower=0.91, upper=0.96, alpha=1.0),
    ))
    specs.append(Spec(
        name="ac3", title="Third autocorrelation inequality, ThetaEvolve's corrected form C3' (abs inside the max)", direction=MIN,
        verify=functools.partial(autocorr.verify_ac3, formula="max_of_abs"), object_kind="step_function",
        program="ac3.py", program_params={},
        returns=STEPS_NOTE + "; heights may be negative.",
        rules="1 <= n <= 2,000,000, every height finite, sum of heights != 0.",
        score=f"2n * max(|c|) / sum(a)^2 with {CONV_NOTE}. Note: AlphaEvolve-v1's code used |2n max(c) / sum(a)^2| "
        "(abs outside), a different problem whose values (1.4556, 1.4546) are not comparable; the metric other_formula reports it.",
        hints="Negative lobes can cancel peaks of f*f but also create deep negative peaks, which count here. "
        "Window * oscillation (e.g. 1 + cos) shapes and local search on the largest |c| entries work well.",
        initial_score=3.158550461356723, initial_note="ThetaEvolve's start, published 3.1586",
        best_human=KnownValue(1.4993, "Matolcsi & Vinuesa, as quoted by AlphaEvolve (C3')"),
        best_ai=KnownValue(1.4687620697, f"{AE_V1}, Dec 2025 C3' construction (ThetaEvolve best 1.4930)"),
        shaping=Shaping(lower=1.4557, upper=3.2, alpha=3.0),
    ))
    specs.append(Spec(
        name="hadamard-29", title="Maximal determinant of a 29 x 29 matrix with entries +-1", direction=MAX,
        verify=functools.partial(hadamard.verify_hadamard, n=29), object_kind="matrix",
        program="hadamard_naive.py", program_params={"N": 29},
        returns="the matrix as 29 rows of 29 entries, each exactly +1 or -1 (nested lists or a numpy array).",
        rules="shape exactly (29, 29); every entry exactly +1 or -1.",
        score="|det H| / (2^28 * 7^12 * 342), |det H| computed exactly in integers (Bareiss). The normaliser "
        "follows ThetaEvolve ('following previous work'); the best known |det| is 2^28 * 7^12 * 320, i.e. 320/342 = 0.935673.",
        hints="|det| is divisible by 2^28; good matrices come from block/circulant constructions (e.g. two-circulant "
        "cores), then row/column sign flips and swaps with an exact or incremental determinant.",
        initial_score=5.703759142816491e-12, initial_note="the circulant 2I - J, its first row written as parities (ours; the paper's start is hadamard-29-paper)",
        best_human=KnownValue(320 / 342, "Orrick et al., maximal-determinant tables (|det| = 2^28 * 7^12 * 320)"),
        best_ai=KnownValue(0.5764, f"{THETA}, 8B w/ RL"),
        time_limit=350, program_limit=300,
    ))
    specs.append(Spec(
        name="erdos-min-overlap", title="Erdős minimum overlap problem (upper bound on M)", direction=MIN,
        verify=autocorr.verify_erdos, object_kind="overlap_step_function", program="erdos.py", program_params={},
        returns="step values h_0..h_{n-1}: a list or 1-d array of n floats, the values of h on n equal steps of [0, 2].",
        rules="every h_j in [0, 1], finite, and sum(h) = n/2 (integral of h = 1) to 1e-9 relative; "
        "the score uses h exactly as given (no renormalisation).",
        score="max_k sum_j h_j (1 - h_(j+k)) * 2/n, i.e. max(np.correlate(h, 1 - h, 'full')) * 2/n.",
        hints="Good functions are symmetric, close to 0 or 1 near the ends and oscillate in the middle; "
        "optimise the max correlation by LP/gradient steps and keep the sum constraint by projection.",
        initial_score=0.4599999999999999, initial_note="constant 1/2 with a small cosine ripple (ours)",
        best_human=KnownValue(0.380927, "Haugland (2016)"),
        best_ai=KnownValue(0.3808703106, f"{TOGETHER} (SimpleTES claims 0.380868, construction not here)"),
    ))
    specs.append(Spec(
        name="circle-packing-rect-21", title="21 disjoint circles in a rectangle of perimeter 4, maximise the sum of radii", direction=MAX,
        verify=functools.partial(circles.verify_circles_in_rectangle, n=21), object_kind="circles_rect",
        program="circle_packing_rect.py", program_params={"N": 21},
        returns='{"circles": 21 rows [x, y, r], "width": w, "height": h}, or just the 21 rows (then the rectangle is their bounding box).',
        rules="r >= 0, finite; circles pairwise disjoint (sqrt(dx^2+dy^2) >= r_i + r_j, zero tolerance); "
        "with width/height given: every circle inside [0,w] x [0,h] and w + h <= 2; otherwise bounding-box width + height <= 2.",
        score="sum of the radii.",
        hints="The rectangle's aspect ratio is free: optimise it together with the centres and radii.",
        initial_score=1.4777667856351546, initial_note="a 5 x 5 grid in the unit square, 21 kept (ours)",
        best_human=KnownValue(2.364, "previous record quoted by AlphaEvolve (2025)"),
        best_ai=KnownValue(2.3658323759, f"{AE_V2} (v1: 2.3658321)"),
        params={"n": 21},
    ))
    specs.append(Spec(
        name="kissing-11", title="Kissing configuration in dimension 11 (lower bound on the kissing number)", direction=MAX,
        verify=functools.partial(kissing.verify_kissing, d=11), object_kind="integer_vectors",
        program="kissing.py", program_params={"D": 11},
        returns="a list of points, each a list of 11 integers (Python ints; huge values are fine).",
        rules="no point is 0, at most 2000 points, and min_{x != y} |x - y|^2 >= max_x |x|^2, checked in exact integer "
        "arithmetic (then spheres of radius max|x|/2 centred at the points all touch a central sphere without overlapping).",
        score="the number of points |C|.",
        hints="Start from lattices and codes (D11, laminated lattices, constructions from binary codes); large "
        "integer coordinates allow near-spherical configurations as in AlphaEvolve's 593.",
        initial_score=220.0, initial_note="the D11 root system (ours)",
        best_human=KnownValue(592, "Ganzhinov (2022)"),
        best_ai=KnownValue(594, "Together AI (Apr 2026); AlphaEvolve 593 verified here"),
        params={"d": 11},
    ))
    specs.append(Spec(
        name="heilbronn-triangle-11", title="Heilbronn problem for 11 points in the unit equilateral triangle", direction=MAX,
        verify=functools.partial(points.verify_heilbronn_triangle, n=11), object_kind="points_triangle",
        program="heilbronn_triangle.py", program_params={"N": 11},
        returns="11 points [x, y] (an (11, 2) array or nested lists).",
        rules="every point inside the triangle (0,0), (1,0), (1/2, sqrt(3)/2), up to 1e-12 (edge points are allowed).",
        score="smallest area of a triangle formed by 3 of the points, divided by the triangle's area sqrt(3)/4.",
        hints="Optimal configurations put several points on the edges; maximise the minimum area with a smooth "
        "surrogate (softmin) or an LP in the active triangles.",
        initial_score=0.0006940360424147463, initial_note="random points, seed 0 (ours)",
        best_human=KnownValue(0.036, "previous record quoted by AlphaEvolve (2025)"),
        best_ai=KnownValue(0.03652988988, AE_V1), params={"n": 11},
    ))
    for n, init, human, ai in (
        (13, 0.0003147512335558183, KnownValue(0.0306, "previous record quoted by AlphaEvolve (2025)"), KnownValue(0.03093688903, AE_V1)),
        (14, 0.0002746974648061769, KnownValue(0.0277, "previous record quoted by AlphaEvolve (2025)"), KnownValue(0.0278355805, f"{TOGETHER} (AlphaEvolve 0.0278355715)")),
    ):
        specs.append(Spec(
            name=f"heilbronn-convex-{n}", title=f"Heilbronn problem for {n} points in a convex region", direction=MAX,
            verify=functools.partial(points.verify_heilbronn_convex, n=n), object_kind="points2d",
            program="heilbronn_convex.py", program_params={"N": n},
            returns=f"{n} points [x, y] (any position and scale).",
            rules="finite coordinates, not all collinear.",
            score="smallest area of a triangle formed by 3 of the points, divided by the area of their convex hull.",
            hints="The region is the convex hull itself, so push points to the hull while keeping every triangle large.",
            initial_score=init, initial_note="random points in the unit square, seed 0 (ours)",
            best_human=human, best_ai=ai, params={"n": n},
        ))
    for n, d, init, human, ai in (
        (16, 2, 18.0, KnownValue(12.89, "previous record quoted by AlphaEvolve (2025)"), KnownValue(12.889229907717516, TOGETHER)),
        (14, 3, 9.0, KnownValue(4.168, "previous record quoted by AlphaEvolve (2025)"), KnownValue(4.165849767, AE_V1)),
    ):
        specs.append(Spec(
            name=f"min-distance-ratio-{n}-{d}d", title=f"{n} points in R^{d} minimising the ratio of largest to smallest distance", direction=MIN,
            verify=functools.partial(points.verify_distance_ratio, n=n, d=d), object_kind="points2d" if d == 2 else "points3d",
            program="min_distance_ratio.py", program_params={"N": n, "D": d},
            returns=f"{n} points, each a list of {d} floats.",
            rules="finite coordinates, no two points equal.",
            score="(max pairwise distance / min pairwise distance)^2.",
            hints="Near-optimal sets look like pieces of dense packings (hexagonal in 2-d); optimise with a smooth max/min.",
            initial_score=init, initial_note="the first N points of a cubic grid (ours)",
            best_human=human, best_ai=ai, params={"n": n, "d": d},
        ))
    specs.append(Spec(
        name="sums-differences", title="Sums and differences of a finite set (lower bound on C6, Tao's problem 3a)", direction=MAX,
        verify=sumdiff.verify_sums_differences, object_kind="integer_set", program="sums_differences.py", program_params={},
        returns="U: a list of distinct non-negative integers containing 0 (at most 60000 elements, each below 2^40).",
        rules="0 in U, max(U) > 0, |U - U| <= 2 max(U) + 1 (automatic for such U).",
        score="1 + log(|U - U| / |U + U|) / log(2 max(U) + 1), with |U+U| and |U-U| counted exactly.",
        hints="Sets with many more differences than sums: unions of scaled arithmetic progressions, "
        "products of small good sets (the score improves under iterated constructions).",
        initial_score=1.0792177788383983, initial_note="{0, 1, 3} (ours)",
        best_human=KnownValue(1.1835129, "certified construction (2026), per the reference README; earlier 1.173050 (Gerbicz)"),
        best_ai=KnownValue(1.158417281556896, f"{AE_V1}, U2 with 54265 elements"),
        time_limit=120, program_limit=100,
    ))
    return specs + _paper_starts(specs)


def _paper_starts(specs: list[Spec]) -> list[Spec]:
    """ThetaEvolve's own initial programs of AC1 and Hadamard-29, as tasks of their own (the
    default tasks start from naive programs that a syntax-level operator can move: AC1's 202
    published heights sit outside the evolve block, and most edits of the residue circulant
    break it or leave its score)."""
    by_name = {s.name: s for s in specs}
    return [
        dataclasses.replace(
            by_name["ac1"], name="ac1-paper", program="ac1.py", initial_score=1.521361278141491,
            initial_note="AlphaEvolve-v2's provided 202-step start, as used by ThetaEvolve (published 1.5213612781)"),
        dataclasses.replace(
            by_name["hadamard-29"], name="hadamard-29-paper", program="hadamard.py", initial_score=0.14327485380116958,
            initial_note="ThetaEvolve's quadratic-residue circulant start, 49/342 = 0.1432749"),
    ]


SPECS: dict[str, Spec] = {s.name: s for s in _specs()}
