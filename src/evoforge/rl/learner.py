"""The learner: one clipped, importance-corrected policy-gradient update per engine step.

``HFLearner`` trains the hf backend's model in place (LoRA through peft, or every weight);
``VLLMLearner`` (evoforge.rl.vllm) trains its own copy and loads the adapter into a vLLM
server after each update. Both share the batch building and the loss here.
"""
from __future__ import annotations

import copy
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from evoforge.rl.advantages import group_advantages
from evoforge.rl.config import Learner, RLError, Rollout, TrainConfig
from evoforge.llm.hf_model import encode_completion, encode_prompt, eos_ids, require_torch


@dataclass
class Sequence:
    ids: list[int]  # prompt + completion
    n_prompt: int
    sampler_logprobs: list[float] | None  # one per completion token, or None (unknown)
    advantage: float


def lora_wrap(model: Any, cfg: TrainConfig) -> Any:
    """The model with a trainable LoRA adapter (an already loaded adapter stays and trains)."""
    from peft import LoraConfig, PeftModel, get_peft_model

    if isinstance(model, PeftModel):
        for name, p in model.named_parameters():
            p.requires_grad_("lora_" in name)
        return model
    target: Any = cfg.lora_target if cfg.lora_target == "all-linear" else cfg.lora_target.split(",")
    lcfg = LoraConfig(
        r=cfg.lora_rank,
        lora_alpha=cfg.lora_alpha if cfg.lora_alpha is not None else cfg.lora_rank,
        lora_dropout=0.0,  # no dropout: the learner must score exactly what the sampler drew
        target_modules=target,
        task_type="CAUSAL_LM",
    )
    return get_peft_model(model, lcfg)


