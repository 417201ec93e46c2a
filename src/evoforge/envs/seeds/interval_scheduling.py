"""Interval scheduling: the most pairwise disjoint meetings (the earliest-finish greedy computes it)."""
import random
import re

from evoforge.envs import VerifiableEnvironment


class IntervalScheduling(VerifiableEnvironment):
    name = "interval_scheduling"
    max_difficulty = 5

    def generate(self, seed, difficulty):
        rng = random.Random(f"{self.name}-{seed}-{difficulty}")
        n = 4 + 3 * difficulty
        horizon = 10 * n
        intervals = []
        for _ in range(n):
            start = rng.randrange(horizon)
            intervals.append([start, start + rng.randint(2, 3 * difficulty + 6)])
        instance = {"intervals": intervals}
        return instance, self.solve(instance)

    @staticmethod
    def solve(instance):
        count, free_at = 0, None
        for start, end in sorted(instance["intervals"], key=lambda iv: (iv[1], iv[0])):
            if free_at is None or start >= free_at:
                count, free_at = count + 1, end
        return count

    def render(self, instance):
        rows = "\n".join(f"  meeting {k}: from {s} to {e}" for k, (s, e) in enumerate(instance["intervals"]))
        return ("One room, these meetings (a meeting from s to e occupies [s, e); one may start when "
                f"another ends):\n{rows}\nWhat is the largest number of meetings the room can hold "
                "without overlaps? Answer with a single integer.")

    def score(self, instance, answer):
        found = re.findall(r"-?\d+", answer)
        return 1.0 if found and int(found[-1]) == self.solve(instance) else 0.0
