"""PACEvolve's idea memory: every operation driven by a scripted model, checked by hand; resume."""
from __future__ import annotations

import json
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from evoforge.embeddings import LexicalEmbedder, cosine
from evoforge.engine.config import ConfigError, build_config
from evoforge.memory import protocol as P
from evoforge.memory.view import read_memory

sys.path.insert(0, str(Path(__file__).parent))
from memory_scenario import Killed, MemoryScript, make_engine, pool_of  # noqa: E402

SCENARIO = Path(__file__).parent / "memory_scenario.py"


def _ops(run_dir: Path) -> dict[tuple[int, str], list]:
    db = sqlite3.connect(run_dir / "run.db")
    out = {}
    for step, phase, ops in db.execute("SELECT step, phase, ops FROM memory_steps"):
        record = json.loads(ops)
        out[(step, phase)] = ([(o["op"], o.get("idea"), o.get("kind") or o.get("text") or o.get("reason")
                                or tuple(o.get("findings", ())))
                               for o in record["ops"] if o["op"] != "record"], record.get("ideas"))
    db.close()
    return out


def test_the_similarities_the_scenario_relies_on():
    e = LexicalEmbedder()
    sims = cosine(e.embed(["use a grid layout with jitter", "random restarts of the layout"]),
                  e.embed(["use a grid layout", "random restarts", "simulated annealing"]))
    assert sims[0, 0] >= 0.3 > max(sims[0, 1], sims[0, 2])  # a merge candidate for #1 only
    assert sims[1, 1] >= 0.6  # repeats the pruned "random restarts"


def test_scripted_model_drives_every_operation(tmp_path):
    backend = MemoryScript()
    engine = make_engine(tmp_path, backend)
    engine.run()
    ops = _ops(tmp_path)
    # hand-computed: k_hyp 2, k_idea 3, two picks of two children each per step, lockstep; child j of
    # pick i at step k scores 100 k + 10 i + j + 2
    assert ops[(1, "front")] == ([("add", None, "use a grid layout"), ("add", None, "random restarts")], [1, 2])
    assert ops[(1, "tail")] == ([], None)  # 2 hypotheses each: not more than k_hyp
    assert ops[(2, "front")] == ([("merge", 1, "a grid layout with small random jitter"),  # merged by the model
                                  ("add", None, "simulated annealing"),  # no similar idea: added unasked
                                  ("malformed", None, "select")], [3, 3])  # '#9' unknown: least-tested #3
    assert ops[(2, "tail")] == ([("summarise", 3, ("annealing helps a little", "too slow at high temperature"))], None)
    assert ops[(3, "front")] == ([("add", None, "gradient descent on positions")], [4, 1])
    assert ops[(3, "tail")] == ([("malformed", None, "summarise"),
                                 ("summarise", 1, ("4 attempts (4 evaluated): best 313",)),  # from the numbers
                                 ("prune", 2, "useless: random restarts never beat the parent")], None)
    assert ops[(4, "front")] == ([("reject", None, "random restarts of the layout"),  # the failure memory
                                  ("add", None, "hexagonal lattice packing"),
                                  ("malformed", None, "select")], [5, 5])
    assert ops[(4, "tail")] == ([("summarise", 5, ("hexagons fit well",)), ("malformed", None, "prune"),
                                 ("prune", 3, "fallback: 4 attempts, best 213")], None)  # worst best score
    assert ops[(5, "front")] == ([("malformed", None, "propose")], [4, 5])
    assert ops[(5, "tail")] == ([("malformed", None, "summarise"),
                                 ("summarise", 4, ("4 attempts (4 evaluated): best 503",))], None)

    pool = pool_of(engine)
    assert [(i.id, i.tested, i.best) for i in pool.active()] == [(1, 4, 313.0), (4, 4, 503.0), (5, 6, 513.0)]
    assert [(i.id, i.pruned_step) for i in pool.failures()] == [(2, 3), (3, 4)]
    assert pool.rejected[0]["reason"].startswith("repeats dropped idea #2 (useless")
    assert pool.malformed == {"select": 2, "summarise": 2, "prune": 1, "propose": 1}
    # a handful of model calls per step, never B x n of them
    per_step = {}
    for k, _ in backend.calls:
        per_step[k] = per_step.get(k, 0) + 1
    assert max(per_step.values()) <= 5 and sum(per_step.values()) == 17
    # the code prompts carry the chosen idea and what its attempts found
    step3 = [p for p in backend.code_prompts if "idea #3 " in p.text]
    assert step3 and all("simulated annealing" in p.text for p in step3)
    later = [p for p in backend.code_prompts if "idea #5 " in p.text]
    assert later and "- hexagons fit well" in later[-1].text  # its key finding (step 4)
    step2 = [p for p in backend.code_prompts if "idea #1 " in p.text]
    assert any("attempt: child" in p.text for p in step2)  # hypotheses not yet summarised
    view = read_memory(sqlite3.connect(tmp_path / "run.db"))
    assert {k: view[k] for k in ("ideas", "hypotheses", "failures", "malformed", "model_calls")} == {
        "ideas": 3, "hypotheses": 20, "failures": 2, "model_calls": 17,
        "malformed": {"select": 2, "summarise": 2, "prune": 1, "propose": 1}}


