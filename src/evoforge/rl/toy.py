"""Tiny models and a toy task for tests, benchmarks and dry runs: no downloads, no files.

The toy "program" is a short token sequence; its verifier likes one token (the constant the
program should set). ``toy_score`` counts that token among the first ``length`` tokens.
"""
from __future__ import annotations

from typing import Any

from evoforge.llm.hf_model import require_torch

TOY_WORDS = ["x", "=", "+", "-", "(", ")", "def", "return"] + [str(d) for d in range(10)]
SPECIALS = ["<pad>", "<s>", "</s>", "<unk>"]


def build_tiny_tokenizer(words: list[str] | None = None) -> Any:
    """A whitespace word-level tokenizer built in memory (``PreTrainedTokenizerFast``)."""
    require_torch()
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {w: i for i, w in enumerate(SPECIALS + list(words or TOY_WORDS))}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.decoder = decoders.WordPiece(prefix="##")  # joins words with spaces
    return PreTrainedTokenizerFast(
        tokenizer_object=tok, pad_token="<pad>", bos_token="<s>", eos_token="</s>", unk_token="<unk>"
    )


def build_tiny_model(
    vocab_size: int,
    arch: str = "llama",
    hidden: int = 32,
    layers: int = 2,
    heads: int = 4,
    seed: int = 0,
    tokenizer: Any = None,
) -> Any:
    """A randomly initialised causal LM of a real architecture (llama or qwen2)."""
    torch = require_torch()
    from transformers import AutoModelForCausalLM, LlamaConfig, Qwen2Config

    kw = dict(
        vocab_size=vocab_size,
        hidden_size=hidden,
        intermediate_size=hidden * 4,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=heads,
        max_position_embeddings=4096,
        tie_word_embeddings=True,
    )
    if tokenizer is not None:
        kw.update(bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
                  pad_token_id=tokenizer.pad_token_id)
    cfg = {"llama": LlamaConfig, "qwen2": Qwen2Config}[arch](**kw)
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(cfg)
    model.eval()
    return model


def toy_score(token_ids: list[int], liked_id: int, length: int) -> int:
    """How many of the first ``length`` emitted tokens are the liked one."""
    return sum(1 for t in token_ids[:length] if t == liked_id)


def toy_task(length: int) -> Any:
    from evoforge.tasks.base import Direction, Shaping, Task

    return Task(
        name="toy-liked-token",
        description="emit the liked constant as often as you can",
        initial_program="x = 0",
        direction=Direction.MAX,
        shaping=Shaping(lower=0.0, upper=float(length)),
    )


def toy_groups(backend: Any, prompts: list[Any], gen_cfg: Any, liked_id: int, length: int) -> list[list[Any]]:
    """Sample, score with the toy verifier, turn into rollouts (empty programs get the -0.4 penalty)."""
    from evoforge.rewards import ChildClass
    from evoforge.rewards.shaping import reward_for
    from evoforge.rl.config import Rollout

    task = toy_task(length)
    groups = []
    for prompt, responses in zip(prompts, backend.generate(prompts, gen_cfg)):
        group = []
        for r in responses:
            body = [t for t in (r.token_ids or []) if t not in backend.eos]
            if not body:
                reward = reward_for(ChildClass.NO_DIFF, None, task)
            else:
                reward = reward_for(ChildClass.EVALUATED, float(toy_score(body, liked_id, length)), task)
            group.append(Rollout(prompt, r, reward))
        groups.append(group)
    return groups


# -- an engine-ready toy: SEARCH/REPLACE edits as whole-line tokens ------------------------
# An edit sets x = D (the score) and y = E (a free slot that changes nothing but lets the
# model write distinct programs, so the database's duplicate penalty does not dominate).
EDIT_PROGRAM = "def solve():\n    x = 0\n    y = 0\n    return x\n"
EDIT_LINES = (
    ["<<<<<<< SEARCH\n", "=======\n", ">>>>>>> REPLACE\n", "def solve():\n", "    return x\n",
     "```python\n", "```\n"]
    + [f"    x = {d}\n" for d in range(10)]
    + [f"    y = {d}\n" for d in range(10)]
)


def build_line_tokenizer() -> Any:
    """One token per known line (unknown lines -> <unk>); decoding concatenates exactly."""
    require_torch()
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {w: i for i, w in enumerate(SPECIALS + EDIT_LINES)}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Split(Regex("\n"), behavior="merged_with_previous")
    tok.decoder = decoders.Fuse()
    return PreTrainedTokenizerFast(
        tokenizer_object=tok, pad_token="<pad>", bos_token="<s>", eos_token="</s>", unk_token="<unk>",
        clean_up_tokenization_spaces=False,
    )


