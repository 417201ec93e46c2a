"""Selector ablation ("Reuse strategies"): every selector on several built-in tasks, with the
model-free ``builtin`` operator, equal evaluation budgets and several seeds.

    python benchmarks/ablation_selectors.py [--budget 500] [--seeds 3] [--tasks a,b,c]
        [--selectors map-elites,puct,...] [--fractions 0.25,0.5,0.75] [-B 8] [-n 4] [--out results.json]

Unset, B x n and map-elites' database are sized to the budget as in a plain run
(selectors/sizing.py); -B/-n fix them for every selector.

Prints markdown tables: per task and selector the median and best final score, the share of
the gap from the initial score to the best known value closed (median), the median best score
at half the budget, and the evaluations needed to close each of ``--fractions`` of that gap
(median over seeds, an unreached seed counting as infinity; "-" when the median is not reached).
A second table averages over tasks the median gap closed at 10/25/50/75/100% of the budget
(early vs late) and gives each selector's mean rank of the final score; a third counts, per
paper claim, the (task, seed) pairs where one selector beat the other (same seed = same
operator random stream), so that a difference can be read against seed noise.

What is measured: the best score within the first ``--budget`` sandbox evaluations (the seed's
evaluation counts, as in the engine), read from each run's SQLite store. The last step may
evaluate a few children past the budget; they are ignored so that every run gets exactly the
same number of evaluations. Pictures are switched off (they cost time and change nothing).
All runs share one SandboxPool; runs are sequential, each evaluating in parallel on the pool.
"""
from __future__ import annotations

import argparse
import contextlib
import csv
import json
import math
import sqlite3
import statistics
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterator, Sequence

# Variant name -> (selector, selector options). "map-elites" is evoforge's default (sized to the
# budget); the three others are ThetaEvolve's fixed sizes.
VARIANTS: dict[str, tuple[str, dict[str, Any]]] = {
    "map-elites": ("map-elites", {}),
    "map-elites-small": ("map-elites", {"size": "small"}),
    "map-elites-medium": ("map-elites", {"size": "medium"}),
    "map-elites-large": ("map-elites", {"size": "large"}),
    "puct": ("puct", {}),
    "pacevolve": ("pacevolve", {}),
    "greedy": ("greedy", {}),
    "best-of-n": ("best-of-n", {}),
}
# One circle packing, one autocorrelation inequality, one other; all evaluate in milliseconds.
# (ac1 and hadamard-29 now start from naive programs the builtin operator can move; their
# paper starts, ac1-paper and hadamard-29-paper, give it almost nothing to edit.)
DEFAULT_TASKS = ("circle-packing-26", "ac3", "erdos-min-overlap")
EVALUATED_CLASSES = ("evaluated", "invalid", "no_solution")
CHECKPOINTS = (0.1, 0.25, 0.5, 0.75, 1.0)  # shares of the budget at which the best is recorded


class AblationError(ValueError):
    """Bad arguments (unknown task or selector, bad fraction); one line for the user."""


@dataclass
class RunResult:
    task: str
    variant: str
    seed: int
    maximize: bool
    budget: int
    evaluations: int  # in the store (may exceed the budget by part of the last step)
    initial: float
    target: float | None
    final: float  # best score within the first `budget` evaluations
    evals_to: dict[str, int | None]  # fraction of the gap -> evaluations (seed included) to close it
    best_at: dict[str, float] = field(default_factory=dict)  # share of budget -> best so far
    seconds: float = 0.0
    classes: dict[str, int] = field(default_factory=dict)


# -- pure helpers (tested) ------------------------------------------------------------------
def best_so_far(trace: Sequence[tuple[float | None, str]], maximize: bool) -> list[float | None]:
    """Best valid score after each evaluation (None until the first valid one)."""
    out: list[float | None] = []
    best: float | None = None
    for score, cls in trace:
        if cls == "evaluated" and score is not None and math.isfinite(score):
            if best is None or (score > best if maximize else score < best):
                best = score
        out.append(best)
    return out


def threshold(initial: float, target: float, fraction: float) -> float:
    """The score `fraction` of the way from `initial` to `target` (either direction)."""
    return initial + fraction * (target - initial)


def evals_to_reach(curve: Sequence[float | None], level: float, maximize: bool) -> int | None:
    """1-based number of evaluations after which the best is at least as good as `level`."""
    for i, b in enumerate(curve, start=1):
        if b is not None and (b >= level if maximize else b <= level):
            return i
    return None


def gap_closed(score: float, initial: float, target: float | None) -> float | None:
    """Share of the initial-to-best-known gap that `score` closes (1.0 = matches the record)."""
    if target is None or target == initial:
        return None
    return (score - initial) / (target - initial)


