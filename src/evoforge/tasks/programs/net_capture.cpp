// Net capture (evoforge's own problem, in the spirit of AtCoder's ahc039): greedy start.
// Read N targets and N penalty points, output one rectilinear polygon (here: a rectangle).
#include <algorithm>
#include <cstdio>
#include <vector>
using namespace std;

// EVOLVE-BLOCK-START
const int L = 100000;
const int G = 25;  // grid cells per side

int main() {
    int n;
    if (scanf("%d", &n) != 1) return 1;
    vector<vector<int>> w(G, vector<int>(G, 0));  // targets minus penalties per cell
    for (int i = 0; i < 2 * n; i++) {
        int x, y;
        if (scanf("%d %d", &x, &y) != 2) return 1;
        int cx = min(G - 1, x * G / (L + 1)), cy = min(G - 1, y * G / (L + 1));
        w[cx][cy] += i < n ? 1 : -1;
    }
    auto sum = [&](int x0, int x1, int y0, int y1) {  // cells [x0, x1] x [y0, y1]
        int s = 0;
        for (int x = x0; x <= x1; x++)
            for (int y = y0; y <= y1; y++) s += w[x][y];
        return s;
    };
    int bx = 0, by = 0;
    for (int x = 0; x < G; x++)
        for (int y = 0; y < G; y++)
            if (w[x][y] > w[bx][by]) bx = x, by = y;
    int x0 = bx, x1 = bx, y0 = by, y1 = by, cur = w[bx][by];
    while (true) {  // grow the rectangle by the row or column that helps most
        int best = 0, dir = -1;
        int gains[4] = {x0 > 0 ? sum(x0 - 1, x0 - 1, y0, y1) : -1, x1 < G - 1 ? sum(x1 + 1, x1 + 1, y0, y1) : -1,
                        y0 > 0 ? sum(x0, x1, y0 - 1, y0 - 1) : -1, y1 < G - 1 ? sum(x0, x1, y1 + 1, y1 + 1) : -1};
        for (int d = 0; d < 4; d++)
            if (gains[d] > best) best = gains[d], dir = d;
        if (dir < 0) break;
        if (dir == 0) x0--; else if (dir == 1) x1++; else if (dir == 2) y0--; else y1++;
        cur += best;
    }
    long long X0 = (long long)x0 * (L + 1) / G, X1 = min((long long)L, (long long)(x1 + 1) * (L + 1) / G - 1);
    long long Y0 = (long long)y0 * (L + 1) / G, Y1 = min((long long)L, (long long)(y1 + 1) * (L + 1) / G - 1);
    printf("4\n%lld %lld\n%lld %lld\n%lld %lld\n%lld %lld\n", X0, Y0, X1, Y0, X1, Y1, X0, Y1);
    return 0;
}
// EVOLVE-BLOCK-END