def edit_task() -> Any:
    from evoforge.tasks.base import Direction, Shaping, Task, Verdict

    def verify(obj: Any) -> Verdict:
        if not isinstance(obj, (int, float)):
            return Verdict.reject("solve() must return a number")
        return Verdict.accept(float(obj))

    return Task(
        name="toy-increments", description="Make x as large as you can.", initial_program=EDIT_PROGRAM,
        direction=Direction.MAX, verify=verify, time_limit=5.0, shaping=Shaping(lower=0.0, upper=9.0),
    )


EDIT_RE = r"<<<<<<< SEARCH\n    return x\n=======\n    x = (\d)\n    y = (\d)\n    return x\n>>>>>>> REPLACE\n"


def edit_response(d: int, e: int = 0) -> str:
    return f"<<<<<<< SEARCH\n    return x\n=======\n    x = {d}\n    y = {e}\n    return x\n>>>>>>> REPLACE\n"


def edit_prompt(task: Any, history: list[tuple[int, int]]) -> Any:
    """The engine's prompt for a parent that went through these (x, y) edits."""
    from evoforge.database.base import Pick, Program
    from evoforge.prompts import PromptBuilder

    body = "".join(f"    x = {d}\n    y = {e}\n" for d, e in history)
    code = f"def solve():\n    x = 0\n    y = 0\n{body}    return x\n"
    score = float(history[-1][0]) if history else 0.0
    return PromptBuilder(task, mode="diff").build(Pick(Program(0, code, score, score)))


def sft_format(backend: Any, task: Any, steps: int = 120, lr: float = 3e-3, seed: int = 0) -> None:
    """Teach a fresh tiny model the edit format with a uniformly random constant (no preference),
    so RL has something to work on; RL must then discover which constant the verifier likes."""
    import random

    from evoforge.llm.hf_model import encode_prompt

    torch = require_torch()
    rng = random.Random(seed)
    model, tok = backend.model, backend.tokenizer
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    for _ in range(steps):
        rows = []
        for _ in range(8):
            history = [(rng.randrange(10), rng.randrange(10)) for _ in range(rng.randrange(4))]
            p = encode_prompt(tok, edit_prompt(task, history))
            c = tok(edit_response(rng.randrange(10), rng.randrange(10)), add_special_tokens=False)["input_ids"]
            c = list(c) + [tok.eos_token_id]
            rows.append((p, c))
        supervised_step(model, opt, rows, tok.pad_token_id)
    model.eval()


def supervised_step(model: Any, opt: Any, rows: list[tuple[list[int], list[int]]], pad_id: int) -> float:
    """One cross-entropy step on (prompt ids, completion ids) rows; the loss covers completions only."""
    torch = require_torch()
    width = max(len(p) + len(c) for p, c in rows)
    ids = torch.full((len(rows), width), pad_id)
    labels = torch.full((len(rows), width), -100)
    attn = torch.zeros((len(rows), width), dtype=torch.long)
    for i, (p, c) in enumerate(rows):
        ids[i, : len(p) + len(c)] = torch.tensor(p + c)
        labels[i, len(p) : len(p) + len(c)] = torch.tensor(c)
        attn[i, : len(p) + len(c)] = 1
    model.train()
    loss = model(input_ids=ids, attention_mask=attn, labels=labels).loss
    opt.zero_grad()
    loss.backward()
    opt.step()
    return float(loss)


def edit_rewards(backend: Any, task: Any, prompts: list[Any], n: int, seed: int, max_tokens: int = 10) -> list[float]:
    """Held-out check of an edit policy: shaped x of each well-formed edit, -0.4 otherwise."""
    import re

    from evoforge.llm.base import GenerationConfig
    from evoforge.rewards import ChildClass
    from evoforge.rewards.shaping import reward_for

    out = backend.generate(prompts, GenerationConfig(n=n, temperature=1.0, max_tokens=max_tokens, seed=seed))
    rewards = []
    for group in out:
        for r in group:
            m = re.fullmatch(EDIT_RE, r.text)
            if m is None:
                rewards.append(reward_for(ChildClass.NO_DIFF, None, task))
            else:
                rewards.append(reward_for(ChildClass.EVALUATED, float(m.group(1)), task))
    return rewards
