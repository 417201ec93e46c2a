"""Every OpenEvolve example that needs no network, GPU or data download, run unchanged by evoforge.

For each example folder of OpenEvolve's examples/ (a copy, so nothing is written into the
checkout), run `evoforge run EXAMPLE --backend builtin --budget N` (the folder's own config.yaml
or config_*.yaml is read for the system message, timeout, memory and cascade) and report:

    loads     the task loaded and the run started
    runs      the command finished (exit 0)
    initial -> best   the seed's score and the best score (evoforge show --json)
    problems  what went wrong or was worked around: warnings, failing children's main reason

Examples that need the network, a GPU/accelerator or a data download are listed as skipped,
with the reason. OpenEvolve's source comes from the `fetch` mirror of
algorithmicsuperintelligence/openevolve (its commit is printed), or --examples DIR --commit SHA.

Usage (about 10 minutes on 2 busy cores with the defaults):
    python3 benchmarks/openevolve_examples.py
    python3 benchmarks/openevolve_examples.py --only function_minimization circle_packing --budget 30
    python3 benchmarks/openevolve_examples.py --json /tmp/oe_examples.json
Some examples need `pip install -e ".[openevolve-examples]"` (JAX evaluators), cargo (Rust) or R; without them
the table says so.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

MIRROR = Path("/work/.mirror/algorithmicsuperintelligence+openevolve/repo")
# Not run, and why (read from each example's README/evaluator at the recorded commit).
SKIP = {
    "arc_benchmark": "data download (ARC-AGI tasks under DATA_ROOT)",
    "attention_optimization": "MLIR toolchain and a GPU benchmark",
    "llm_prompt_optimization": "network (LLM calls and Hugging Face datasets)",
    "lm_eval": "network (lm-eval harness and a model server)",
    "mlx_metal_kernel_opt": "Apple MLX / Metal GPU",
    "online_judge_programming": "network (submits to Kattis)",
    "sldbench": "data download (Hugging Face dataset)",
    "symbolic_regression": "data download (LLM-SRBench)",
    "web_scraper_optillm": "network (optillm proxy and web pages)",
    "algotune": "data/code download (AlgoTune task definitions, AlgoTuneTasks package)",
    "tsp_tour_minimization": "C++ heat-map pipeline with a CUDA training step and downloaded instances",
}


@dataclass
class Row:
    example: str
    loads: bool = False
    runs: bool = False
    initial: float | None = None
    best: float | None = None
    evaluated: int | None = None
    classes: dict = field(default_factory=dict)
    wall_s: float = 0.0
    problems: list[str] = field(default_factory=list)


def find_examples(root: Path) -> list[str]:
    out = []
    for ev in sorted(root.rglob("evaluator.py")):
        rel = ev.parent.relative_to(root)
        if rel.parts and rel.parts[0] in SKIP:
            continue
        if any(p.is_file() for p in ev.parent.glob("initial_program.*")):
            out.append(str(rel))
    return out


def export_mirror(dest: Path) -> tuple[Path, str]:
    """OpenEvolve's tree from the fetch mirror into dest: (examples dir, commit)."""
    git = ["git", f"--git-dir={MIRROR}"]
    commit = subprocess.run(git + ["rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    archive = subprocess.run(git + ["archive", "HEAD", "examples"], capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    return dest / "examples", commit


def run_one(root: Path, example: str, work: Path, budget: int, timeout_s: float, extra: list[str]) -> Row:
    row = Row(example)
    dst = work / "examples" / example
    shutil.copytree(root / example, dst)  # a copy, unchanged: runs must not write into the checkout
    run_dir = work / "runs" / example.replace("/", "__")
    cmd = [sys.executable, "-m", "evoforge.cli.main", "run", str(Path("examples") / example), "--backend", "builtin",
           "--budget", str(budget), "-B", "2", "-n", "2", "--run-dir", str(run_dir), "-q", *extra]
    started = time.perf_counter()
    try:
        proc = subprocess.run(cmd, cwd=work, capture_output=True, text=True, timeout=timeout_s)
        err, code = proc.stderr, proc.returncode
    except subprocess.TimeoutExpired as exc:
        err, code = (exc.stderr or b"").decode("utf-8", "replace") if isinstance(exc.stderr, bytes) else (exc.stderr or ""), None
        row.problems.append(f"run stopped after {timeout_s:.0f} s (evaluations too slow for this budget)")
    row.wall_s = time.perf_counter() - started
    flat = " ".join(err.split())
    row.loads = "evoforge: task" in flat
    row.runs = code == 0
    if code not in (0, None):
        row.problems.append(_last(err))
    for pattern in (r"WARNING (.+?)(?= WARNING |$| done:| step )",):
        for m in re.finditer(pattern, flat):
            row.problems.append(m.group(1)[:220])
    if (run_dir / "run.db").is_file():
        show = subprocess.run([sys.executable, "-m", "evoforge.cli.main", "show", str(run_dir), "--json"],
                              capture_output=True, text=True, cwd=work, timeout=120)
        if show.returncode == 0:
            info = json.loads(show.stdout)
            row.initial, row.best = info.get("initial_score"), info.get("best_score")
            row.evaluated, row.classes = info.get("evaluated"), info.get("classes") or {}
        reason = _main_failure(run_dir / "run.db")
        if reason:
            row.problems.append(reason)
    return row


def _main_failure(db_path: Path) -> str:
    """The most common first line of the failing evaluated children's feedback."""
    try:
        db = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
        rows = db.execute("SELECT status, feedback FROM children WHERE child_class IN ('no_solution', 'invalid')").fetchall()
        total = db.execute("SELECT COUNT(*) FROM children WHERE child_class IN ('evaluated', 'no_solution', 'invalid')").fetchone()[0]
        db.close()
    except sqlite3.Error:
        return ""
    if not rows:
        return ""
    lines = Counter(f"{s}: {(fb or '').strip().splitlines()[0][:160] if (fb or '').strip() else '?'}" for s, fb in rows)
    top, count = lines.most_common(1)[0]
    return f"{len(rows)}/{total} evaluated children failed; most often ({count}x) {top}"


def _last(text: str) -> str:
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1][:220] if lines else "failed without output"


def _fmt(v: float | None) -> str:
    return "-" if v is None else f"{v:.6g}"


def table(rows: list[Row], commit: str) -> str:
    out = [f"OpenEvolve examples at algorithmicsuperintelligence/openevolve@{commit}", "",
           "| example | loads | runs | evaluated | initial -> best | problems |", "|---|---|---|---|---|---|"]
    for r in rows:
        probs = "; ".join(dict.fromkeys(r.problems)) or "none"
        out.append(f"| {r.example} | {'yes' if r.loads else 'no'} | {'yes' if r.runs else 'no'} | {r.evaluated or '-'} "
                   f"| {_fmt(r.initial)} -> {_fmt(r.best)} | {probs.replace('|', '/')} |")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--examples", type=Path, default=None, help="OpenEvolve's examples/ folder [default: the fetch mirror]")
    p.add_argument("--commit", default="unknown", help="the OpenEvolve commit of --examples")
    p.add_argument("--budget", type=int, default=12, help="evaluations per example")
    p.add_argument("--timeout", type=float, default=300.0, help="seconds before one example's run is abandoned")
    p.add_argument("--only", nargs="*", default=None, help="run only these examples (paths below examples/)")
    p.add_argument("--evoforge-args", default="", help="extra `evoforge run` arguments, quoted")
    p.add_argument("--json", type=Path, default=None)
    args = p.parse_args(argv)
    tmp = Path(tempfile.mkdtemp(prefix="oe-examples-"))
    os.chmod(tmp, 0o755)  # the sandbox's own uid must reach the evaluators' folders
    try:
        if args.examples is None:
            root, commit = export_mirror(tmp)
        else:
            root, commit = args.examples.resolve(), args.commit
        examples = args.only or find_examples(root)
        load = " ".join(f"{x:.1f}" for x in os.getloadavg())
        print(f"OpenEvolve commit {commit}; {len(examples)} examples, budget {args.budget} each, builtin backend; "
              f"load average {load}", flush=True)
        rows = []
        for ex in examples:
            work = tmp / "work" / ex.replace("/", "__")
            work.mkdir(parents=True)
            row = run_one(root, ex, work, args.budget, args.timeout, args.evoforge_args.split())
            rows.append(row)
            print(f"  {ex}: loads {row.loads} runs {row.runs} {_fmt(row.initial)} -> {_fmt(row.best)} "
                  f"({row.wall_s:.0f} s) {'; '.join(row.problems)[:300]}", flush=True)
        print()
        print(table(rows, commit))
        print("\nskipped: " + "; ".join(f"{k} ({v})" for k, v in SKIP.items()))
        print(f"load average after: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
        if args.json:
            args.json.write_text(json.dumps({"commit": commit, "budget": args.budget, "rows": [asdict(r) for r in rows],
                                             "skipped": SKIP}, indent=1))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0 if rows and all(r.runs for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
