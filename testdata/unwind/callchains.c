/* Call chains for the unwinding tests: several call depths, recursion, and a function
 * called through a function pointer, each doing enough work to be sampled. Built with
 * gcc -O2 -g (and -fno-omit-frame-pointer for the frame-pointer test); runs for about
 * a quarter of a second. */
#include <stdio.h>
#include <stdlib.h>

volatile unsigned long sink;

__attribute__((noinline)) static unsigned long spin(unsigned long n) {
    unsigned long x = n;
    for (unsigned long i = 0; i < 200000; i++) x = x * 6364136223846793005ul + i;
    sink += x;
    return x;
}

__attribute__((noinline)) static unsigned long depth3(unsigned long n) { return spin(n) + 3; }
__attribute__((noinline)) static unsigned long depth2(unsigned long n) { return depth3(n) + 2; }
__attribute__((noinline)) static unsigned long depth1(unsigned long n) { return depth2(n) + 1; }

__attribute__((noinline)) static unsigned long recurse(int levels, unsigned long n) {
    if (levels == 0) return spin(n);
    unsigned long r = recurse(levels - 1, n + 1);
    sink += r;
    return r + 1;
}

typedef unsigned long (*work_fn)(unsigned long);

__attribute__((noinline)) static unsigned long through_pointer(work_fn f, unsigned long n) {
    return f(n) ^ 1;
}

int main(int argc, char **argv) {
    (void)argv;
    work_fn fns[2] = {depth1, spin};
    unsigned long total = 0;
    for (int round = 0; round < 240 * argc; round++) {
        total += depth1(round);
        total += recurse(5 + round % 4, round);
        total += through_pointer(fns[round % 2], round);
    }
    printf("%lu\n", total);
    return 0;
}
