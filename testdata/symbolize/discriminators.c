/* Line-table discriminators: with -O2 gcc splits this one-line loop into blocks that
 * share line 4 and tells them apart by discriminator, which binutils addr2line prints
 * ("(discriminator N)"). cli/tests/cli.rs compares sparkles addr2line with it. */
int f(int *a, int n) { int s = 0; for (int i = 0; i < n; i++) s += a[i] * (i & 1 ? 3 : 5); return s; }
int main(int c, char **v) { int a[64]; (void)v; for (int i = 0; i < 64; i++) a[i] = i * c; return f(a, 64); }
