/* A function with a loop and a branch, cross-compiled for aarch64 to test the annotate
 * view's aarch64 disassembly against objdump's (binutils-aarch64-linux-gnu):
 *   aarch64-linux-gnu-gcc -O2 -g -c loop.c -o loop-aarch64.o
 *   aarch64-linux-gnu-objdump -d --no-show-raw-insn loop-aarch64.o > loop-aarch64.objdump
 * Both outputs are committed beside this file, so the test needs no cross compiler. */
unsigned long hot(const unsigned long *a, unsigned long n, unsigned long k) {
    unsigned long x = 0;
    for (unsigned long i = 0; i < n; i++) {
        x = x * k + a[i];
        if (x > 1000000) x -= 999;
    }
    return x;
}
