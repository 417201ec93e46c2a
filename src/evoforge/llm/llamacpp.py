"""The ``llamacpp`` backend: a GGUF model in-process through llama-cpp-python (the ``llamacpp`` extra).

A local model in one command: ``--backend llamacpp --model smollm2`` (or ``gemma3-270m``, or
a path to a .gguf file). Why it is built the way it is:

* **n samples share the prompt's KV cache.** The prompt is decoded once into sequence 0 of a
  unified cache; sequences 1..m get it by ``seq_cp`` (no copy, cells are shared) and are decoded
  together, one token each per batch, so n samples cost about one prompt plus a batched decode.
  The next prompt reuses the longest common prefix (the task text is the same for every parent).
* **Sampling by temperature alone**, in numpy, over the full vocabulary: the returned token ids
  and log-probs (log softmax(logits / T)) are the sampler's own, as the RL learner needs.
* **Grammar-constrained decoding** (``Prompt.meta["grammar"]``, GBNF, see evoforge.edits.grammar):
  a drawn token the grammar rejects is removed and the draw repeated (rejection sampling gives
  exactly the masked distribution); after a few rejections the full mask is computed. The
  log-probs kept are the model's unmasked ones (what a learner recomputes).
* **CPUs whose AMX instructions fault** (some VMs advertise AMX, then SIGILL in
  ``ggml_backend_amx_mul_mat``): the model is loaded with ``use_extra_bufts=False``, which skips the
  AMX/repacked weight buffers at no measured cost.
* **The model's chat template** for instruction-tuned models, a plain completion prompt for base
  models (``chat="auto"``: the GGUF has a chat template and its name does not say "base").
* Threads: the free cores at load time (evoforge.llm.threads), unless ``threads`` is given.
"""
from __future__ import annotations

import contextlib
import ctypes
import math
import re
import time
from pathlib import Path
from typing import Any

import numpy as np

from evoforge.llm.base import BACKENDS, Backend, BackendError, GenerationConfig, Prompt, Response, sample_seed
from evoforge.llm.models import resolve_gguf
from evoforge.llm.threads import threads_by_load

_FENCE_LINE = re.compile(r"^[ \t]*```", re.MULTILINE)
_REPLACE_LINE = re.compile(r"^[ \t]*>{5,}[ \t]*REPLACE", re.MULTILINE)
_REJECT_TRIES = 8  # rejection-sampling draws before the full grammar mask is computed


def require_llama_cpp() -> Any:
    try:
        import llama_cpp
    except ImportError:
        raise BackendError(
            "the llamacpp backend needs llama-cpp-python: pip install 'evoforge[llamacpp]' "
            "(builds llama.cpp, ~10 CPU-minutes; see docs/BACKENDS.md)"
        ) from None
    return llama_cpp


@contextlib.contextmanager
def _params_patched(lc: Any, model: dict[str, Any], context: dict[str, Any]):
    """Llama() builds its model/context params from these defaults and exposes only some fields."""
    mod = lc.llama_cpp
    orig_m, orig_c = mod.llama_model_default_params, mod.llama_context_default_params

    def model_defaults():
        p = orig_m()
        for k, v in model.items():
            if hasattr(p, k):
                setattr(p, k, v)
        return p

    def context_defaults():
        p = orig_c()
        for k, v in context.items():
            if hasattr(p, k):
                setattr(p, k, v)
        return p

    mod.llama_model_default_params, mod.llama_context_default_params = model_defaults, context_defaults
    try:
        yield
    finally:
        mod.llama_model_default_params, mod.llama_context_default_params = orig_m, orig_c


