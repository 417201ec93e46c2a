"""Net capture (evoforge's own problem, in the spirit of AtCoder's ahc039): greedy start.
Reads N targets and N penalty points from stdin, prints one rectilinear polygon (a rectangle)."""
import sys

# EVOLVE-BLOCK-START
L = 100000
G = 25  # grid cells per side


def main():
    data = sys.stdin.buffer.read().split()
    n = int(data[0])
    w = [[0] * G for _ in range(G)]  # targets minus penalties per cell
    for i in range(2 * n):
        x, y = int(data[1 + 2 * i]), int(data[2 + 2 * i])
        w[min(G - 1, x * G // (L + 1))][min(G - 1, y * G // (L + 1))] += 1 if i < n else -1

    def total(x0, x1, y0, y1):
        return sum(w[x][y] for x in range(x0, x1 + 1) for y in range(y0, y1 + 1))

    bx, by = max(((x, y) for x in range(G) for y in range(G)), key=lambda c: w[c[0]][c[1]])
    x0 = x1 = bx
    y0 = y1 = by
    while True:  # grow the rectangle by the row or column that helps most
        gains = [
            total(x0 - 1, x0 - 1, y0, y1) if x0 > 0 else -1,
            total(x1 + 1, x1 + 1, y0, y1) if x1 < G - 1 else -1,
            total(x0, x1, y0 - 1, y0 - 1) if y0 > 0 else -1,
            total(x0, x1, y1 + 1, y1 + 1) if y1 < G - 1 else -1,
        ]
        best = max(range(4), key=lambda d: gains[d])
        if gains[best] <= 0:
            break
        if best == 0:
            x0 -= 1
        elif best == 1:
            x1 += 1
        elif best == 2:
            y0 -= 1
        else:
            y1 += 1
    X0, X1 = x0 * (L + 1) // G, min(L, (x1 + 1) * (L + 1) // G - 1)
    Y0, Y1 = y0 * (L + 1) // G, min(L, (y1 + 1) * (L + 1) // G - 1)
    print(4)
    print(X0, Y0)
    print(X1, Y0)
    print(X1, Y1)
    print(X0, Y1)
# EVOLVE-BLOCK-END


if __name__ == "__main__":
    main()
