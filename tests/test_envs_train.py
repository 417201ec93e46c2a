"""EvoEnv end to end with a tiny model the test builds itself: a few synthesis steps with
training, both roles updated in one shared update; (slow) a resumed run equals the
uninterrupted one, adapter weights included.

The tiny model's vocabulary has one token per whole candidate file (so one token is one
environment), the answers 0/1/2, ACCEPT/REJECT, and the three role tags; a short supervised
warm-up teaches it which kind of token each role writes, uniformly, and RL must then prefer the
environment that gets admitted (a yes/no task it solves half the time) over broken ones."""
from __future__ import annotations

import copy
import random

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("peft")
torch.set_num_threads(1)

from evoforge.envs.candidates import CANDIDATES, PARITY  # noqa: E402
from evoforge.envs.prompts import generator_prompt, reviewer_prompt, solver_prompt  # noqa: E402
from evoforge.envs.seeds import SEED_NAMES, load_seed, seed_source  # noqa: E402
from evoforge.envs.store import EnvStore  # noqa: E402
from evoforge.envs.synth import SynthConfig, SynthContext, run_synthesis  # noqa: E402
from evoforge.llm.hf import HFBackend  # noqa: E402
from evoforge.rl import TrainConfig, make_learner  # noqa: E402
from evoforge.llm.hf_model import encode_prompt  # noqa: E402
from evoforge.rl.toy import SPECIALS, build_tiny_model, supervised_step  # noqa: E402

CHUNKS = [PARITY, CANDIDATES["syntax"][0], CANDIDATES["answer_leaked"][0]]
ROLE_TOKENS = {"generator": CHUNKS, "reviewer": ["ACCEPT"], "solver": ["0", "1"]}
WORDS = ["[generator]", "[reviewer]", "[solver]", "block.", "why.", "answer.", "ACCEPT", "REJECT", "0", "1", "2"]
CFG = dict(steps=2, generator_prompts=2, generator_n=4, shots=1, k_rev=1, m=8, solver_envs=2, solver_n=4,
           heldout_per_env=0, max_tokens_generator=2, max_tokens_review=2, max_tokens_solver=2, check_timeout=30.0,
           embedder="lexical")


def tiny_tokenizer():
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {w: i for i, w in enumerate(SPECIALS + WORDS + CHUNKS)}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.decoder = decoders.Fuse()
    return PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", bos_token="<s>", eos_token="</s>",
                                   unk_token="<unk>", clean_up_tokenization_spaces=False)


def role_prompts(rng: random.Random):
    env = load_seed(rng.choice(SEED_NAMES))
    inst, ans = env.generate(rng.randrange(100), 1)
    return {"generator": generator_prompt([seed_source(rng.choice(SEED_NAMES))]),
            "reviewer": reviewer_prompt(rng.choice(CHUNKS), env.render(inst), env.format_answer(ans)),
            "solver": solver_prompt(env.render(inst))}


def warm_up(model, tok, steps=60, lr=1e-2):
    """Supervised: each role writes one of its tokens, uniformly (no preference among them)."""
    rng = random.Random(0)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    for _ in range(steps):
        rows = []
        for role, p in role_prompts(rng).items():
            ids = encode_prompt(tok, p)
            for target in ROLE_TOKENS[role]:  # every token of the role once: uniform targets
                rows.append((ids, [tok.convert_tokens_to_ids(target), tok.eos_token_id]))
        supervised_step(model, opt, rows, tok.pad_token_id)
    model.eval()


@pytest.fixture(scope="module")
def warmed():
    tok = tiny_tokenizer()
    model = build_tiny_model(len(tok), tokenizer=tok, hidden=32, layers=2)
    warm_up(model, tok)
    return model, tok


def synth(model, tok, pool, run_dir, steps=2, hook=None):
    backend = HFBackend(copy.deepcopy(model), tok, seed=5)
    learner = make_learner(TrainConfig(estimator="grpo", model="unused", device="cpu", lr=2e-2, weight_decay=0.0,
                                       lora_rank=4, lora_target="q_proj,v_proj,o_proj,up_proj,down_proj,lm_head"),
                           backend)
    run_dir.mkdir(parents=True, exist_ok=True)
    ctx = SynthContext(SynthConfig(**dict(CFG, steps=steps)), run_dir, EnvStore(run_dir / "run.db"), backend, pool,
                       learner=learner, hook=hook)
    try:
        run_synthesis(ctx)
    finally:
        ctx.store.close()
    return ctx, backend, learner


def chunk_logprobs(backend, tok, seed_name="knapsack"):
    ids = encode_prompt(tok, generator_prompt([seed_source(seed_name)]))
    with torch.no_grad():
        logits = backend.model(input_ids=torch.tensor([ids])).logits[0, -1].float()
    lp = torch.log_softmax(logits, -1)
    return [float(lp[tok.convert_tokens_to_ids(c)]) for c in CHUNKS]


def test_synthesis_trains_both_roles(warmed, pool, tmp_path):
    model, tok = warmed
    before = chunk_logprobs(HFBackend(copy.deepcopy(model), tok), tok)
    ctx, backend, learner = synth(model, tok, pool, tmp_path / "run")
    steps = EnvStore(tmp_path / "run" / "run.db").steps()
    assert learner.step == 2 and (tmp_path / "run" / "checkpoints" / "step_2" / "adapter").is_dir()
    assert any(st["generator_groups_with_signal"] > 0 and st["solver_groups_with_signal"] > 0 for st in steps), steps
    assert all(st["train"]["trained_sequences"] > 0 for st in steps)
    assert sum(st["admitted"] for st in steps) >= 1  # the yes/no environment got in
    after = chunk_logprobs(backend, tok)
    # the admitted environment (parity, reward ~1.6+) gained on the broken file (syntax, reward 0)
    assert after[0] - after[1] > before[0] - before[1], (before, after)


def _adapter(learner):
    return {k: v.detach().clone() for k, v in learner.model.named_parameters() if "lora_" in k}


@pytest.mark.slow
def test_resumed_training_run_equals_the_uninterrupted_one(warmed, pool, tmp_path):
    model, tok = warmed
    _, _, straight = synth(model, tok, pool, tmp_path / "a", steps=3)

    def kill(name, k):
        if (name, k) == ("envs_learn", 2):
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        synth(model, tok, pool, tmp_path / "b", steps=3, hook=kill)
    ctx, _, resumed = synth(model, tok, pool, tmp_path / "b", steps=3)
    a, b = EnvStore(tmp_path / "a" / "run.db"), EnvStore(tmp_path / "b" / "run.db")
    for table in ("envs_calls", "envs_candidates", "envs_pool", "envs_solver"):
        assert list(a.iter_table(table)) == list(b.iter_table(table)), table
    wa, wb = _adapter(straight), _adapter(resumed)
    assert wa.keys() == wb.keys() and all(torch.equal(wa[k], wb[k]) for k in wa)
    assert resumed.step == 3
