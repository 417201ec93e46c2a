# Naive initial program for the sums-and-differences problem: the Sidon-like set {0, 1, 3},
# whose differences (7) outnumber its sums (6).


# EVOLVE-BLOCK-START
def construct_set():
    return [0, 1, 3]
# EVOLVE-BLOCK-END


def solve():
    """Return U: distinct non-negative integers, including 0."""
    return sorted(int(u) for u in construct_set())
