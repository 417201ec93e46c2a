"""0/1 knapsack: the largest total value within a weight capacity (a dynamic programme computes it)."""
import random
import re

from evoforge.envs import VerifiableEnvironment


class Knapsack(VerifiableEnvironment):
    name = "knapsack"
    max_difficulty = 5

    def generate(self, seed, difficulty):
        rng = random.Random(f"{self.name}-{seed}-{difficulty}")
        n = 3 + 2 * difficulty
        weights = [rng.randint(1, 4 + 3 * difficulty) for _ in range(n)]
        values = [rng.randint(1, 30) for _ in range(n)]
        instance = {"weights": weights, "values": values, "capacity": max(1, sum(weights) // 2)}
        return instance, self.solve(instance)

    @staticmethod
    def solve(instance):
        cap = instance["capacity"]
        best = [0] * (cap + 1)
        for w, v in zip(instance["weights"], instance["values"]):
            for c in range(cap, w - 1, -1):
                best[c] = max(best[c], best[c - w] + v)
        return best[cap]

    def render(self, instance):
        items = "\n".join(f"  item {i}: weight {w}, value {v}"
                          for i, (w, v) in enumerate(zip(instance["weights"], instance["values"])))
        return (f"Choose a subset of these items with total weight at most {instance['capacity']} "
                f"and the largest possible total value.\n{items}\n"
                "Answer with that largest total value, a single integer.")

    def score(self, instance, answer):
        found = re.findall(r"-?\d+", answer)
        return 1.0 if found and int(found[-1]) == self.solve(instance) else 0.0
