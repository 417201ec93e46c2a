"""RL with generation on a vLLM server: the learner trains a LoRA adapter on its own copy of
the base model, saves it after each update, and asks the running server to load it
(vLLM's runtime LoRA API), then points the OpenAI-compatible backend at the new adapter name.
No weights are copied by hand: the server reads the adapter directory from disk.

Server side (same base model, same machine or a shared file system for ``sync_dir``):

    VLLM_ALLOW_RUNTIME_LORA_UPDATING=True vllm serve BASE --enable-lora --max-lora-rank 32

Protocol: POST {root}/v1/load_lora_adapter {"lora_name", "lora_path"} then, once requests use
the new name, POST {root}/v1/unload_lora_adapter {"lora_name"} for the previous one. Each
update gets a fresh name (``evoforge-<random>-step-K``), since vLLM refuses to load a name twice.
"""
from __future__ import annotations

import os
import secrets
import tempfile
from pathlib import Path
from typing import Any

import httpx

from evoforge.rl.config import RLError, TrainConfig
from evoforge.rl.learner import HFLearner


def server_root(url: str) -> str:
    """http://host:port[/v1][/] -> http://host:port (the LoRA endpoints live under /v1)."""
    u = url.rstrip("/")
    return u[: -len("/v1")] if u.endswith("/v1") else u


class LoRAServer:
    """The runtime LoRA endpoints of a vLLM server."""

    def __init__(self, url: str, api_key: str | None = None, timeout: float = 120.0):
        self.root = server_root(url)
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.client = httpx.Client(timeout=timeout, headers=headers)

    def _post(self, path: str, body: dict[str, Any]) -> None:
        url = f"{self.root}/v1/{path}"
        try:
            r = self.client.post(url, json=body)
        except httpx.HTTPError as exc:
            raise RLError(f"cannot reach the vLLM server at {self.root}: {exc}") from None
        if r.status_code != 200:
            hint = ""
            if r.status_code == 404:
                hint = " (start vLLM with VLLM_ALLOW_RUNTIME_LORA_UPDATING=True and --enable-lora)"
            raise RLError(f"vLLM {path} failed with HTTP {r.status_code}: {r.text.strip()[:200]}{hint}")

    def load(self, name: str, path: Path) -> None:
        self._post("load_lora_adapter", {"lora_name": name, "lora_path": str(path)})

    def unload(self, name: str) -> None:
        self._post("unload_lora_adapter", {"lora_name": name})

    def close(self) -> None:
        self.client.close()


def point_backend_at(backend: Any, model_name: str) -> None:
    """Make the OpenAI-compatible backend request ``model_name`` from now on."""
    setter = getattr(backend, "set_model", None)
    if callable(setter):
        setter(model_name)
    elif hasattr(backend, "model"):
        backend.model = model_name
    else:
        raise RLError(f"backend {type(backend).__name__} has no model name to point at the new adapter")


class VLLMLearner(HFLearner):
    """HFLearner + after each update: save adapter, load it into vLLM, switch the backend."""

    def __init__(self, cfg: TrainConfig, backend: Any, server: LoRAServer | None = None, sync_dir: Path | None = None):
        from evoforge.llm.hf_model import load_model_and_tokenizer

        if cfg.full_finetune:
            raise RLError("the vLLM path trains LoRA adapters only (full_finetune is not supported)")
        if not cfg.vllm_url:
            raise RLError("VLLMLearner needs vllm_url")
        model, tokenizer, device = load_model_and_tokenizer(cfg.model, cfg.device, cfg.dtype)
        if cfg.adapter:
            from peft import PeftModel

            model = PeftModel.from_pretrained(model, cfg.adapter, is_trainable=True)
        super().__init__(cfg, model, tokenizer, device, backend)
        self.server = server or LoRAServer(cfg.vllm_url, os.environ.get(cfg.vllm_api_key_env))
        chosen = sync_dir or cfg.vllm_sync_dir
        self.sync_dir = Path(chosen) if chosen else Path(tempfile.mkdtemp(prefix="evoforge-lora-"))
        self.served: str | None = None
        # unique per learner: a server that outlived an earlier run may still hold its names
        self.prefix = f"evoforge-{secrets.token_hex(3)}"
        if cfg.adapter:  # the server serves the starting adapter too
            self.after_update({})

    def after_update(self, metrics: dict[str, float]) -> None:
        name = f"{self.prefix}-step-{self.step}"
        path = self.sync_dir / name
        self.model.save_pretrained(str(path))
        if name == self.served:
            return
        self.server.load(name, path.resolve())
        point_backend_at(self.backend, name)
        previous, self.served = self.served, name
        if previous is not None:
            self.server.unload(previous)
        if metrics is not None:
            metrics["served_adapter_step"] = float(self.step)
