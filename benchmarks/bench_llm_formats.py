"""A real small model on a task, per edit format: class histogram, parseable share, best score, children/s.

Formats: SEARCH/REPLACE (diff), EVOLVE-BLOCK rewrite (block), and each grammar-constrained.
Each run is a normal `evoforge run` (llamacpp backend) with a few steps of B x n responses:

    nice -n 10 python benchmarks/bench_llm_formats.py --task circle-packing-26 --model smollm2 \
        --steps 3 -B 1 -n 8 --out /tmp/formats_cp26
    python benchmarks/bench_llm_formats.py --summarize /tmp/formats_cp26/*/   # the table again

"Parseable" counts responses from which the edit parser reads an edit (any block / fence),
whether or not it then applies; "applied" counts children that reached the sandbox or were
judged unchanged (the edit applied).
"""
from __future__ import annotations

import argparse
import json
import os
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

FORMATS = {"diff": ("diff", False), "block": ("block", False), "diff+grammar": ("diff", True),
           "block+grammar": ("block", True)}


def summarize(run_dir: Path) -> dict:
    from evoforge.edits import NoEditFound, parse_edits

    db = sqlite3.connect(f"file:{run_dir / 'run.db'}?mode=ro", uri=True)
    cfg = json.loads(dict(db.execute("select key, value from meta"))["config"])
    mode = cfg["prompt"]["edit_mode"]
    rows = list(db.execute("select step, response, child_class, score, created_at, completion_tokens "
                           "from children where step > 0 order by id"))
    seed = db.execute("select score from children where step = 0").fetchone()
    classes = Counter(r[2] for r in rows)
    parseable = 0
    for r in rows:
        try:
            parse_edits(r[1] or "", mode=mode)
            parseable += 1
        except NoEditFound:
            pass
    scores = [r[3] for r in rows if r[2] == "evaluated" and r[3] is not None]
    times = [r[4] for r in rows]
    wall = (max(times) - db.execute("select min(created_at) from children").fetchone()[0]) if times else 0.0
    return {
        "run": run_dir.name, "format": mode + ("+grammar" if cfg["prompt"].get("grammar") else ""),
        "responses": len(rows), "classes": dict(classes), "parseable": parseable,
        "applied": sum(classes.get(c, 0) for c in ("evaluated", "invalid", "no_solution", "unchanged")),
        "initial": seed[0] if seed else None, "best": max(scores) if scores else None,
        "children_per_s": len(rows) / wall if wall > 0 else 0.0,
        "mean_tokens": sum(r[5] or 0 for r in rows) / max(1, len(rows)),
    }


def table(results: list[dict]) -> str:
    lines = ["| run | format | responses | no_diff | unchanged | no_solution | invalid | evaluated | parseable | "
             "best (initial) | children/s | mean new tokens |", "|---" * 12 + "|"]
    for r in results:
        c = r["classes"]
        best = "-" if r["best"] is None else f"{r['best']:.4g}"
        init = "-" if r["initial"] is None else f"{r['initial']:.4g}"
        lines.append(f"| {r['run']} | {r['format']} | {r['responses']} | {c.get('no_diff', 0)} | {c.get('unchanged', 0)} | "
                     f"{c.get('no_solution', 0)} | {c.get('invalid', 0)} | {c.get('evaluated', 0)} | "
                     f"{r['parseable']}/{r['responses']} | {best} ({init}) | {r['children_per_s']:.3f} | "
                     f"{r['mean_tokens']:.0f} |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--task", default="circle-packing-26")
    ap.add_argument("--model", default="smollm2")
    ap.add_argument("--formats", nargs="+", default=list(FORMATS), choices=list(FORMATS))
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("-B", type=int, default=1)
    ap.add_argument("-n", type=int, default=8)
    ap.add_argument("--temperature", type=float, default=0.7)
    ap.add_argument("--max-tokens", type=int, default=448)
    ap.add_argument("--out", type=Path, default=Path("/tmp/evoforge-formats"))
    ap.add_argument("--summarize", nargs="*", type=Path, help="only print the table of these run directories")
    a = ap.parse_args()
    if a.summarize is not None:
        print(table([summarize(d) for d in a.summarize]))
        return
    a.out.mkdir(parents=True, exist_ok=True)
    results = []
    for name in a.formats:
        mode, grammar = FORMATS[name]
        cfg = a.out / f"{name}.json"
        cfg.write_text(json.dumps({"temperature": a.temperature, "max_tokens": a.max_tokens, "max_steps": a.steps,
                                   "batch_size": a.B, "n": a.n, "prompt": {"edit_mode": mode, "grammar": grammar}}))
        run_dir = a.out / name.replace("+", "_")
        la = os.getloadavg()[0]
        t0 = time.time()
        subprocess.run([sys.executable, "-m", "evoforge.cli.main", "run", a.task, "--backend", "llamacpp", "--model",
                        a.model, "--budget", "1000", "--config", str(cfg), "--run-dir", str(run_dir), "-q"],
                       check=False, timeout=7200)
        r = summarize(run_dir)
        print(f"{name}: {time.time() - t0:.0f} s, load {la:.1f} -> {os.getloadavg()[0]:.1f}", flush=True)
        results.append(r)
    print(table(results))


if __name__ == "__main__":
    main()