class HFLearner(Learner):
    def __init__(self, cfg: TrainConfig, model: Any, tokenizer: Any, device: str, backend: Any = None):
        torch = require_torch()
        torch.manual_seed(cfg.seed)
        self.cfg = cfg
        self.backend = backend
        self.tokenizer = tokenizer
        self.device = device
        self.step = 0
        self.shaping = cfg.shaping()
        if cfg.full_finetune:
            self.model = model
            for p in self.model.parameters():
                p.requires_grad_(True)
            # the KL term needs the initial policy; a frozen copy only when asked for
            self.ref_model = copy.deepcopy(model).eval() if cfg.kl_lambda > 0 else None
        else:
            self.model = lora_wrap(model, cfg)
            self.ref_model = None  # the base model = the adapter switched off
        if cfg.gradient_checkpointing and hasattr(self.model, "gradient_checkpointing_enable"):
            self.model.gradient_checkpointing_enable()
        self.model.eval()  # no dropout in RL scoring
        self.params = [p for p in self.model.parameters() if p.requires_grad]
        if not self.params:
            raise RLError("no trainable parameters (check lora_target for this architecture)")
        self.optimizer = torch.optim.AdamW(self.params, lr=cfg.lr, weight_decay=cfg.weight_decay)
        self.eos = eos_ids(tokenizer, self.model)
        self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else (self.eos or [0])[0]

    # -- batch -----------------------------------------------------------------------
    def temperature(self) -> float:
        if self.cfg.sampling_temperature is not None:
            return self.cfg.sampling_temperature
        return float(getattr(self.backend, "last_temperature", 1.0) or 1.0)

    def to_sequence(self, r: Rollout, advantage: float) -> Sequence | None:
        resp = r.response
        prompt_ids = resp.prompt_token_ids or encode_prompt(self.tokenizer, r.prompt)
        if resp.token_ids is not None:
            comp = list(resp.token_ids)
            lps = list(resp.logprobs) if resp.logprobs is not None and len(resp.logprobs) == len(comp) else None
        else:  # a backend that returns only text: re-tokenise, no sampler log-probs
            if not resp.text:
                return None
            comp, lps = encode_completion(self.tokenizer, resp.text, self.eos), None
        if not comp:
            return None
        return Sequence(list(prompt_ids) + comp, len(prompt_ids), lps, advantage)

    def build(self, groups: list[list[Rollout]]) -> tuple[list[Sequence], dict[str, float]]:
        seqs: list[Sequence] = []
        rewards_all, betas, nonzero_groups = [], [], 0
        for group in groups:
            if not group:
                continue
            rewards = np.array([r.reward for r in group], dtype=np.float64)
            adv, beta = group_advantages(
                rewards,
                self.cfg.estimator,
                beta=self.cfg.beta,
                kl_budget=self.cfg.kl_budget,
                normalize_std=self.cfg.normalize_std,
            )
            if not np.all(np.isfinite(adv)):
                raise RLError(f"non-finite advantages for rewards {rewards.tolist()} ({self.cfg.estimator})")
            rewards_all.extend(rewards.tolist())
            if beta is not None:
                betas.append(beta)
            nonzero_groups += int(np.any(adv != 0))
            for r, a in zip(group, adv):
                s = self.to_sequence(r, float(a))
                if s is not None:
                    seqs.append(s)
        stats = {
            "reward_mean": float(np.mean(rewards_all)) if rewards_all else 0.0,
            "reward_max": float(np.max(rewards_all)) if rewards_all else 0.0,
            "groups_with_signal": float(nonzero_groups),
        }
        if betas:
            stats["beta_mean"] = float(np.mean(betas))
        return seqs, stats

    def pad(self, seqs: list[Sequence]) -> dict[str, Any]:
        """Left-padded batch: every completion ends at the last column, so the model only needs
        logits for the last ``keep`` positions (see completion_logprobs)."""
        torch = require_torch()
        width = max(len(s.ids) for s in seqs)
        keep = max(len(s.ids) - s.n_prompt for s in seqs)
        b = len(seqs)
        ids = torch.full((b, width), self.pad_id, dtype=torch.long)
        attn = torch.zeros((b, width), dtype=torch.long)
        mask = torch.zeros((b, keep))
        sampler = torch.zeros((b, keep))
        has_sampler = torch.zeros((b, 1))
        adv = torch.tensor([s.advantage for s in seqs], dtype=torch.float32)
        for i, s in enumerate(seqs):
            ids[i, width - len(s.ids):] = torch.tensor(s.ids)
            attn[i, width - len(s.ids):] = 1
            n_comp = len(s.ids) - s.n_prompt
            mask[i, keep - n_comp:] = 1
            if s.sampler_logprobs is not None:
                sampler[i, keep - n_comp:] = torch.tensor(s.sampler_logprobs)
                has_sampler[i] = 1
        dev = self.device
        return {
            "ids": ids.to(dev), "attn": attn.to(dev), "mask": mask.to(dev), "keep": keep,
            "sampler": sampler.to(dev), "has_sampler": has_sampler.to(dev), "adv": adv.to(dev),
        }

    def ref_logprobs(self, mb: dict[str, Any], temp: float) -> Any:
        from evoforge.rl.loss import completion_logprobs

        torch = require_torch()
        with torch.no_grad():
            if self.ref_model is not None:
                return completion_logprobs(self.ref_model, mb["ids"], mb["attn"], temp, mb["keep"])
            with self.model.disable_adapter():
                return completion_logprobs(self.model, mb["ids"], mb["attn"], temp, mb["keep"])

    # -- update ----------------------------------------------------------------------
    def update(self, groups: list[list[Rollout]]) -> dict[str, float]:
        from evoforge.rl.loss import clipped_pg_loss, completion_logprobs

        torch = require_torch()
        t0 = time.perf_counter()
        seqs, stats = self.build(groups)
        total_tokens = float(sum(len(s.ids) - s.n_prompt for s in seqs))
        # zero advantage and no KL term: no gradient, but the tokens still count in the mean
        active = [s for s in seqs if s.advantage != 0.0 or self.cfg.kl_lambda > 0]
        metrics = dict(stats, tokens=total_tokens, sequences=float(len(seqs)), trained_sequences=float(len(active)))
        temp = self.temperature()
        mbs = [active[i : i + self.cfg.micro_batch_size] for i in range(0, len(active), self.cfg.micro_batch_size)]
        batches = [self.pad(mb) for mb in mbs]
        # logp_old: the learner before this batch; with one optimiser step it is logp_new.detach()
        olds: list[Any] = [None] * len(batches)
        refs: list[Any] = [None] * len(batches)
        if self.cfg.optimizer_steps > 1:
            with torch.no_grad():
                olds = [completion_logprobs(self.model, b["ids"], b["attn"], temp, b["keep"]) for b in batches]
        if self.cfg.kl_lambda > 0:
            refs = [self.ref_logprobs(b, temp) for b in batches]
        loss_sum = clip_lo = clip_hi = trunc = kl_sum = 0.0
        grad_norm = 0.0
        for _ in range(self.cfg.optimizer_steps):
            self.optimizer.zero_grad(set_to_none=True)
            for k, b in enumerate(batches):
                new = completion_logprobs(self.model, b["ids"], b["attn"], temp, b["keep"])
                old = olds[k] if olds[k] is not None else new.detach()
                # unknown sampler log-probs: take the learner's (importance weight 1)
                sampler = torch.where(b["has_sampler"] > 0, b["sampler"], old)
                adv = b["adv"][:, None].expand_as(new)
                if refs[k] is not None:  # A - lambda * log(pi/pi0), per token
                    log_ratio = (old - refs[k]) * b["mask"]
                    adv = adv - self.cfg.kl_lambda * log_ratio
                    kl_sum += float(log_ratio.sum())
                parts = clipped_pg_loss(
                    new, old, sampler, adv, b["mask"],
                    eps_low=self.cfg.eps_low, eps_high=self.cfg.eps_high,
                    tis_cap=self.cfg.tis_cap, total_tokens=total_tokens,
                )
                parts.loss.backward()
                loss_sum += float(parts.loss.detach())
                clip_lo += float(parts.clipped_low)
                clip_hi += float(parts.clipped_high)
                trunc += float(parts.tis_truncated)
            if batches:
                if self.cfg.grad_clip is not None:
                    grad_norm = float(torch.nn.utils.clip_grad_norm_(self.params, self.cfg.grad_clip))
                else:
                    grad_norm = float(torch.sqrt(sum((p.grad.float() ** 2).sum() for p in self.params if p.grad is not None)))
                self.optimizer.step()
        self.step += 1
        steps_tokens = max(total_tokens * self.cfg.optimizer_steps, 1.0)
        dt = time.perf_counter() - t0
        metrics.update(
            loss=loss_sum / self.cfg.optimizer_steps,
            grad_norm=grad_norm,
            clip_low_frac=clip_lo / steps_tokens,
            clip_high_frac=clip_hi / steps_tokens,
            tis_truncated_frac=trunc / steps_tokens,
            seconds=dt,
            tokens_per_s=total_tokens / dt if dt > 0 else 0.0,
            step=float(self.step),
        )
        if self.cfg.kl_lambda > 0:
            metrics["kl_ref_per_token"] = kl_sum / steps_tokens
        self.after_update(metrics)
        return metrics

    def after_update(self, metrics: dict[str, float]) -> None:
        """Hook: the vLLM learner pushes the new adapter to the server here."""

    # -- checkpoints -----------------------------------------------------------------
    def save(self, directory: Path) -> None:
        torch = require_torch()
        d = Path(directory)
        d.mkdir(parents=True, exist_ok=True)
        if self.cfg.full_finetune:
            self.model.save_pretrained(str(d / "model"))
            self.tokenizer.save_pretrained(str(d / "model"))
        else:
            self.model.save_pretrained(str(d / "adapter"))
        torch.save(self.optimizer.state_dict(), d / "optimizer.pt")
        state = {"step": self.step, "estimator": self.cfg.estimator, "full_finetune": self.cfg.full_finetune}
        (d / "learner.json").write_text(json.dumps(state, indent=2))

    def load(self, directory: Path) -> None:
        torch = require_torch()
        d = Path(directory)
        meta = d / "learner.json"
        if not meta.is_file():
            raise RLError(f"{d} is not a learner checkpoint (no learner.json)")
        state = json.loads(meta.read_text())
        if bool(state.get("full_finetune")) != self.cfg.full_finetune:
            raise RLError(f"{d}: checkpoint full_finetune={state.get('full_finetune')} but config says {self.cfg.full_finetune}")
        if self.cfg.full_finetune:
            from safetensors.torch import load_file

            files = sorted((d / "model").glob("*.safetensors"))
            if not files:
                raise RLError(f"{d}/model holds no safetensors weights")
            sd: dict[str, Any] = {}
            for f in files:
                sd.update(load_file(str(f)))
            self.model.load_state_dict(sd, strict=False)
        else:
            from peft import set_peft_model_state_dict
            from safetensors.torch import load_file

            f = d / "adapter" / "adapter_model.safetensors"
            if not f.is_file():
                raise RLError(f"{d}: no adapter/adapter_model.safetensors")
            set_peft_model_state_dict(self.model, load_file(str(f)))
        self.optimizer.load_state_dict(torch.load(d / "optimizer.pt", map_location=self.device))
        self.step = int(state.get("step", 0))
        self.after_update({})  # a server must serve the restored adapter too