def median_evals(values: Sequence[int | None]) -> float | None:
    """Median with unreached (None) as +infinity; None when the median itself is unreached."""
    m = statistics.median([math.inf if v is None else v for v in values])
    return None if math.isinf(m) else m


# -- running --------------------------------------------------------------------------------
def read_trace(db_path: Path) -> list[tuple[float | None, str]]:
    """(score, class) of every sandbox evaluation, in order, from a run store."""
    con = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    try:
        q = "SELECT score, child_class FROM children WHERE child_class IN (?,?,?) ORDER BY id"
        return [(s, c) for s, c in con.execute(q, EVALUATED_CLASSES)]
    finally:
        con.close()


def run_one(task_name: str, variant: str, seed: int, args: argparse.Namespace, pool: Any,
            run_root: Path) -> RunResult:
    from evoforge.engine import Engine, build_config
    from evoforge.tasks import get_task

    selector, options = VARIANTS[variant]
    task = get_task(task_name)
    cfg = build_config(task=task_name, budget=args.budget, seed=seed, selector=selector,
                       selector_options=dict(options), batch_size=args.B, n=args.n, workers=args.workers,
                       picture_interval=1e9, eval_timeout=args.eval_timeout)
    run_dir = run_root / f"{task_name}__{variant}__s{seed}"
    t0 = time.perf_counter()
    summary = Engine(cfg, run_dir, task=task, executor=pool).run()
    seconds = time.perf_counter() - t0
    maximize = task.direction.value == "max"
    trace = read_trace(run_dir / "run.db")[: args.budget]
    curve = best_so_far(trace, maximize)
    initial = float(summary["initial_score"])
    final = curve[-1] if curve and curve[-1] is not None else initial
    target = task.target
    reach = {f"{f:g}": evals_to_reach(curve, threshold(initial, target, f), maximize) if target is not None else None
             for f in args.fractions}
    best_at = {}
    for share in CHECKPOINTS:
        idx = max(1, math.ceil(share * args.budget)) - 1
        b = curve[min(idx, len(curve) - 1)] if curve else None
        best_at[f"{share:g}"] = initial if b is None else b
    return RunResult(task_name, variant, seed, maximize, args.budget, int(summary["evaluated"]), initial, target, final,
                     reach, best_at, round(seconds, 2), dict(summary.get("classes") or {}))


@contextlib.contextmanager
def pictures_off() -> Iterator[None]:
    """Drawing after every improving step costs more than these fast tasks' evaluations."""
    from evoforge.engine import outputs

    original = outputs.refresh
    outputs.refresh = lambda *a, **k: None  # type: ignore[assignment]
    try:
        yield
    finally:
        outputs.refresh = original  # type: ignore[assignment]


# -- reporting ------------------------------------------------------------------------------
def _fmt(x: float | None, digits: int = 6) -> str:
    return "-" if x is None else f"{x:.{digits}g}"


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def summary_rows(results: Sequence[RunResult]) -> list[dict[str, Any]]:
    """One row per (task, variant), in the order first seen."""
    groups: dict[tuple[str, str], list[RunResult]] = {}
    for r in results:
        groups.setdefault((r.task, r.variant), []).append(r)
    rows = []
    for (task, variant), rs in groups.items():
        maximize = rs[0].maximize
        finals = [r.final for r in rs]
        med = statistics.median(finals)
        rows.append(dict(
            task=task, variant=variant, seeds=len(rs),
            median_final=med, best_final=max(finals) if maximize else min(finals),
            worst_final=min(finals) if maximize else max(finals),
            gap_closed=gap_closed(med, rs[0].initial, rs[0].target),
            median_half=statistics.median(r.best_at["0.5"] for r in rs),
            gap_closed_at={k: gap_closed(statistics.median(r.best_at[k] for r in rs), rs[0].initial, rs[0].target)
                           for k in rs[0].best_at},
            median_evals={f: median_evals([r.evals_to[f] for r in rs]) for f in rs[0].evals_to},
            reached={f: sum(r.evals_to[f] is not None for r in rs) for f in rs[0].evals_to},
        ))
    return rows


