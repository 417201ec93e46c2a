"""Model backends. Importing this package registers: builtin (model-free mutation operator),
scripted (replay, for tests), openai (any OpenAI-compatible server) and hf (local model, RL)."""
from evoforge.llm.base import BACKENDS, Backend, BackendError, GenerationConfig, Prompt, Response
from evoforge.llm.builtin import BuiltinMutator
from evoforge.llm.openai_backend import OpenAIBackend, parse_choice_logprobs
from evoforge.llm.scripted import ScriptedBackend

from evoforge.llm import hf as _hf  # noqa: F401  (local Hugging Face backend; imports torch only when used)

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
