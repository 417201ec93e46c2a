"""Factoring: two nontrivial factors of N = p q (hard to find, a multiplication checks them)."""
import random
import re

from evoforge.envs import VerifiableEnvironment


def _is_prime(x):
    if x < 2:
        return False
    d = 2
    while d * d <= x:
        if x % d == 0:
            return False
        d += 1
    return True


class Factoring(VerifiableEnvironment):
    name = "factoring"
    max_difficulty = 5

    def generate(self, seed, difficulty):
        rng = random.Random(f"{self.name}-{seed}-{difficulty}")
        bits = 3 + 3 * difficulty
        primes = []
        while len(primes) < 2:
            x = rng.randrange(2 ** (bits - 1), 2 ** bits)
            if _is_prime(x) and x not in primes:
                primes.append(x)
        p, q = sorted(primes)
        return {"N": p * q}, [p, q]

    def render(self, instance):
        return (f"Write N = {instance['N']} as a product of two whole numbers, both greater than 1. "
                "Answer with the two numbers, e.g. [a, b].")

    def score(self, instance, answer):
        found = [int(x) for x in re.findall(r"\d+", answer)]
        if len(found) < 2:
            return 0.0
        a, b = found[-2], found[-1]
        return 1.0 if a > 1 and b > 1 and a * b == instance["N"] else 0.0
