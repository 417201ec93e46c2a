"""What an OpenAI-compatible server is and what it supports, for the ``openai`` backend.

Real servers differ where it matters to evoforge (docs/BACKENDS.md has the table):

* **context**: llama.cpp tells it at ``GET /props`` (``default_generation_settings.n_ctx``, per
  slot), vLLM and SGLang at ``GET /v1/models`` (``max_model_len``); Ollama and hosted APIs do not.
  A ``max_tokens`` over what fits is silently cut (llama.cpp) or refused (vLLM), so it is capped to
  the context minus the prompt, or to ``fallback_max_tokens`` when the server does not tell.
* **grammars** (constrained decoding): llama.cpp ``grammar`` (GBNF), vLLM ``structured_outputs.grammar``
  (``guided_grammar`` before 0.10.2), SGLang ``ebnf``; Ollama none.
* **sampling**: llama.cpp samples with top_k 40 / top_p 0.95 / min_p 0.05 / repeat penalty 1.1 by
  default, vLLM with the model's generation_config; "plain" sampling (temperature only) sends the
  neutral values, so that returned log-probs are those of the distribution sampled.
* **reasoning**: thinking models put ``<think>...</think>`` (or a ``reasoning_content`` field) before
  the answer; only the answer is parsed for an edit.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

_THINK_RE = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
_OPEN_THINK_RE = re.compile(r"<think>.*\Z", re.DOTALL | re.IGNORECASE)
GRAMMAR_FIELDS = ("auto", "none", "grammar", "structured_outputs", "guided_grammar", "ebnf")


@dataclass
class ServerInfo:
    kind: str = "unknown"  # llama.cpp | llama-cpp-python | vllm | sglang | ollama | unknown
    n_ctx: int | None = None  # tokens of context per request, when the server tells

    @property
    def grammar_field(self) -> str:
        fields = {"llama.cpp": "grammar", "llama-cpp-python": "grammar", "vllm": "structured_outputs", "sglang": "ebnf"}
        return fields.get(self.kind, "none")


def kind_from_models(data: dict[str, Any]) -> tuple[str, int | None]:
    """(server kind, max_model_len) from a ``GET /v1/models`` answer."""
    try:
        first = (data.get("data") or [{}])[0]
    except (AttributeError, IndexError, TypeError):
        return "unknown", None
    owner = str(first.get("owned_by") or "").lower()
    kind = {"vllm": "vllm", "sglang": "sglang", "llamacpp": "llama.cpp", "library": "ollama",
            "ollama": "ollama", "me": "llama-cpp-python"}.get(owner, "unknown")
    n = first.get("max_model_len") or (first.get("meta") or {}).get("n_ctx_train")
    return kind, int(n) if isinstance(n, (int, float)) and n > 0 else None


def n_ctx_from_props(data: dict[str, Any]) -> int | None:
    """The per-slot context of a llama.cpp server from ``GET /props``."""
    settings = data.get("default_generation_settings") or {}
    for v in (settings.get("n_ctx"), data.get("n_ctx")):
        if isinstance(v, (int, float)) and v > 0:
            return int(v)
    return None


def fit_max_tokens(requested: int, prompt_chars: int, info: ServerInfo, fallback: int) -> int:
    """``requested`` capped to what fits the server's context after the prompt (estimated at 3
    characters a token, generous for code), or to ``fallback`` when the context is unknown."""
    if info.n_ctx is None:
        return max(1, min(requested, fallback))
    room = info.n_ctx - prompt_chars // 3 - 32
    return max(64, min(requested, room))


def plain_sampling_fields(kind: str) -> dict[str, Any]:
    """Body fields that make a server sample by temperature alone."""
    if kind in ("llama.cpp", "llama-cpp-python"):
        return {"top_k": 0, "top_p": 1.0, "min_p": 0.0, "repeat_penalty": 1.0, "typical_p": 1.0}
    if kind in ("vllm", "sglang"):
        return {"top_k": -1, "top_p": 1.0, "min_p": 0.0, "repetition_penalty": 1.0}
    return {"top_p": 1.0}


def grammar_fields(field: str, gbnf: str) -> dict[str, Any]:
    if field == "grammar":
        return {"grammar": gbnf}
    if field == "structured_outputs":
        return {"structured_outputs": {"grammar": gbnf}}
    if field == "guided_grammar":
        return {"guided_grammar": gbnf}
    if field == "ebnf":
        return {"ebnf": gbnf}
    return {}


def strip_reasoning(text: str) -> str:
    """The answer without ``<think>...</think>`` (an unterminated one: nothing is the answer)."""
    if "<think>" not in text.lower() and "</think>" not in text.lower():
        return text
    out = _OPEN_THINK_RE.sub("", _THINK_RE.sub("", text))
    if "</think>" in out.lower():  # a template that put <think> in the prompt: answer after the last close
        out = re.split(r"</think>", out, flags=re.IGNORECASE)[-1]
    return out.strip("\n")
