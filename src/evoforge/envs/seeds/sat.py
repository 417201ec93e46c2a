"""3-SAT: a satisfying assignment of a formula (hard to find, easy to check; one is planted)."""
import random
import re

from evoforge.envs import VerifiableEnvironment


class ThreeSat(VerifiableEnvironment):
    name = "sat"
    max_difficulty = 5

    def generate(self, seed, difficulty):
        rng = random.Random(f"{self.name}-{seed}-{difficulty}")
        n = 3 + 3 * difficulty
        planted = [rng.randint(0, 1) for _ in range(n)]
        clauses = []
        while len(clauses) < int(4.0 * n):
            lits = [v * (1 if rng.random() < 0.5 else -1) for v in rng.sample(range(1, n + 1), 3)]
            if any((lit > 0) == bool(planted[abs(lit) - 1]) for lit in lits):  # keep the planted one true
                clauses.append(lits)
        return {"n": n, "clauses": clauses}, "".join(map(str, planted))

    def render(self, instance):
        text = " and ".join("(" + " or ".join(("x%d" % v) if v > 0 else ("not x%d" % -v) for v in c) + ")"
                            for c in instance["clauses"])
        return (f"Find values for x1..x{instance['n']} (each 0 or 1) that make this formula true:\n{text}\n"
                f"Answer with {instance['n']} digits 0 or 1, x1 first (like 0110... written out in full).")

    def score(self, instance, answer):
        n = instance["n"]
        found = re.findall(r"(?<![0-9])[01]{%d}(?![0-9])" % n, answer)
        if not found:
            return 0.0
        bits = [int(ch) for ch in found[-1]]
        ok = all(any((lit > 0) == bool(bits[abs(lit) - 1]) for lit in c) for c in instance["clauses"])
        return 1.0 if ok else 0.0
