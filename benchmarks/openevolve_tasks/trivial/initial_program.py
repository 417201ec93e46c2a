# Trivial benchmark task: the score is how close solve() gets to 42. Evaluating it costs
# microseconds, so a run measures the framework's own overhead per child.


# EVOLVE-BLOCK-START
def solve():
    a = 1.0
    b = 2.0
    c = 3.0
    return a * b + c
# EVOLVE-BLOCK-END
