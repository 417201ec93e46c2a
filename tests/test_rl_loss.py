"""The clipped policy-gradient loss: asymmetric clipping, truncated importance sampling,
token-level mean, and the learner's log-probs."""
from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
torch.set_num_threads(1)

from evoforge.rl.loss import clipped_pg_loss, completion_logprobs, importance_weights  # noqa: E402


def one_token(ratio: float, adv: float, sampler_gap: float = 0.0, cap: float | None = 2.0):
    """Loss and gradient for one token with the given ratio, advantage, log(pi_old / pi_sampler)."""
    new = torch.tensor([[math.log(ratio)]], requires_grad=True)
    old = torch.zeros(1, 1)
    sampler = torch.full((1, 1), -sampler_gap)
    parts = clipped_pg_loss(new, old, sampler, torch.tensor([adv]), torch.ones(1, 1), tis_cap=cap)
    parts.loss.backward()
    return float(parts.loss), float(new.grad), parts


@pytest.mark.parametrize(
    "ratio, adv, loss, clipped, side",
    [
        (1.5, 1.0, -1.28, True, "high"),  # positive advantage: capped at 1 + eps_high
        (1.1, 1.0, -1.1, False, None),
        (0.5, 1.0, -0.5, False, None),  # the lower bound never helps a positive advantage
        (0.5, -1.0, 0.8, True, "low"),  # negative advantage: capped at 1 - eps_low
        (1.5, -1.0, 1.5, False, None),  # the pessimistic side stays unclipped
    ],
)
def test_asymmetric_clipping(ratio, adv, loss, clipped, side):
    got, grad, parts = one_token(ratio, adv)
    assert got == pytest.approx(loss, abs=1e-6)
    if clipped:
        assert grad == 0.0
        assert int(parts.clipped_high if side == "high" else parts.clipped_low) == 1
    else:
        # d/dlogp of -ratio*adv = -ratio*adv
        assert grad == pytest.approx(-ratio * adv, rel=1e-5)
        assert int(parts.clipped_low) == int(parts.clipped_high) == 0


def test_truncated_importance_weights():
    old = torch.tensor([math.log(3.0), math.log(1.5), math.log(0.2)])
    sampler = torch.zeros(3)
    torch.testing.assert_close(importance_weights(old, sampler, 2.0), torch.tensor([2.0, 1.5, 0.2]))
    torch.testing.assert_close(importance_weights(old, sampler, None), torch.ones(3))


def test_tis_scales_the_loss_and_counts_truncation():
    base, _, _ = one_token(1.0, 1.0, sampler_gap=0.0)
    half, _, _ = one_token(1.0, 1.0, sampler_gap=math.log(1.5))
    capped, _, parts = one_token(1.0, 1.0, sampler_gap=math.log(5.0))
    assert half == pytest.approx(1.5 * base) and capped == pytest.approx(2.0 * base)
    assert int(parts.tis_truncated) == 1


def test_token_level_mean_and_micro_batches_agree():
    torch.manual_seed(0)
    new = torch.randn(4, 6) * 0.1
    old = new + torch.randn(4, 6) * 0.05
    mask = torch.tensor([[1, 1, 1, 0, 0, 0], [1, 1, 1, 1, 1, 1], [0, 1, 0, 0, 0, 0], [1, 1, 0, 0, 0, 0]]).float()
    adv = torch.tensor([1.0, -0.5, 2.0, 0.3])
    total = float(mask.sum())
    whole = clipped_pg_loss(new, old, old, adv, mask).loss
    halves = sum(clipped_pg_loss(new[s], old[s], old[s], adv[s], mask[s], total_tokens=total).loss
                 for s in (slice(0, 2), slice(2, 4)))
    assert float(whole) == pytest.approx(float(halves), rel=1e-6)
    # token-level: equals the plain mean over masked tokens of -ratio * A (ratios near 1, none clipped)
    ratio = torch.exp(new - old)
    manual = -(ratio * adv[:, None] * mask).sum() / total
    clipped_any = ((ratio < 0.8) | (ratio > 1.28)).any()
    if not clipped_any:
        assert float(whole) == pytest.approx(float(manual), rel=1e-6)


def test_completion_logprobs_match_log_softmax():
    from evoforge.rl.toy import build_tiny_model, build_tiny_tokenizer

    tok = build_tiny_tokenizer()
    model = build_tiny_model(len(tok), tokenizer=tok)
    ids = torch.tensor([[1, 4, 5, 19, 2]])
    attn = torch.ones_like(ids)
    got = completion_logprobs(model, ids, attn, temperature=0.7)
    with torch.no_grad():
        logits = model(input_ids=ids).logits[0, :-1] / 0.7
        want = torch.log_softmax(logits, -1).gather(-1, ids[0, 1:, None]).squeeze(-1)
    torch.testing.assert_close(got[0].detach(), want, rtol=1e-5, atol=1e-5)


def test_left_padded_batch_scores_only_completions_like_single_rows():
    from evoforge.rl.toy import build_tiny_model, build_tiny_tokenizer

    tok = build_tiny_tokenizer()
    model = build_tiny_model(len(tok), tokenizer=tok)
    rows = [[1, 4, 5, 19, 2], [1, 10, 4, 5, 6, 7, 8, 19, 19, 2], [1, 11, 2]]
    width, keep = max(map(len, rows)), 4
    ids = torch.zeros(len(rows), width, dtype=torch.long)
    attn = torch.zeros_like(ids)
    for i, r in enumerate(rows):
        ids[i, width - len(r):] = torch.tensor(r)
        attn[i, width - len(r):] = 1
    with torch.no_grad():
        batch = completion_logprobs(model, ids, attn, keep=keep)
        assert batch.shape == (3, keep)
        for i, r in enumerate(rows):
            one = completion_logprobs(model, torch.tensor([r]), torch.ones(1, len(r), dtype=torch.long))[0]
            n = min(keep, len(r) - 1)
            torch.testing.assert_close(batch[i, keep - n:], one[-n:], rtol=1e-4, atol=1e-5)
