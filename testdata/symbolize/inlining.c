/* A C program with static inline helpers, recursion, a function called through a
 * pointer, qsort with a comparator and string handling: the C input of the symbolization
 * agreement test against binutils addr2line (built with gcc -O2 -g). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct point {
    long x, y;
};

static inline long sq(long v) { return v * v; }

static inline long dist2(const struct point *a, const struct point *b) {
    return sq(a->x - b->x) + sq(a->y - b->y);
}

static int by_x(const void *l, const void *r) {
    const struct point *a = l, *b = r;
    return (a->x > b->x) - (a->x < b->x);
}

static long fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }

typedef long (*reducer)(long acc, const struct point *p);

static long add_norm(long acc, const struct point *p) {
    static const struct point origin = {0, 0};
    return acc + dist2(p, &origin);
}

static long add_checksum(long acc, const struct point *p) {
    char buf[64];
    int n = snprintf(buf, sizeof buf, "%ld/%ld", p->x, p->y);
    for (int i = 0; i < n; i++) acc = acc * 31 + (unsigned char)buf[i];
    return acc;
}

static inline long reduce(const struct point *ps, size_t n, reducer f) {
    long acc = 0;
    for (size_t i = 0; i < n; i++) acc = f(acc, &ps[i]);
    return acc;
}

static struct point *make(size_t n, unsigned seed) {
    struct point *ps = malloc(n * sizeof *ps);
    if (!ps) abort();
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        ps[i].x = (long)(seed >> 16) % 1000;
        ps[i].y = (long)(seed >> 8) % 1000;
    }
    qsort(ps, n, sizeof *ps, by_x);
    return ps;
}

int main(int argc, char **argv) {
    size_t n = 1000 + (size_t)argc;
    struct point *ps = make(n, (unsigned)strlen(argv[0]));
    reducer fs[2] = {add_norm, add_checksum};
    long total = fib(20 + argc % 3);
    for (int k = 0; k < 2; k++) total += reduce(ps, n, fs[(k + argc) % 2]);
    printf("%ld\n", total);
    free(ps);
    return 0;
}