@BACKENDS.register("llamacpp")
class LlamaCppBackend(Backend):
    name = "llamacpp"

    def __init__(
        self,
        model: str = "smollm2",
        n_ctx: int = 8192,
        threads: int | None = None,
        parallel: int = 8,  # sequences decoded together (n above it: in rounds)
        chat: bool | str = "auto",
        seed: int | None = None,
        use_grammar: bool = True,  # honour Prompt.meta["grammar"] when present
        max_tokens: int | None = 1024,  # cap on new tokens per response (the run's max_tokens applies too)
        stop_after_edit: bool = True,  # end a response at its first complete edit (block: k-th fence)
        n_batch: int = 512,
        verbose: bool = False,
        **_: object,
    ):
        lc = require_llama_cpp()
        self.path: Path = resolve_gguf(str(model))
        self.model_name = str(model)
        self.threads = threads_by_load(threads)
        self.parallel = max(1, int(parallel))
        self.seed = seed
        self.use_grammar = bool(use_grammar)
        self.max_tokens = int(max_tokens) if max_tokens else None
        self.stop_after_edit = bool(stop_after_edit)
        self.preferred_batch = (2, 4)  # a CPU: the paper's 32 x 16 would take hours per step
        self._lc = lc
        with _params_patched(lc, {"use_extra_bufts": False},
                             {"n_seq_max": self.parallel + 1, "kv_unified": True}):
            try:
                self.llm = lc.Llama(model_path=str(self.path), n_ctx=int(n_ctx), n_batch=int(n_batch),
                                    n_ubatch=int(n_batch), n_threads=self.threads, n_threads_batch=self.threads,
                                    swa_full=True, verbose=verbose)
            except (ValueError, RuntimeError) as exc:
                raise BackendError(f"cannot load {self.path}: {str(exc).splitlines()[0]}") from None
        self.n_ctx = self.llm.n_ctx()
        self.n_vocab = self.llm.n_vocab()
        self.vocab = self.llm._model.vocab
        self.memory = self.llm._ctx.memory
        self.chat = _wants_chat(self.llm.metadata, chat)
        self._formatter = _chat_formatter(self.llm) if self.chat else None
        self._batch = lc._internals.LlamaBatch(n_tokens=max(int(n_batch), self.parallel), embd=0, n_seq_max=1)
        self._cached: list[int] = []  # the prompt tokens held in sequence 0
        self._calls = 0
        self.stats = {"prefill_tokens": 0, "prefill_s": 0.0, "decode_tokens": 0, "decode_s": 0.0}

    # -- prompts ----------------------------------------------------------------------------
    def encode_prompt(self, prompt: Prompt) -> list[int]:
        if self._formatter is not None:
            msgs = ([{"role": "system", "content": prompt.system}] if prompt.system else []) + [
                {"role": "user", "content": prompt.text}]
            try:
                text = self._formatter(messages=msgs).prompt
            except Exception:  # a template without a system role: fold it into the user turn
                merged = (prompt.system + "\n\n" if prompt.system else "") + prompt.text
                text = self._formatter(messages=[{"role": "user", "content": merged}]).prompt
            ids = self.llm.tokenize(text.encode("utf-8"), add_bos=False, special=True)
        else:  # a base model continues plain text
            text = (prompt.system + "\n\n" if prompt.system else "") + prompt.text + "\n\n"
            ids = self.llm.tokenize(text.encode("utf-8"), add_bos=False, special=False)
        bos = self.llm.token_bos()
        if self.llm._model.add_bos_token() and bos >= 0 and (not ids or ids[0] != bos):
            ids = [bos] + ids
        return ids

    # -- generation -------------------------------------------------------------------------
    def generate(self, prompts: list[Prompt], cfg: GenerationConfig) -> list[list[Response]]:
        out = []
        for i, prompt in enumerate(prompts):
            seed = sample_seed(cfg, self.seed, self._calls, i)
            out.append(self._one_prompt(prompt, cfg, np.random.default_rng(seed)))
        self._calls += 1
        return out

    def _one_prompt(self, prompt: Prompt, cfg: GenerationConfig, rng: np.random.Generator) -> list[Response]:
        ids = self.encode_prompt(prompt)
        if len(ids) + 16 > self.n_ctx:
            err = f"prompt has {len(ids)} tokens, over the context of {self.n_ctx} (option n_ctx)"
            return [Response("", error=err, prompt_tokens=len(ids)) for _ in range(cfg.n)]
        grammar = prompt.meta.get("grammar") if self.use_grammar else None
        done = _stop_rule(prompt) if self.stop_after_edit else None
        cap = min(cfg.max_tokens, self.max_tokens or cfg.max_tokens)
        t0 = time.perf_counter()
        logits = self._prefill(ids)
        out: list[Response] = []
        while len(out) < cfg.n:
            m = min(self.parallel, cfg.n - len(out))
            max_new = max(1, min(cap, (self.n_ctx - len(ids)) // m))
            out.extend(self._sample(ids, logits, m, cfg.temperature, max_new, rng, grammar, done))
        latency = time.perf_counter() - t0
        for r in out:
            r.latency = latency
        return out

    def _prefill(self, ids: list[int]) -> np.ndarray:
        """Decode ``ids`` into sequence 0 (reusing the cached prefix); the last token's logits."""
        lc = self._lc
        for s in range(1, self.parallel + 1):
            lc.llama_memory_seq_rm(self.memory, s, -1, -1)
        common = 0
        for a, b in zip(self._cached, ids):
            if a != b:
                break
            common += 1
        common = min(common, len(ids) - 1)  # at least one token decoded, for its logits
        if not lc.llama_memory_seq_rm(self.memory, 0, common, -1):  # e.g. a sliding-window cache
            lc.llama_memory_clear(self.memory, True)
            common = 0
        self._cached = []
        t0 = time.perf_counter()
        step = self._batch._n_tokens
        for a in range(common, len(ids), step):
            chunk = ids[a : a + step]
            self._decode(chunk, list(range(a, a + len(chunk))), [0] * len(chunk), last_only=True)
        self._cached = list(ids)
        self.stats["prefill_tokens"] += len(ids) - common
        self.stats["prefill_s"] += time.perf_counter() - t0
        return self._logits(self._batch.batch.n_tokens - 1)

    def _decode(self, tokens: list[int], pos: list[int], seqs: list[int], last_only: bool = False) -> None:
        b = self._batch.batch
        b.n_tokens = len(tokens)
        for k, (t, p, s) in enumerate(zip(tokens, pos, seqs)):
            b.token[k], b.pos[k], b.n_seq_id[k] = t, p, 1
            b.seq_id[k][0] = s
            b.logits[k] = (not last_only) or k == len(tokens) - 1
        try:
            self.llm._ctx.decode(self._batch)
        except RuntimeError as exc:
            raise _DecodeError(str(exc)) from None

    def _logits(self, k: int) -> np.ndarray:
        ptr = self.llm._ctx.get_logits_ith(k)
        return np.ctypeslib.as_array(ptr, shape=(self.n_vocab,)).astype(np.float64)

    def _sample(self, ids: list[int], logits0: np.ndarray, m: int, temperature: float, max_new: int,
                rng: np.random.Generator, grammar: str | None, done: Any) -> list[Response]:
        lc, L = self._lc, len(ids)
        seqs = list(range(1, m + 1))
        for s in seqs:
            lc.llama_memory_seq_rm(self.memory, s, -1, -1)
            lc.llama_memory_seq_cp(self.memory, 0, s, -1, -1)
        gram = [_Grammar(lc, self.vocab, grammar, self.n_vocab) for _ in seqs] if grammar else None
        toks: list[list[int]] = [[] for _ in seqs]
        lps: list[list[float]] = [[] for _ in seqs]
        texts = [b"" for _ in seqs]
        errors = ["" for _ in seqs]
        logits = [logits0] * m
        active = list(range(m))
        t0 = time.perf_counter()
        try:
            while active:
                nxt, still = [], []
                for j in active:
                    tok, lp = _draw(logits[j], temperature, rng, gram[j] if gram else None)
                    toks[j].append(tok)
                    lps[j].append(lp)
                    if lc.llama_vocab_is_eog(self.vocab, tok):
                        continue
                    if gram:
                        gram[j].accept(tok)
                    piece = self.llm.detokenize([tok])
                    texts[j] += piece
                    if len(toks[j]) >= max_new or (done is not None and done(piece, texts[j])):
                        continue
                    nxt.append(tok)
                    still.append(j)
                if not still:
                    break
                self._decode(nxt, [L + len(toks[j]) - 1 for j in still], [seqs[j] for j in still])
                for k, j in enumerate(still):
                    logits[j] = self._logits(k)
                self.stats["decode_tokens"] += len(still)
                active = still
        except _DecodeError as exc:
            for j in active:
                errors[j] = f"llama.cpp decode failed after {len(toks[j])} tokens: {exc}"
        finally:
            self.stats["decode_s"] += time.perf_counter() - t0
            for g in gram or []:
                g.free()
        eog = [bool(t and lc.llama_vocab_is_eog(self.vocab, t[-1])) for t in toks]
        final = [self.llm.detokenize(t[:-1] if e else t).decode("utf-8", errors="replace") for t, e in zip(toks, eog)]
        return [Response(text=final[j], prompt_tokens=L,
                         completion_tokens=len(toks[j]), token_ids=toks[j], logprobs=lps[j],
                         prompt_token_ids=list(ids), error=errors[j]) for j in range(m)]

    def close(self) -> None:
        llm, self.llm = getattr(self, "llm", None), None
        if llm is not None:
            llm.close()


class _DecodeError(RuntimeError):
    pass


class _Grammar:
    """A llama.cpp grammar sampler used as a token filter."""

    def __init__(self, lc: Any, vocab: Any, gbnf: str, n_vocab: int):
        self.lc = lc
        self.smpl = lc.llama_sampler_init_grammar(vocab, gbnf.encode("utf-8"), b"root")
        if not self.smpl:
            raise BackendError("llama.cpp rejected the edit grammar (see its log on stderr)")
        self.one = (lc.llama_token_data * 1)()
        self.arr1 = lc.llama_token_data_array(data=self.one, size=1, selected=-1, sorted=False)
        self.n_vocab = n_vocab
        self.full: Any = None

    def allows(self, tok: int) -> bool:
        self.one[0].id, self.one[0].logit, self.one[0].p = tok, 0.0, 0.0
        self.arr1.size, self.arr1.selected = 1, -1
        self.lc.llama_sampler_apply(self.smpl, ctypes.byref(self.arr1))
        return self.one[0].logit != -math.inf

    def mask(self) -> np.ndarray:
        """The tokens the grammar allows now (bool over the vocabulary)."""
        if self.full is None:
            self.full = self.lc._internals.LlamaTokenDataArray(n_vocab=self.n_vocab)
        self.full.copy_logits(np.zeros(self.n_vocab, dtype=np.single))
        self.lc.llama_sampler_apply(self.smpl, ctypes.byref(self.full.candidates))
        allowed = np.zeros(self.n_vocab, dtype=bool)
        data = self.full.candidates_data
        allowed[data.id] = np.isfinite(data.logit)
        return allowed

    def accept(self, tok: int) -> None:
        self.lc.llama_sampler_accept(self.smpl, tok)

    def free(self) -> None:
        if self.smpl:
            self.lc.llama_sampler_free(self.smpl)
            self.smpl = None


def _draw(logits: np.ndarray, temperature: float, rng: np.random.Generator, gram: _Grammar | None) -> tuple[int, float]:
    """One token from softmax(logits / T) (argmax when T = 0), restricted by the grammar; its log-prob."""
    x = logits / temperature if temperature > 0 else logits
    x = x - x.max()
    w = np.exp(x)
    logz = math.log(float(w.sum()))
    if temperature <= 0:
        tok = int(np.argmax(x))
        if gram is not None and not gram.allows(tok):
            allowed = gram.mask()
            tok = int(np.argmax(np.where(allowed, x, -np.inf)))
        return tok, float(x[tok] - logz)
    for _ in range(_REJECT_TRIES if gram is not None else 1):
        tok = _pick(w, rng)
        if gram is None or gram.allows(tok):
            return tok, float(x[tok] - logz)
        w[tok] = 0.0
    w = np.where(gram.mask(), w, 0.0)
    if not w.any():  # the grammar allows nothing the model gives weight to (cannot happen: EOS/any token)
        raise _DecodeError("the grammar allows no token")
    tok = _pick(w, rng)
    return tok, float(x[tok] - logz)


def _pick(w: np.ndarray, rng: np.random.Generator) -> int:
    c = np.cumsum(w)
    return int(min(np.searchsorted(c, rng.random() * c[-1], side="right"), len(w) - 1))


def _stop_rule(prompt: Prompt) -> Any:
    """(new piece, text so far) -> True once the response holds a complete edit of its mode: the
    first ``>>>>>>> REPLACE`` line (diff), or the k-th closing fence for k EVOLVE-BLOCK regions
    (block; 1 for full). A small model rambles on after it; nothing after it is ever used."""
    mode = prompt.meta.get("mode", "diff")
    if mode == "diff":
        return lambda piece, text: b"REPLACE" in text[-len(piece) - 8:] and bool(
            _REPLACE_LINE.search(text.decode("utf-8", errors="replace")))
    from evoforge.edits import evolve_regions

    k = max(1, len(evolve_regions(prompt.parent_code))) if mode == "block" else 1
    return lambda piece, text: b"`" in piece and len(
        _FENCE_LINE.findall(text.decode("utf-8", errors="replace"))) >= 2 * k


def _wants_chat(metadata: dict[str, str], chat: bool | str) -> bool:
    if isinstance(chat, str) and chat.lower() not in ("auto",):
        return chat.lower() in ("1", "true", "yes", "on")
    if chat is not None and not isinstance(chat, str):
        return bool(chat)
    if "tokenizer.chat_template" not in metadata:
        return False
    # A GGUF of a base model usually has no template; some carry the family's: trust the name then.
    words = " ".join(metadata.get(k, "") for k in ("general.name", "general.finetune")).lower()
    return not re.search(r"\bbase\b|-pt\b|pretrain", words)


def _chat_formatter(llm: Any) -> Any:
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

    def piece(tok: int) -> str:
        return llm._model.token_get_text(tok) if tok >= 0 else ""

    return Jinja2ChatFormatter(template=llm.metadata["tokenizer.chat_template"],
                               eos_token=piece(llm.token_eos()), bos_token=piece(llm.token_bos()))
