"""Nothing trained is lost: a `--train` run killed at random moments and resumed through the
CLI ends with the uninterrupted run's adapter; a run of 13 steps with checkpoint_every 10 keeps
all 13 updates (the adapter is saved with every step's commit, the final one in RUN/adapter)."""
from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("peft")

CMD = [sys.executable, "-m", "evoforge.cli.main"]


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    """A tiny formatted model on disk, a task directory, a run config (the test builds them)."""
    from evoforge.llm.hf import HFBackend
    from evoforge.rl.toy import EDIT_PROGRAM, build_line_tokenizer, build_tiny_model, edit_task, sft_format

    torch.set_num_threads(1)
    root = tmp_path_factory.mktemp("rl_resume")
    tok = build_line_tokenizer()
    backend = HFBackend(build_tiny_model(len(tok), tokenizer=tok), tok, seed=1)
    sft_format(backend, edit_task(), steps=60)
    backend.model.save_pretrained(root / "model")
    tok.save_pretrained(root / "model")
    task = root / "task"
    task.mkdir()
    (task / "initial_program.py").write_text(EDIT_PROGRAM)
    (task / "evaluator.py").write_text(textwrap.dedent("""\
        import importlib.util

        def evaluate(path):
            spec = importlib.util.spec_from_file_location("p", path)
            m = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(m)
            return {"combined_score": float(m.solve())}
        """))

    def config(steps: int) -> Path:
        p = root / f"run_{steps}.json"
        p.write_text(json.dumps({
            "backend": {"name": "hf", "model": str(root / "model"), "options": {"threads": 1}},
            "batch_size": 2, "n": 4, "max_tokens": 10, "max_steps": steps, "budget": 100000,
            "picture_interval": 0, "seed": 0, "snapshot_interval": 0,
            "train": {"device": "cpu", "lr": 1e-2, "weight_decay": 0.0, "lora_rank": 4,
                      "lora_target": "q_proj,v_proj,lm_head", "checkpoint_every": 10},
        }))
        return p

    return task, config


def _run(args: list[str], timeout: float = 300) -> subprocess.CompletedProcess:
    env = dict(os.environ, OMP_NUM_THREADS="1")
    return subprocess.run(CMD + args, capture_output=True, text=True, timeout=timeout, env=env)


def _adapter(run_dir: Path) -> dict:
    from safetensors.torch import load_file

    return load_file(str(run_dir / "adapter" / "adapter" / "adapter_model.safetensors"))


def _learner_step(run_dir: Path) -> int:
    return json.loads((run_dir / "adapter" / "learner.json").read_text())["step"]


def test_thirteen_steps_keep_all_thirteen_updates(setup, tmp_path):
    task, config = setup
    run_dir = tmp_path / "r"
    done = _run(["run", str(task), "--config", str(config(13)), "--run-dir", str(run_dir), "--quiet"])
    assert done.returncode == 0, done.stderr[-2000:]
    assert _learner_step(run_dir) == 13  # the final adapter holds every update
    kept = sorted(p.name for p in (run_dir / "checkpoints").iterdir())
    assert kept == ["step_10", "step_12", "step_13"]  # every 10th for the user, the last two for resume


@pytest.mark.slow
def test_train_run_killed_three_times_ends_with_the_uninterrupted_adapter(setup, tmp_path):
    task, config = setup
    cfg = config(8)
    reference = tmp_path / "reference"
    # a cold first import of torch/transformers (fresh venv, empty page cache) would make the measured
    # length too long and the kills too late: warm them first (the run killed once finished before its third kill)
    subprocess.run([sys.executable, "-c", "import torch, transformers, peft"], check=True, timeout=300)
    t0 = time.monotonic()
    done = _run(["run", str(task), "--config", str(cfg), "--run-dir", str(reference), "--quiet"])
    whole = time.monotonic() - t0  # the kills are drawn inside a run's length, fast machine or slow
    assert done.returncode == 0, done.stderr[-2000:]
    expected = _adapter(reference)

    killed = tmp_path / "killed"
    env = dict(os.environ, OMP_NUM_THREADS="1")
    first = CMD + ["run", str(task), "--config", str(cfg), "--run-dir", str(killed), "--quiet"]
    rng = random.Random(8)
    kills = 0
    proc = subprocess.Popen(first, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    while kills < 3:
        try:
            proc.wait(timeout=rng.uniform(0.35, 0.6) * whole)  # after the model loads, before the end
            break
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
            kills += 1
        cmd = first if not (killed / "run.db").exists() else CMD + ["resume", str(killed), "--quiet"]
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    proc.wait(timeout=300)
    final = _run(["resume", str(killed), "--quiet"])
    assert final.returncode == 0, final.stderr[-2000:]
    assert kills == 3, "the run finished before it was killed three times"
    got = _adapter(killed)
    assert got.keys() == expected.keys()
    for name in expected:
        torch.testing.assert_close(got[name], expected[name], rtol=1e-5, atol=1e-6)
    assert _learner_step(killed) == _learner_step(reference) == 8
