"""Model backends. Importing this package registers: builtin (model-free mutation operator),
scripted (replay, for tests), openai (any OpenAI-compatible server), hf (local model, RL) and
llamacpp (a GGUF model in-process)."""
from evoforge.llm.base import BACKENDS, Backend, BackendError, GenerationConfig, Prompt, Response
from evoforge.llm.builtin import BuiltinMutator
from evoforge.llm.openai_backend import OpenAIBackend, parse_choice_logprobs
from evoforge.llm.scripted import ScriptedBackend

from evoforge.llm import hf as _hf  # noqa: F401  (local Hugging Face backend; imports torch only when used)
from evoforge.llm import llamacpp as _llamacpp  # noqa: F401  (GGUF in-process; imports llama_cpp only when used)

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
