"""The ``hf`` backend: a local Hugging Face causal LM that samples n responses per prompt and
returns token ids and sampler log-probs (for RL). The RL learner trains the same model object
in place, so every step samples from the freshly updated policy.

Sampling is a plain KV-cache loop (not ``model.generate``) so the distribution is exactly
softmax(logits / temperature) over the full vocabulary (no top-k/top-p from a model's
generation_config), and the recorded log-prob is the log-prob of that distribution.
"""
from __future__ import annotations

import time
from typing import Any

from evoforge.llm.base import BACKENDS, Backend, GenerationConfig, Prompt, Response, sample_seed


@BACKENDS.register("hf")
class HFBackend(Backend):
    name = "hf"

    def __init__(
        self,
        model: Any = "smollm2",
        tokenizer: Any = None,
        adapter: str | None = None,
        device: str = "auto",
        dtype: str = "auto",
        seed: int | None = None,
        threads: int | None = None,
        max_prompt_tokens: int | None = None,
    ):
        from evoforge.llm.hf_model import eos_ids, load_model_and_tokenizer, require_torch

        torch = require_torch()
        from evoforge.llm.threads import threads_by_load

        torch.set_num_threads(threads_by_load(threads))  # the free cores now, unless given
        if isinstance(model, str):
            self.model_name = model
            self.model, self.tokenizer, self.device = load_model_and_tokenizer(model, device, dtype)
        else:  # a model object built by the caller (tests, benchmarks)
            if tokenizer is None:
                raise ValueError("hf backend: a model object needs its tokenizer")
            self.model_name = type(model).__name__
            self.model, self.tokenizer = model, tokenizer
            self.device = str(next(model.parameters()).device)
        self.eos = eos_ids(self.tokenizer, self.model)
        self.pad_id = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else (self.eos or [0])[0]
        self.seed = seed
        self.max_prompt_tokens = max_prompt_tokens
        self.last_temperature = 1.0
        # (B, n) when the run config leaves them unset: the paper's 32 x 16 is far too much for a CPU
        self.preferred_batch = (2, 4) if self.device == "cpu" else (8, 16)
        self._calls = 0
        self._cache_kw = _cache_kwarg(self.model)
        if adapter:
            self.load_adapter(adapter)

    def load_adapter(self, path: str) -> None:
        """Wrap the base model with a saved LoRA adapter (ThetaEvolve's RL checkpoint for inference)."""
        from pathlib import Path

        from evoforge.llm.hf_model import ModelError

        p = Path(path).expanduser()
        if (p / "adapter").is_dir():  # a learner checkpoint directory
            p = p / "adapter"
        if not (p / "adapter_config.json").is_file():
            raise ModelError(f"adapter {path!r}: no adapter_config.json (expected a LoRA checkpoint directory)")
        from peft import PeftModel

        self.model = PeftModel.from_pretrained(self.model, str(p), is_trainable=True)
        self.model.eval()

    # -- generation -------------------------------------------------------------------
    def generate(self, prompts: list[Prompt], cfg: GenerationConfig) -> list[list[Response]]:
        from evoforge.llm.hf_model import encode_prompt

        self.last_temperature = cfg.temperature if cfg.temperature > 0 else 1.0
        out: list[list[Response]] = []
        for i, prompt in enumerate(prompts):
            ids = encode_prompt(self.tokenizer, prompt)
            if self.max_prompt_tokens and len(ids) > self.max_prompt_tokens:
                err = f"prompt has {len(ids)} tokens, over max_prompt_tokens={self.max_prompt_tokens}"
                out.append([Response(text="", error=err, prompt_tokens=len(ids)) for _ in range(cfg.n)])
                continue
            seed = sample_seed(cfg, self.seed, self._calls, i)
            t0 = time.perf_counter()
            toks, lps = self.sample(ids, cfg.n, cfg.temperature, cfg.max_tokens, seed)
            dt = time.perf_counter() - t0
            group = []
            for t, lp in zip(toks, lps):
                text = self.tokenizer.decode(t, skip_special_tokens=True)
                group.append(
                    Response(
                        text=text,
                        prompt_tokens=len(ids),
                        completion_tokens=len(t),
                        token_ids=t,
                        logprobs=lp,
                        prompt_token_ids=list(ids),
                        latency=dt,
                    )
                )
            out.append(group)
        self._calls += 1
        return out

    def sample(
        self, prompt_ids: list[int], n: int, temperature: float, max_new_tokens: int, seed: int
    ) -> tuple[list[list[int]], list[list[float]]]:
        """n completions of one prompt, batched; each ends at (and includes) an EOS token."""
        import torch

        gen = torch.Generator(device=self.device)
        gen.manual_seed(seed)
        eos = torch.tensor(self.eos, device=self.device, dtype=torch.long)
        was_training = self.model.training
        self.model.eval()
        toks: list[list[int]] = [[] for _ in range(n)]
        lps: list[list[float]] = [[] for _ in range(n)]
        with torch.no_grad():
            # the prompt is decoded once and its cache shared by the n samples (not n prefills)
            ids = torch.tensor([prompt_ids], device=self.device, dtype=torch.long)
            res = self.model(input_ids=ids, use_cache=True)
            past, logits = _repeat_cache(_cache_of(res), n), res.logits[:, -1, :].expand(n, -1)
            done = torch.zeros(n, dtype=torch.bool, device=self.device)
            for _ in range(max_new_tokens):
                logits = logits.float()
                if temperature > 0:
                    logp = torch.log_softmax(logits / temperature, dim=-1)
                    nxt = torch.multinomial(logp.exp(), 1, generator=gen).squeeze(-1)
                else:  # greedy; log-prob of the untempered distribution
                    logp = torch.log_softmax(logits, dim=-1)
                    nxt = logp.argmax(-1)
                tok_lp = logp.gather(-1, nxt[:, None]).squeeze(-1)
                for j in torch.nonzero(~done).flatten().tolist():
                    toks[j].append(int(nxt[j]))
                    lps[j].append(float(tok_lp[j]))
                done |= torch.isin(nxt, eos) if eos.numel() else torch.zeros_like(done)
                if bool(done.all()):
                    break
                nxt = torch.where(done, torch.full_like(nxt, self.pad_id), nxt)
                res = self.model(input_ids=nxt[:, None], use_cache=True, **{self._cache_kw: past})
                past, logits = _cache_of(res), res.logits[:, -1, :]
        if was_training:
            self.model.train()
        return toks, lps


def _cache_kwarg(model: Any) -> str:
    """transformers 5 renamed ``past_key_values`` to ``cache``; take whichever forward accepts."""
    import inspect

    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    params = inspect.signature(type(base).forward).parameters
    return "cache" if "cache" in params else "past_key_values"


def _repeat_cache(past: Any, n: int) -> Any:
    """A batch-1 KV cache as n identical rows."""
    if n == 1 or past is None:
        return past
    if hasattr(past, "batch_repeat_interleave"):  # transformers Cache objects
        past.batch_repeat_interleave(n)
        return past
    return tuple(tuple(t.repeat_interleave(n, dim=0) for t in layer) for layer in past)  # legacy tuples


def _cache_of(output: Any) -> Any:
    cache = getattr(output, "cache", None)
    return cache if cache is not None else getattr(output, "past_key_values", None)
