/* A shared library laid out as glibc's: symbol versions (the same name at two
 * addresses, and compatibility aliases of one function), a static function only its
 * full symbol table names. symbolize/tests/loading.rs strips it, keeps its symbols in a
 * build-id debug file, and checks the names. */

static int __attribute__((noinline)) helper(int x) { return x * 7 + 1; }

/* `twice@VER_1` and `twice@@VER_2`: one name, two functions. */
int twice_v1(int x) { return helper(x) + x; }
int twice_v2(int x) { return helper(x) * 2; }
__asm__(".symver twice_v1, twice@VER_1");
__asm__(".symver twice_v2, twice@@VER_2");

/* `release` with a compatibility alias `crelease@VER_1` at the same address (as glibc's
 * `free` and `cfree@GLIBC_2.2.5`). */
int release(int x) { return helper(x) - 3; }
__asm__(".symver release, crelease@VER_1");

/* Only a versioned name is global here, `start@@VER_2`: the version script makes
 * `start_impl` local (as glibc's `__libc_start_main@@GLIBC_2.34` and its local
 * `__libc_start_main_impl`). */
int start_impl(int x) { return helper(x) ^ 5; }
__asm__(".symver start_impl, start@@VER_2");
