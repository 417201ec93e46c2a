"""The selector ablation benchmark: its arithmetic, its argument errors, and one tiny real run."""
from __future__ import annotations

import csv
import importlib.util
import math
import sys
from pathlib import Path

import pytest

from evoforge.engine import outputs

PATH = Path(__file__).resolve().parents[1] / "benchmarks" / "ablation_selectors.py"
spec = importlib.util.spec_from_file_location("ablation_selectors", PATH)
ab = importlib.util.module_from_spec(spec)
assert spec.loader is not None
sys.modules[spec.name] = ab  # dataclasses look their module up there
spec.loader.exec_module(ab)


def test_best_so_far_ignores_invalid_and_follows_direction() -> None:
    trace = [(None, "invalid"), (3.0, "evaluated"), (5.0, "no_solution"), (2.0, "evaluated"), (4.0, "evaluated")]
    assert ab.best_so_far(trace, maximize=True) == [None, 3.0, 3.0, 3.0, 4.0]
    assert ab.best_so_far(trace, maximize=False) == [None, 3.0, 3.0, 2.0, 2.0]


def test_threshold_and_gap_closed_work_for_minimisation() -> None:
    level = ab.threshold(3.0, 1.0, 0.25)  # min task: initial 3, record 1
    assert level == pytest.approx(2.5)
    assert ab.gap_closed(2.0, 3.0, 1.0) == pytest.approx(0.5)
    assert ab.gap_closed(1.0, 0.0, 2.0) == pytest.approx(0.5)
    assert ab.gap_closed(1.0, 1.0, None) is None


def test_evals_to_reach_is_one_based_and_none_when_unreached() -> None:
    curve = [None, 3.0, 2.6, 2.4, 2.0]
    assert ab.evals_to_reach(curve, 2.5, maximize=False) == 4
    assert ab.evals_to_reach(curve, 1.9, maximize=False) is None
    assert ab.evals_to_reach([1.0, 2.0], 2.0, maximize=True) == 2


def test_median_counts_unreached_seeds_as_infinite() -> None:
    assert ab.median_evals([10, None, 30]) == 30
    assert ab.median_evals([10, None, None]) is None
    assert ab.median_evals([10, 20]) == 15


def _result(variant: str, seed: int, final: float, reach: int | None) -> "ab.RunResult":
    return ab.RunResult("t", variant, seed, True, 100, 100, 0.0, 10.0, final, {"0.5": reach},
                        {"0.5": final / 2, "1": final})


def test_tables_rank_selectors_by_median_final() -> None:
    results = [_result("a", s, f, r) for s, (f, r) in enumerate([(6.0, 40), (2.0, None), (7.0, 50)])]
    results += [_result("b", s, f, None) for s, f in enumerate([1.0, 2.0, 3.0])]
    text = ab.markdown_tables(results)
    assert "| t | a | 6 | 7 | 2 | 60.0% | 3 | 50 (2/3) |" in text
    assert "| t | b | 2 | 3 | 1 | 20.0% | 1 | - (0/3) |" in text
    assert "| a | 30.0% | 60.0% | 1.00 |" in text
    assert "| b | 10.0% | 20.0% | 2.00 |" in text


@pytest.mark.parametrize("argv, message", [
    (["--selectors", "puct,nope"], "unknown selector 'nope'"),
    (["--tasks", "no-such-task"], "unknown task 'no-such-task'"),
    (["--fractions", "0.5,2"], "--fractions must be in (0, 1]"),
    (["--fractions", "half"], "--fractions must be numbers"),
    (["--budget", "0"], "--budget must be at least 1"),
])
def test_bad_arguments_give_one_line(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert ab.main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and message in err and "\n" not in err


def test_tiny_real_run_writes_raw_results_and_restores_pictures(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    refresh = outputs.refresh
    out = tmp_path / "raw.csv"
    code = ab.main(["--budget", "12", "--seeds", "1", "--tasks", "ac3", "--selectors", "puct,best-of-n",
                    "-B", "2", "-n", "2", "--out", str(out), "--keep-runs", str(tmp_path / "runs")])
    assert code == 0
    assert outputs.refresh is refresh
    text = capsys.readouterr().out
    assert "| ac3 | puct |" in text and "| ac3 | best-of-n |" in text
    rows = list(csv.DictReader(out.open()))
    assert [r["variant"] for r in rows] == ["puct", "best-of-n"]
    for r in rows:
        initial, final = float(r["initial"]), float(r["final"])
        assert int(r["evaluations"]) >= 12
        assert final <= initial and math.isfinite(final)  # ac3 minimises; the best never worsens
        assert float(r["best_at_0.5"]) >= final
    assert (tmp_path / "runs" / "ac3__puct__s0" / "run.db").is_file()


def test_paired_counts_compare_same_task_and_seed_in_the_task_direction() -> None:
    results = [_result("puct", s, f, None) for s, f in enumerate([6.0, 2.0, 7.0])]
    results += [_result("best-of-n", s, f, None) for s, f in enumerate([1.0, 2.0, 9.0])]
    assert ab.paired_counts(results, "puct", "best-of-n", "1") == (1, 1, 1)
    for r in results:
        r.maximize = False  # now smaller is better: the win and the loss swap
    assert ab.paired_counts(results, "puct", "best-of-n", "1") == (1, 1, 1)
    results[0].best_at["1"] = 0.5
    assert ab.paired_counts(results, "puct", "best-of-n", "1") == (2, 1, 0)
    table = ab.claims_table(results)
    assert "| TTT-Discover: PUCT reuse beats best-of-N | puct vs best-of-n | 100% | 2 | 1 | 0 |" in table
    assert "greedy" not in table  # claims whose selectors did not run are left out


def test_a_run_that_cannot_start_gives_one_line(monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    from evoforge.engine import EngineError

    def failing_run(*args: object, **kwargs: object) -> None:
        raise EngineError("the initial program of ac3 is not a valid solution (timeout)")

    monkeypatch.setattr(ab, "run_one", failing_run)
    code = ab.main(["--budget", "4", "--seeds", "1", "--tasks", "ac3", "--selectors", "puct"])
    assert code == 1
    err = capsys.readouterr().err.strip()
    assert err == "error: ac3 puct seed 0: the initial program of ac3 is not a valid solution (timeout)"