def test_a_kill_during_the_memory_update_resumes_to_the_same_pool_without_repeated_calls(tmp_path):
    whole = make_engine(tmp_path / "whole", MemoryScript())
    whole.run()
    with pytest.raises(Killed):
        make_engine(tmp_path / "cut", MemoryScript(kill_at=(3, "summarise"))).run()
    again = MemoryScript()
    resumed = make_engine(tmp_path / "cut", again)
    resumed.run()
    assert pool_of(resumed).state_dict() == pool_of(whole).state_dict()
    # nothing already answered is asked again: step 3's propose and select were stored
    assert again.calls[0] == (3, "summarise") and (3, "propose") not in again.calls
    assert all(k >= 3 for k, _ in again.calls)


@pytest.mark.parametrize("pipeline", ["lockstep", "overlap"])
def test_sigkill_at_random_moments_then_resume_equals_the_uninterrupted_run(tmp_path, pipeline):
    whole = make_engine(tmp_path / "whole", MemoryScript(), pipeline=pipeline)
    whole.run()
    t0 = time.monotonic()  # how long the process takes, so that the kills land inside it
    subprocess.run([sys.executable, str(SCENARIO), str(tmp_path / "timed"), "0.03", pipeline], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=300)
    duration = time.monotonic() - t0
    rng = random.Random(7)
    run_dir = tmp_path / "cut"
    kills = 0
    for _ in range(3):
        proc = subprocess.Popen([sys.executable, str(SCENARIO), str(run_dir), "0.03", pipeline],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            proc.wait(timeout=rng.uniform(0.3, 0.8) * duration)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=30)
            kills += 1
    assert kills >= 1, "every run finished before its kill"
    resumed = make_engine(run_dir, MemoryScript(), pipeline=pipeline)
    resumed.run()
    assert pool_of(resumed).state_dict() == pool_of(whole).state_dict()
    calls = [sqlite3.connect(d / "run.db").execute("SELECT step, kind, answer FROM memory_calls ORDER BY step, kind")
             .fetchall() for d in (run_dir, tmp_path / "whole")]
    assert calls[0] == calls[1]  # the same conversation, each answer stored once


def test_memory_with_the_builtin_operator_is_refused_in_one_line():
    with pytest.raises(ConfigError) as info:
        build_config({"memory": {"enabled": True}})
    assert "needs a language model backend" in str(info.value) and "\n" not in str(info.value)


@pytest.mark.parametrize("answer, ok", [
    ("IDEA: a\nIDEA: b", True), ("1. IDEA: a", True), ("<think>hmm</think>\nIDEA: a", True),
    ("ideas: a, b", False), ("", False), ("IDEA: a\nIDEA: b\nIDEA: c\nIDEA: d", False), ("IDEA: " + "x" * 400, False),
])
def test_parse_propose(answer, ok):
    ideas, bad = P.parse_propose(answer, 3, 300)
    assert bad is not ok and len(ideas) <= 3


