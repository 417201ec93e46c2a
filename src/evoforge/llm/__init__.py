"""Model backends. Importing this package registers: builtin (model-free mutation operator),
scripted (replay, for tests), openai (any OpenAI-compatible server) and hf (local model, RL)."""
from evoforge.llm.base import BACKENDS, Backend, BackendError, GenerationConfig, Prompt, Response
from evoforge.llm.builtin import BuiltinMutator
from evoforge.llm.openai_backend import OpenAIBackend, parse_choice_logprobs
from evoforge.llm.scripted import ScriptedBackend

try:  # the local Hugging Face backend (RL); it imports torch only when used
    from evoforge.llm import hf as _hf  # noqa: F401
except ImportError:  # pragma: no cover - during bring-up only
    pass

__all__ = [
    "BACKENDS",
    "Backend",
    "BackendError",
    "BuiltinMutator",
    "GenerationConfig",
    "OpenAIBackend",
    "Prompt",
    "Response",
    "ScriptedBackend",
    "parse_choice_logprobs",
]
