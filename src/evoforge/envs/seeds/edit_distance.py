"""Edit distance: the fewest insertions, deletions and substitutions between two words (a DP)."""
import random
import re

from evoforge.envs import VerifiableEnvironment


class EditDistance(VerifiableEnvironment):
    name = "edit_distance"
    max_difficulty = 5

    def generate(self, seed, difficulty):
        rng = random.Random(f"{self.name}-{seed}-{difficulty}")
        letters = "abcd"[: 2 + min(difficulty, 2)]
        a = "".join(rng.choice(letters) for _ in range(3 + 2 * difficulty))
        b = "".join(rng.choice(letters) for _ in range(3 + 2 * difficulty + rng.randint(-2, 2)))
        instance = {"a": a, "b": b}
        return instance, self.solve(instance)

    @staticmethod
    def solve(instance):
        a, b = instance["a"], instance["b"]
        row = list(range(len(b) + 1))
        for i, ca in enumerate(a, 1):
            prev, row[0] = row[0], i
            for j, cb in enumerate(b, 1):
                prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (ca != cb))
        return row[len(b)]

    def render(self, instance):
        return (f"What is the edit distance between '{instance['a']}' and '{instance['b']}', the fewest "
                "single-letter insertions, deletions and substitutions turning one into the other? "
                "Answer with a single integer.")

    def score(self, instance, answer):
        found = re.findall(r"-?\d+", answer)
        return 1.0 if found and int(found[-1]) == self.solve(instance) else 0.0
