# The quadratic fit of a small data set: edit the three coefficients.


# EVOLVE-BLOCK-START
def coefficients():
    a = 0.0
    b = 0.0
    c = 0.0
    return a, b, c
# EVOLVE-BLOCK-END
