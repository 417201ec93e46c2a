"""Graph colouring: colour the vertices with k colours, no edge within one colour (a colouring is planted)."""
import random
import re

from evoforge.envs import VerifiableEnvironment


class GraphColouring(VerifiableEnvironment):
    name = "graph_colouring"
    max_difficulty = 5

    def generate(self, seed, difficulty):
        rng = random.Random(f"{self.name}-{seed}-{difficulty}")
        n, k = 4 + 3 * difficulty, 3
        colours = [rng.randrange(k) for _ in range(n)]
        edges = [[u, v] for u in range(n) for v in range(u + 1, n)
                 if colours[u] != colours[v] and rng.random() < 0.5]
        return {"n": n, "k": k, "edges": edges}, colours

    def render(self, instance):
        edges = ", ".join(f"{u}-{v}" for u, v in instance["edges"])
        return (f"A graph has vertices 0..{instance['n'] - 1} and edges {edges}.\nGive each vertex a colour "
                f"0..{instance['k'] - 1} so that no edge joins two vertices of the same colour. Answer with "
                "the list of colours of vertices 0, 1, 2, ... in order, e.g. [0, 2, 1, ...].")

    def score(self, instance, answer):
        colours = [int(x) for x in re.findall(r"-?\d+", answer)]
        if len(colours) != instance["n"] or not all(0 <= c < instance["k"] for c in colours):
            return 0.0
        return 1.0 if all(colours[u] != colours[v] for u, v in instance["edges"]) else 0.0
