/* A program that runs in phases, as scripts do: each argument (the program's name
 * included) is one round of a phase of `alpha` then a phase of `beta`, a round about
 * 0.025 s on a 2-core VM, so a capture of fifty rounds holds long stretches of one function
 * and then of the other. A test doubles the beta phase with -DBETA_ITERS=(2*BASE_ITERS):
 * its share grows from about half to two thirds. Built with gcc -O2 -g. */
#include <stdio.h>

#define BASE_ITERS 7000000ul
#ifndef BETA_ITERS
#define BETA_ITERS BASE_ITERS
#endif

volatile unsigned long sink;

__attribute__((noinline)) static unsigned long alpha(unsigned long x) {
    for (unsigned long i = 0; i < BASE_ITERS; i++) x = x * 6364136223846793005ul + i;
    return x;
}

__attribute__((noinline)) static unsigned long beta(unsigned long x) {
    for (unsigned long i = 0; i < BETA_ITERS; i++) x = (x ^ (x >> 7)) * 2862933555777941757ul + i;
    return x;
}

int main(int argc, char **argv) {
    (void)argv;
    unsigned long x = (unsigned long)argc;
    for (int round = 0; round < argc; round++) {
        x = alpha(x);
        x = beta(x);
    }
    sink = x;
    printf("%lu\n", x);
    return 0;
}
