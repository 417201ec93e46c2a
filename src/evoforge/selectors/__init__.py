"""Parent selection / state reuse strategies. Importing this package registers them all in
``evoforge.database.base.SELECTORS``: map-elites, puct, pacevolve, best-of-n, greedy."""
from __future__ import annotations

from evoforge.selectors.map_elites import MapElites, MapElitesOptions
from evoforge.selectors.options import SelectorConfigError, SelectorStateError
from evoforge.selectors.pacevolve import PACEvolve, PACEvolveOptions
from evoforge.selectors.puct import PUCT, PUCTOptions, puct_scores
from evoforge.selectors.simple import BestOfN, EpsilonGreedy, GreedyOptions

__all__ = [
    "BestOfN",
    "EpsilonGreedy",
    "GreedyOptions",
    "MapElites",
    "MapElitesOptions",
    "PACEvolve",
    "PACEvolveOptions",
    "PUCT",
    "PUCTOptions",
    "SelectorConfigError",
    "SelectorStateError",
    "puct_scores",
]
