"""What a synthesis run shows: the pool, admissions per layer over steps, the pass-rate
histogram, held-out solver accuracy, and the picture of layer pass rates (the paper's Fig. 4)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from evoforge.envs.admission import LAYERS
from evoforge.envs.store import EnvStore


def summary(store: EnvStore) -> dict[str, Any]:
    steps = store.steps()
    per_step = []
    for st in steps:
        hist = {int(k): v for k, v in (st.get("layers") or {}).items()}
        total = sum(hist.values()) or 1
        # share of candidates passing layer L (reaching layer >= L)
        passing = [sum(v for lay, v in hist.items() if lay >= L) / total for L in range(1, 6)]
        per_step.append({"step": st["step"], "candidates": st.get("candidates", 0), "admitted": st.get("admitted", 0),
                         "pass": [round(p, 3) for p in passing], "active": st.get("active", 0),
                         "solver_mean": st.get("solver_mean", 0.0)})
    rates = [r["pass_rate"] for r in store.candidates() if r["layer"] == 5 and r["pass_rate"] is not None]
    counts = np.histogram(rates, bins=np.linspace(0, 1, 10))[0].tolist() if rates else []
    heldout = {step: float(np.mean([r[3] for r in rows])) for step, rows in store.heldout().items()}
    return {"steps": per_step, "pool": store.pool(), "pass_rate_hist": counts, "heldout": heldout,
            "embedder": store.get_meta("embedder"), "model_calls": store.count_calls()}


def plot_layers(store: EnvStore, path: Path) -> Path | None:
    """Share of candidates passing L1..L5 at each step; None when no step finished."""
    data = summary(store)["steps"]
    if not data:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    xs = [d["step"] for d in data]
    for L in range(5):
        ax.plot(xs, [d["pass"][L] for d in data], marker="o", ms=3, label=LAYERS[L])
    from matplotlib.ticker import MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("synthesis step")
    ax.set_ylabel("share of candidates passing")
    ax.set_ylim(-0.02, 1.02)
    ax.set_title("Admission layer pass rates over steps")
    ax.legend(fontsize=8, loc="lower right")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def render_text(data: dict[str, Any]) -> str:
    lines = [f"embedder: {data['embedder']}   stored model outputs: {data['model_calls']}", "",
             "step  cand  L1    L2    L3    L4    L5    admitted  active  solver"]
    for d in data["steps"]:
        lines.append(f"{d['step']:>4}  {d['candidates']:>4}  " + "  ".join(f"{p:4.2f}" for p in d["pass"])
                     + f"  {d['admitted']:>8}  {d['active']:>6}  {d['solver_mean']:.2f}")
    lines += ["", f"pool ({len(data['pool'])} environments):"]
    for e in data["pool"]:
        state = f"retired at step {e['retired_step']}" if e["retired_step"] is not None else "active"
        lines.append(f"  {e['env_id']:>7}  {e['name']:<24} added at step {e['step_added']:<4} a_m={e['pass_rate']:.2f}  {state}")
    if data["pass_rate_hist"]:
        lines += ["", "pass rate a_m of the candidates passing L5 (9 bins over [0, 1]): "
                  + " ".join(str(c) for c in data["pass_rate_hist"])]
    if data["heldout"]:
        lines += ["", "held-out solver accuracy on the seed environments: "
                  + ", ".join(f"{'before training' if k == 0 else f'after step {k}'}: {v:.3f}"
                            for k, v in sorted(data["heldout"].items()))]
    return "\n".join(lines)


def export(store: EnvStore, out: Path, executor: Any, instances: int = 20, call_timeout: float = 2.0) -> dict[str, Any]:
    """Every pool environment as a file `envs check` accepts, and a JSONL of prompt/answer pairs."""
    from evoforge.envs.admission import request
    from evoforge.sandbox import Status

    files = out / "envs"
    files.mkdir(parents=True, exist_ok=True)
    pool = store.pool()
    reqs = []
    for e in pool:
        (files / f"{e['env_id']}_{e['name']}.py").write_text(e["code"] if e["code"].endswith("\n") else e["code"] + "\n")
        cases = [[20_000_000 + i, 1 + i % e["max_difficulty"]] for i in range(instances)]
        reqs.append((request(e["code"], "sample", {"cases": cases, "call_timeout": call_timeout}, 60.0, 1024)[0], cases))
    rows = 0
    with open(out / "dataset.jsonl", "w", encoding="utf-8") as f:
        for e, (res, (_, cases)) in zip(pool, zip(executor.run_many([r for r, _ in reqs]) if reqs else [], reqs)):
            if res.status is not Status.OK:
                continue
            for (seed, d), item in zip(cases, res.value):
                if "prompt" in item:
                    f.write(json.dumps({"env": e["name"], "env_id": e["env_id"], "seed": seed, "difficulty": d,
                                        "prompt": item["prompt"], "answer": item["answer"]}) + "\n")
                    rows += 1
    return {"files": len(pool), "rows": rows, "dir": str(out)}