def test_parse_classify_select_summarise_prune_flag_every_malformed_kind():
    cands = {0: [1, 2], 1: [3]}
    d, bad = P.parse_classify("N1: MERGE #2: refined\nN2: NEW", cands, 100)
    assert not bad and d[0].merge_into == 2 and d[1].merge_into is None
    assert P.parse_classify("N1: MERGE #7: x\nN2: NEW", cands, 100)[1]  # not a candidate
    assert P.parse_classify("N1: NEW", cands, 100)[1]  # N2 missing
    assert P.parse_classify("N1: MERGE #1:\nN2: NEW", cands, 100)[1]  # no refined text
    assert not P.parse_classify("N1: NEW\nN2: NEW\nN3: NEW", cands, 100)[1]  # NEW for an idea without candidates
    assert P.parse_select("1: #1\n2: #2", 2, {1, 2}) == ([1, 2], False)
    assert P.parse_select("1: #1\n2: #5", 2, {1, 2}) == ([1, None], True)
    assert P.parse_summarise("#1: a; b", {1}, 3, 50) == ({1: ["a", "b"]}, False)
    assert P.parse_summarise("#1: " + "y" * 60, {1}, 3, 50)[1]  # a finding longer than allowed
    assert P.parse_summarise("#1: a; b; c; d", {1}, 3, 50)[1]
    assert P.parse_prune("DROP #2: useless: x", 1, {1, 2}, 100) == ({2: "useless: x"}, False)
    assert P.parse_prune("DROP #9: useless", 1, {1, 2}, 100)[1]


def test_templates_are_overridable(tmp_path):
    (tmp_path / "memory_select.txt").write_text("Pick $count ideas from:\n$pool\n(task: $task)")
    t = P.load_templates(tmp_path)
    assert t["select"].template.startswith("Pick $count") and "Propose up to" in t["propose"].template


def test_answer_grammars_name_only_existing_ideas_and_compile_where_llama_cpp_is():
    from evoforge.memory import grammars as G

    gs = {"propose": G.propose(3), "select": G.select(2, [4, 1]), "classify": G.classify({0: [1, 2], 2: [3]}),
          "summarise": G.summarise([3, 5], 3), "prune": G.prune(2, [1, 2, 3])}
    assert 'id ::= "1" | "4"' in gs["select"] and gs["select"].count('": #"') == 0
    assert '"N3: "' in gs["classify"] and 'id2 ::= "3"' in gs["classify"]
    assert "{" not in "".join(gs.values())  # no {m,n}: every engine reads these
    try:
        from llama_cpp import LlamaGrammar
    except ImportError:
        return
    for g in gs.values():
        LlamaGrammar.from_string(g, verbose=False)


def test_memory_prompts_carry_their_grammar(tmp_path):
    seen = []

    class Recorder(MemoryScript):
        def generate(self, prompts, cfg):
            seen.extend(p.meta for p in prompts if "memory" in p.meta)
            return super().generate(prompts, cfg)

    make_engine(tmp_path, Recorder()).run()
    select = [m for m in seen if m["memory"] == "select" and m["step"] == 3]
    assert select and 'id ::= "1" | "2" | "3" | "4"' in select[0]["grammar"]


def test_verbatim_repeats_are_folded_without_asking():
    from evoforge.memory.config import MemoryConfig
    from evoforge.memory.planner import Context, plan_front
    from evoforge.memory.pool import IdeaPool

    pool = IdeaPool()
    pool.apply({"op": "add", "text": "Loop-2;", "step": 1})
    asked = []

    def ask(kind, text, grammar):
        asked.append(kind)
        return {"propose": "IDEA: loop 2\nIDEA: simulated annealing\nIDEA: Simulated annealing.", "select": "1: #1"}.get(kind, "")

    ctx = Context("t", "larger", None, P.load_templates(), MemoryConfig(similarity="lexical"), LexicalEmbedder())
    plan = plan_front(pool, ctx, ask, 2, 1)
    assert [(o["op"], o.get("idea"), o.get("text")) for o in plan.ops] == [
        ("merge", 1, "Loop-2;"), ("add", None, "simulated annealing")]
    assert "classify" not in asked  # "simulated annealing" has no similar idea to ask about
