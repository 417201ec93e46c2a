"""Subset sum: pick numbers that add up to a target (hard to find, easy to check; a subset is planted)."""
import random
import re

from evoforge.envs import VerifiableEnvironment


class SubsetSum(VerifiableEnvironment):
    name = "subset_sum"
    max_difficulty = 5

    def generate(self, seed, difficulty):
        rng = random.Random(f"{self.name}-{seed}-{difficulty}")
        n = 4 + 3 * difficulty
        numbers = [rng.randint(1, 10 * 4 ** difficulty) for _ in range(n)]
        chosen = sorted(rng.sample(range(n), rng.randint(2, max(2, n // 2))))
        return {"numbers": numbers, "target": sum(numbers[i] for i in chosen)}, chosen

    def render(self, instance):
        listed = ", ".join(f"[{i}] {x}" for i, x in enumerate(instance["numbers"]))
        return (f"Numbers (with their indices): {listed}.\nChoose some of them whose sum is exactly "
                f"{instance['target']}. Answer with the chosen indices, e.g. [0, 3, 5].")

    def score(self, instance, answer):
        numbers = instance["numbers"]
        picked = [int(x) for x in re.findall(r"-?\d+", answer)]
        if not picked or len(set(picked)) != len(picked) or not all(0 <= i < len(numbers) for i in picked):
            return 0.0
        return 1.0 if sum(numbers[i] for i in picked) == instance["target"] else 0.0
