"""A learning test that can fail: a tiny randomly initialised causal LM, trained by the real
learner on rollouts from the hf backend, must raise its mean toy reward by many standard errors.

Toy task: the "program" is the completion; the verifier likes the constant 7 and scores the
number of 7s among the first 4 emitted tokens (shaped to [0, 3] with the band [0, 4]); an empty
program (immediate EOS) gets the -0.4 no-diff penalty. Untrained: ~1 liked token in 22.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("peft")
torch.set_num_threads(1)

from evoforge.llm.base import GenerationConfig, Prompt  # noqa: E402
from evoforge.llm.hf import HFBackend  # noqa: E402
from evoforge.rl import TrainConfig, make_learner  # noqa: E402
from evoforge.rl.toy import build_tiny_model, build_tiny_tokenizer, toy_groups  # noqa: E402

LENGTH = 4
PROMPTS = [Prompt(text="def x ="), Prompt(text="x = 0"), Prompt(text="return ( x )"), Prompt(text="x + 1")]


def mean_and_se(backend: HFBackend, liked: int, seed: int) -> tuple[float, float]:
    groups = toy_groups(backend, PROMPTS, GenerationConfig(n=64, temperature=1.0, max_tokens=LENGTH, seed=seed),
                        liked, LENGTH)
    r = np.array([x.reward for g in groups for x in g])
    return float(r.mean()), float(r.std(ddof=1) / math.sqrt(r.size))


@pytest.mark.parametrize("estimator", ["grpo", "entropic-adaptive"])
def test_training_beats_the_untrained_policy(estimator):
    tok = build_tiny_tokenizer()
    backend = HFBackend(build_tiny_model(len(tok), tokenizer=tok, seed=0), tok, seed=7)
    liked = tok.convert_tokens_to_ids("7")
    before, se_before = mean_and_se(backend, liked, seed=1000)

    cfg = TrainConfig(estimator=estimator, model="unused", device="cpu", lr=2e-2, weight_decay=0.0,
                      lora_rank=4, lora_target="q_proj,v_proj,o_proj,up_proj,down_proj,lm_head")
    learner = make_learner(cfg, backend)
    for step in range(20):
        groups = toy_groups(backend, PROMPTS, GenerationConfig(n=8, temperature=1.0, max_tokens=LENGTH, seed=step),
                            liked, LENGTH)
        learner.update(groups)

    after, se_after = mean_and_se(backend, liked, seed=1000)
    z = (after - before) / math.sqrt(se_before**2 + se_after**2)
    # one-sided two-sample z test; z > 5 means p < 3e-7 under "no improvement"
    assert z > 5, f"{estimator}: mean reward {before:.3f}±{se_before:.3f} -> {after:.3f}±{se_after:.3f} (z={z:.1f})"
    assert after > before + 0.5
