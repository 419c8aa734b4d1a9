/* Four functions doing 8, 4, 2 and 1 units of the same work each round, so a profile
 * has several hot symbols with known shares (about 53%, 27%, 13%, 7%): the input of the
 * report tests against perf report. Built with gcc -O2 -g; about half a second for each
 * argument, the program's name included. */
#include <stdio.h>

/* The work `two` does per round: a test plants a regression by building with
 * -DTWO_UNITS=6 (three times the work). */
#ifndef TWO_UNITS
#define TWO_UNITS 2
#endif

/* The iterations `eight` does per round: a test plants a tenth more work with
 * -DEIGHT_ITERS=176000. */
#ifndef EIGHT_ITERS
#define EIGHT_ITERS (8 * 20000ul)
#endif

volatile unsigned long sink;

static inline __attribute__((always_inline)) unsigned long work(unsigned long iters, unsigned long x) {
    for (unsigned long i = 0; i < iters; i++) x = x * 6364136223846793005ul + i;
    return x;
}

__attribute__((noinline)) static unsigned long eight(unsigned long x) { return work(EIGHT_ITERS, x) + 1; }
__attribute__((noinline)) static unsigned long four(unsigned long x) { return work(4 * 20000ul, x) + 2; }
__attribute__((noinline)) static unsigned long two(unsigned long x) { return work(TWO_UNITS * 20000ul, x) + 3; }
__attribute__((noinline)) static unsigned long one(unsigned long x) { return work(1 * 20000ul, x) + 4; }

int main(int argc, char **argv) {
    (void)argv;
    unsigned long x = (unsigned long)argc;
    for (int round = 0; round < 1000 * argc; round++) {
        x = eight(x);
        x = four(x);
        x = two(x);
        x = one(x);
    }
    sink = x;
    printf("%lu\n", x);
    return 0;
}
