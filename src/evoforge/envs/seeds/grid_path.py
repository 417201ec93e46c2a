"""Shortest path on a grid with walls: the fewest moves from S to G (breadth-first search computes it)."""
import random
import re
from collections import deque

from evoforge.envs import VerifiableEnvironment


class GridPath(VerifiableEnvironment):
    name = "grid_path"
    max_difficulty = 5

    def generate(self, seed, difficulty):
        rng = random.Random(f"{self.name}-{seed}-{difficulty}")
        size = 3 + 2 * difficulty
        while True:  # redraw until G is reachable (deterministic: the same rng stream)
            rows = [["#" if rng.random() < 0.3 else "." for _ in range(size)] for _ in range(size)]
            rows[0][0], rows[size - 1][size - 1] = "S", "G"
            instance = {"grid": ["".join(r) for r in rows]}
            dist = self.solve(instance)
            if dist >= 0:
                return instance, dist

    @staticmethod
    def solve(instance):
        grid = instance["grid"]
        h, w = len(grid), len(grid[0])
        seen = {(0, 0): 0}
        queue = deque([(0, 0)])
        while queue:
            r, c = queue.popleft()
            if grid[r][c] == "G":
                return seen[(r, c)]
            for dr, dc in ((1, 0), (-1, 0), (0, 1), (0, -1)):
                nr, nc = r + dr, c + dc
                if 0 <= nr < h and 0 <= nc < w and grid[nr][nc] != "#" and (nr, nc) not in seen:
                    seen[(nr, nc)] = seen[(r, c)] + 1
                    queue.append((nr, nc))
        return -1

    def render(self, instance):
        grid = "\n".join(instance["grid"])
        return ("On this grid, '#' is a wall and '.' is free. Moving one cell up, down, left or right "
                f"per move, what is the fewest number of moves from S to G?\n{grid}\n"
                "Answer with a single integer.")

    def score(self, instance, answer):
        found = re.findall(r"-?\d+", answer)
        return 1.0 if found and int(found[-1]) == self.solve(instance) else 0.0