def markdown_tables(results: Sequence[RunResult]) -> str:
    rows = summary_rows(results)
    fractions = list(rows[0]["median_evals"]) if rows else []
    out = ["| task | selector | median final | best final | worst final | gap closed (median) "
           "| median @ half budget | " + " | ".join(f"evals to {100 * float(f):g}% (reached)" for f in fractions)
           + " |", "| --- | --- | ---: | ---: | ---: | ---: | ---: | " + " | ".join("---:" for _ in fractions) + " |"]
    for r in rows:
        reach = " | ".join(f"{_fmt(r['median_evals'][f])} ({r['reached'][f]}/{r['seeds']})" for f in fractions)
        out.append(f"| {r['task']} | {r['variant']} | {_fmt(r['median_final'], 8)} | {_fmt(r['best_final'], 8)} "
                   f"| {_fmt(r['worst_final'], 8)} | {_pct(r['gap_closed'])} | {_fmt(r['median_half'], 8)} "
                   f"| {reach} |")
    # Across tasks: the mean (over tasks) of the median gap closed at each share of the budget,
    # and the mean rank of the median final score (1 = best); ties share the mean rank.
    variants = list(dict.fromkeys(r["variant"] for r in rows))
    tasks = list(dict.fromkeys(r["task"] for r in rows))
    ranks: dict[str, list[float]] = {v: [] for v in variants}
    for t in tasks:
        gaps = {r["variant"]: r["gap_closed"] or 0.0 for r in rows if r["task"] == t}
        for v, g in gaps.items():
            better = sum(1 for o in gaps.values() if o > g)
            same = sum(1 for o in gaps.values() if o == g)  # includes v itself
            ranks[v].append(better + (same + 1) / 2)
    shares = list(rows[0]["gap_closed_at"]) if rows else []
    out += ["", "| selector | " + " | ".join(f"gap closed @ {float(s):.0%} budget" for s in shares)
            + " | mean rank (final) |",
            "| --- | " + " | ".join("---:" for _ in shares) + " | ---: |"]
    for v in variants:
        vrs = [r for r in rows if r["variant"] == v]
        cells = []
        for s in shares:
            gs = [r["gap_closed_at"][s] for r in vrs if r["gap_closed_at"][s] is not None]
            cells.append(_pct(statistics.fmean(gs)) if gs else "-")
        out.append(f"| {v} | " + " | ".join(cells) + f" | {statistics.fmean(ranks[v]):.2f} |")
    claims = claims_table(results)
    return "\n".join(out + (["", claims] if claims else []))


# The papers' claims as paired comparisons: the same task and seed (hence the same operator
# random stream), variant a against b, on the best score at a share of the budget. Each row
# reads "a beats b": the claim holds where "a better" clearly outnumbers "b better".
CLAIMS: tuple[tuple[str, str, str, str], ...] = (
    ("TTT-Discover: PUCT reuse beats best-of-N", "puct", "best-of-n", "1"),
    ("TTT-Discover: PUCT beats epsilon-greedy", "puct", "greedy", "1"),
    ("ThetaEvolve: small database wins early", "map-elites-small", "map-elites-large", "0.25"),
    ("ThetaEvolve: large database wins late", "map-elites-large", "map-elites-small", "1"),
    ("evoforge: budget-sized beats the Large database", "map-elites", "map-elites-large", "1"),
    ("PACEvolve: beats plain islands", "pacevolve", "map-elites", "1"),
    ("best-of-n (no reuse) is the weakest", "map-elites", "best-of-n", "1"),
    ("best-of-n (no reuse) is the weakest", "map-elites-small", "best-of-n", "1"),
    ("best-of-n (no reuse) is the weakest", "pacevolve", "best-of-n", "1"),
    ("best-of-n (no reuse) is the weakest", "greedy", "best-of-n", "1"),
)


def paired_counts(results: Sequence[RunResult], a: str, b: str, share: str) -> tuple[int, int, int]:
    """(a better, tie, b better) over the (task, seed) pairs that ran both variants."""
    by_key = {(r.task, r.seed, r.variant): r for r in results}
    wins = ties = losses = 0
    for (task, seed, variant), ra in by_key.items():
        rb = by_key.get((task, seed, b))
        if variant != a or rb is None:
            continue
        x, y = ra.best_at[share], rb.best_at[share]
        if x == y:
            ties += 1
        elif (x > y) == ra.maximize:
            wins += 1
        else:
            losses += 1
    return wins, ties, losses


def claims_table(results: Sequence[RunResult]) -> str:
    present = {r.variant for r in results}
    lines = ["| claim | a vs b | at budget | a better | tie | b better |", "| --- | --- | ---: | ---: | ---: | ---: |"]
    for label, a, b, share in CLAIMS:
        if a in present and b in present and results and share in results[0].best_at:
            w, t, l = paired_counts(results, a, b, share)
            lines.append(f"| {label} | {a} vs {b} | {float(share):.0%} | {w} | {t} | {l} |")
    return "\n".join(lines) if len(lines) > 2 else ""


