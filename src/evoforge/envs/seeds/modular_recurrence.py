"""A linear recurrence modulo m: the N-th term (iterating the recurrence computes it)."""
import random
import re

from evoforge.envs import VerifiableEnvironment


class ModularRecurrence(VerifiableEnvironment):
    name = "modular_recurrence"
    max_difficulty = 5

    def generate(self, seed, difficulty):
        rng = random.Random(f"{self.name}-{seed}-{difficulty}")
        instance = {
            "a": rng.randint(2, 9), "b": rng.randint(1, 9), "c": rng.randint(0, 9),
            "x0": rng.randint(0, 9), "x1": rng.randint(0, 9),
            "m": rng.choice([7, 11, 13, 17, 19, 23, 29, 31, 97, 101]),
            "n": rng.randint(5, 10) * 4 ** (difficulty - 1),
        }
        return instance, self.solve(instance)

    @staticmethod
    def solve(instance):
        a, b, c, m = instance["a"], instance["b"], instance["c"], instance["m"]
        prev, cur = instance["x0"] % m, instance["x1"] % m
        for _ in range(instance["n"] - 1):
            prev, cur = cur, (a * cur + b * prev + c) % m
        return cur if instance["n"] >= 1 else prev

    def render(self, instance):
        i = instance
        return (f"A sequence starts with x_0 = {i['x0']} and x_1 = {i['x1']}, and for k >= 1 "
                f"x_(k+1) = ({i['a']} * x_k + {i['b']} * x_(k-1) + {i['c']}) mod {i['m']}.\n"
                f"What is x_{i['n']}? Answer with a single integer.")

    def score(self, instance, answer):
        found = re.findall(r"-?\d+", answer)
        return 1.0 if found and int(found[-1]) == self.solve(instance) else 0.0
