"""Clique: k vertices that are pairwise adjacent in a random graph (hard to find; one is planted)."""
import random
import re

from evoforge.envs import VerifiableEnvironment


class PlantedClique(VerifiableEnvironment):
    name = "planted_clique"
    max_difficulty = 5

    def generate(self, seed, difficulty):
        rng = random.Random(f"{self.name}-{seed}-{difficulty}")
        n, k = 6 + 3 * difficulty, 3 + difficulty // 2
        clique = sorted(rng.sample(range(n), k))
        inside = set(clique)
        edges = [[u, v] for u in range(n) for v in range(u + 1, n)
                 if (u in inside and v in inside) or rng.random() < 0.35]
        return {"n": n, "k": k, "edges": edges}, clique

    def render(self, instance):
        edges = ", ".join(f"{u}-{v}" for u, v in instance["edges"])
        return (f"A graph has vertices 0..{instance['n'] - 1} and edges {edges}.\nFind {instance['k']} "
                "vertices that are all connected to each other. Answer with their list, e.g. [1, 4, 7].")

    def score(self, instance, answer):
        picked = [int(x) for x in re.findall(r"-?\d+", answer)]
        edges = {(u, v) for u, v in instance["edges"]}
        if len(picked) != instance["k"] or len(set(picked)) != len(picked):
            return 0.0
        if not all(0 <= x < instance["n"] for x in picked):
            return 0.0
        ok = all((min(a, b), max(a, b)) in edges for a in picked for b in picked if a != b)
        return 1.0 if ok else 0.0