def write_raw(results: Sequence[RunResult], path: Path) -> None:
    if path.suffix == ".csv":
        with path.open("w", newline="") as f:
            w = csv.writer(f)
            shares = list(results[0].best_at) if results else []
            fractions = list(results[0].evals_to) if results else []
            w.writerow(["task", "variant", "seed", "budget", "evaluations", "initial", "target", "final", "seconds"]
                       + [f"evals_to_{f}" for f in fractions] + [f"best_at_{s}" for s in shares])
            for r in results:
                w.writerow([r.task, r.variant, r.seed, r.budget, r.evaluations, r.initial, r.target, r.final,
                            r.seconds] + ["" if r.evals_to[f] is None else r.evals_to[f] for f in fractions]
                           + [r.best_at[s] for s in shares])
    else:
        path.write_text(json.dumps([asdict(r) for r in results], indent=1))


# -- command line ---------------------------------------------------------------------------
def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--budget", type=int, default=500, help="sandbox evaluations per run (seed included)")
    ap.add_argument("--seeds", type=int, default=3, help="seeds 0..N-1 per task and selector")
    ap.add_argument("--tasks", default=",".join(DEFAULT_TASKS), help="comma-separated built-in task names")
    ap.add_argument("--selectors", default=",".join(VARIANTS), help=f"comma-separated, of: {', '.join(VARIANTS)}")
    ap.add_argument("--fractions", default="0.25,0.5,0.75",
                    help="comma-separated shares of the initial-to-best-known gap for the 'evals to' columns")
    ap.add_argument("-B", type=int, default=None, help="parents per step [sized to the budget]")
    ap.add_argument("-n", type=int, default=None, help="responses per parent [sized to the budget]")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--eval-timeout", type=float, default=10.0, help="seconds per evaluation")
    ap.add_argument("--out", type=Path, default=None, help="raw per-run results (.csv, else JSON)")
    ap.add_argument("--keep-runs", type=Path, default=None, help="keep run directories here (default: temporary)")
    return ap.parse_args(argv)


def validate(args: argparse.Namespace) -> tuple[list[str], list[str]]:
    from evoforge.tasks import TaskError, get_task

    tasks = [t.strip() for t in args.tasks.split(",") if t.strip()]
    variants = [v.strip() for v in args.selectors.split(",") if v.strip()]
    unknown = [v for v in variants if v not in VARIANTS]
    if unknown:
        raise AblationError(f"unknown selector {unknown[0]!r} (known: {', '.join(VARIANTS)})")
    if not tasks or not variants:
        raise AblationError("give at least one task and one selector")
    for t in tasks:
        try:
            task = get_task(t)
        except TaskError as exc:
            raise AblationError(str(exc)) from None
        if task.target is None:
            raise AblationError(f"task {t!r} has no best known value; the gap columns need one")
    try:
        args.fractions = [float(f) for f in str(args.fractions).split(",") if f.strip()]
    except ValueError:
        raise AblationError(f"--fractions must be numbers separated by commas, got {args.fractions!r}") from None
    if not args.fractions or any(not 0 < f <= 1 for f in args.fractions):
        raise AblationError(f"--fractions must be in (0, 1], got {args.fractions}")
    for name in ("budget", "seeds", "B", "n", "workers"):
        if getattr(args, name) is not None and getattr(args, name) < 1:
            raise AblationError(f"--{name} must be at least 1")
    return tasks, variants


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        tasks, variants = validate(args)
    except AblationError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    from evoforge.engine import EngineError
    from evoforge.sandbox import SandboxPool

    results: list[RunResult] = []
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="evoforge-ablation-") as tmp, pictures_off():
        run_root = args.keep_runs or Path(tmp)
        run_root.mkdir(parents=True, exist_ok=True)
        with SandboxPool(workers=args.workers) as pool:
            for task in tasks:
                for seed in range(args.seeds):
                    for variant in variants:
                        try:
                            r = run_one(task, variant, seed, args, pool, run_root)
                        except (EngineError, ValueError) as exc:  # config, selector and task errors
                            print(f"error: {task} {variant} seed {seed}: {exc}", file=sys.stderr)
                            return 1
                        results.append(r)
                        print(f"[{time.perf_counter() - t0:6.0f}s] {task} {variant} seed {seed}: "
                              f"final {r.final:.8g}, evals to {r.evals_to}, "
                              f"{r.seconds:.1f}s", file=sys.stderr, flush=True)
    order = {v: i for i, v in enumerate(variants)}
    results.sort(key=lambda r: (tasks.index(r.task), order[r.variant], r.seed))
    print(f"Selector ablation: builtin operator, budget {args.budget} evaluations, {args.seeds} seeds, "
          f"B={args.B or 'budget-sized'} n={args.n or 'budget-sized'}, {args.workers} workers, total {time.perf_counter() - t0:.0f} s\n")
    print(markdown_tables(results))
    if args.out:
        write_raw(results, args.out)
        print(f"\nraw results: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
