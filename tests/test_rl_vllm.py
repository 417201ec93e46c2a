"""The vLLM path's protocol, against a stand-in server on 127.0.0.1 that records the runtime
LoRA calls and answers chat completions with vLLM-style token ids and log-probs."""
from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("peft")
torch.set_num_threads(1)

from evoforge.llm.base import GenerationConfig, Prompt  # noqa: E402
from evoforge.rl import RLError, Rollout, TrainConfig, make_learner  # noqa: E402
from evoforge.rl.toy import build_tiny_model, build_tiny_tokenizer  # noqa: E402
from evoforge.rl.vllm import LoRAServer, server_root  # noqa: E402

COMPLETIONS = [[19, 19, 2], [5, 2], [6, 7, 8, 2], [19, 2]]  # token ids of the tiny vocabulary


class StandIn:
    def __init__(self, lora_status: int = 200):
        self.calls: list[tuple[str, dict]] = []
        self.models_requested: list[str] = []
        self.loaded: set[str] = set()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):  # quiet
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                path = self.path
                if path.endswith("load_lora_adapter"):
                    outer.calls.append((path, body))
                    if lora_status != 200:
                        return self.reply(lora_status, {"error": "not found"})
                    name = body["lora_name"]
                    if path.endswith("/unload_lora_adapter"):
                        outer.loaded.discard(name)
                    else:
                        assert name not in outer.loaded, "vLLM refuses to load a name twice"
                        assert Path(body["lora_path"], "adapter_config.json").is_file()
                        outer.loaded.add(name)
                    return self.reply(200, {})
                if path == "/v1/chat/completions":
                    outer.models_requested.append(body["model"])
                    choices = []
                    for j in range(body.get("n", 1)):
                        ids = COMPLETIONS[j % len(COMPLETIONS)]
                        content = [{"token": f"token_id:{t}", "logprob": -6.0} for t in ids]
                        choices.append({"index": j, "message": {"role": "assistant", "content": "x"},
                                        "logprobs": {"content": content}, "finish_reason": "stop"})
                    return self.reply(200, {"choices": choices, "usage": {"prompt_tokens": 3, "completion_tokens": 9}})
                self.reply(404, {"error": "no route"})

            def reply(self, status, obj):
                data = json.dumps(obj).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def base_model_dir(tmp_path):
    tok = build_tiny_tokenizer()
    build_tiny_model(len(tok), tokenizer=tok).save_pretrained(tmp_path / "base")
    tok.save_pretrained(tmp_path / "base")
    return tmp_path / "base"


def test_server_root():
    assert server_root("http://h:8000/v1/") == "http://h:8000"
    assert server_root("http://h:8000") == "http://h:8000"


def test_adapters_are_pushed_and_the_backend_follows(base_model_dir, tmp_path):
    from evoforge.llm.openai_backend import OpenAIBackend

    srv = StandIn()
    try:
        backend = OpenAIBackend(base_url=srv.url, model="base", max_retries=0)  # logprobs left off by the user
        cfg = TrainConfig(model=str(base_model_dir), vllm_url=srv.url, device="cpu", lora_rank=4, lr=1e-2,
                          lora_target="q_proj,v_proj,lm_head")
        learner = make_learner(cfg, backend)
        assert backend.logprobs is True  # the learner needs the sampler's token ids: switched on
        assert learner.prefix.startswith("evoforge-")
        learner.prefix = "evoforge"  # fixed names for the assertions below
        prompts = [Prompt(text="def x ="), Prompt(text="x = 0")]
        for step in (1, 2):
            out = backend.generate(prompts, GenerationConfig(n=4, temperature=1.0, max_tokens=8))
            assert out[0][0].token_ids == COMPLETIONS[0] and out[0][0].logprobs == [-6.0] * 3
            groups = [[Rollout(p, r, float(j)) for j, r in enumerate(g)] for p, g in zip(prompts, out)]
            m = learner.update(groups)
            assert m["trained_sequences"] == 8 and m["served_adapter_step"] == step
            # sampler log-probs of -6 vs the learner's ~ -log(22): pi_learner/pi_sampler > cap, truncated
            assert m["tis_truncated_frac"] > 0
            assert backend.model == f"evoforge-step-{step}"
        backend.generate(prompts[:1], GenerationConfig(n=1, max_tokens=8))
        assert srv.models_requested == ["base", "base", "evoforge-step-1", "evoforge-step-1", "evoforge-step-2"]
        assert [(c[0].rsplit("/", 1)[1], c[1]["lora_name"]) for c in srv.calls] == [
            ("load_lora_adapter", "evoforge-step-1"),
            ("load_lora_adapter", "evoforge-step-2"),
            ("unload_lora_adapter", "evoforge-step-1"),
        ]
        assert srv.loaded == {"evoforge-step-2"}
        # resume: loading a checkpoint pushes the restored adapter under a name not yet served
        learner.save(tmp_path / "ckpt")
        learner.load(tmp_path / "ckpt")
        assert backend.model == "evoforge-step-2" and srv.loaded == {"evoforge-step-2"}
    finally:
        srv.close()


def test_missing_runtime_lora_gives_a_hint():
    srv = StandIn(lora_status=404)
    try:
        with pytest.raises(RLError, match="VLLM_ALLOW_RUNTIME_LORA_UPDATING"):
            LoRAServer(srv.url).load("a", Path("/tmp"))
    finally:
        srv.close()
    with pytest.raises(RLError, match="cannot reach the vLLM server"):
        LoRAServer("http://127.0.0.1:9", timeout=2).load("a", Path("/tmp"))


def test_config_rejects_full_finetune_with_vllm():
    with pytest.raises(ValueError, match="LoRA adapters"):
        TrainConfig(full_finetune=True, vllm_url="http://127.0.0.1:8000/v1")
