# Naive initial program for the kissing number in dimension 11: the D11 root system, all
# integer vectors with two entries +-1 and the rest 0 (220 points, |x|^2 = 2, min distance^2 = 2).
from itertools import combinations

D = 11  # dimension (task parameter)


# EVOLVE-BLOCK-START
def construct_points():
    points = []
    for i, j in combinations(range(D), 2):
        for si in (1, -1):
            for sj in (1, -1):
                v = [0] * D
                v[i], v[j] = si, sj
                points.append(v)
    return points
# EVOLVE-BLOCK-END


def solve():
    """Return the integer points (a list of D-element integer lists)."""
    return [[int(c) for c in p] for p in construct_points()]
