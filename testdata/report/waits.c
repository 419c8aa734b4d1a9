/* Known waits for the off-CPU tests (tests/offcpu.rs).
 *
 * `waits split`: 100 rounds of spinning 6 ms in spin_ms (wall clock) then sleeping
 * 4 ms in sleep_ms: 40% of the thread's time is asleep, in sleep_ms, on an idle machine;
 * it prints how long it slept and how long the rounds took.
 * `waits lock`: 4 threads, each 150 times taking one mutex (in take_lock), holding it
 * 1 ms: each waits most of its time for the lock, at take_lock's pthread_mutex_lock. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned long sink;

static long elapsed_us(const struct timespec *a, const struct timespec *b) {
  return (b->tv_sec - a->tv_sec) * 1000000L + (b->tv_nsec - a->tv_nsec) / 1000;
}

__attribute__((noinline)) void spin_us(long us) {
  struct timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  do {
    for (int i = 0; i < 1000; i++) sink += i;
    clock_gettime(CLOCK_MONOTONIC, &b);
  } while (elapsed_us(&a, &b) < us);
}

__attribute__((noinline)) void spin_ms(int ms) { spin_us(ms * 1000L); }

__attribute__((noinline)) void sleep_ms(int ms) {
  struct timespec t = {0, ms * 1000000L};
  nanosleep(&t, 0);
}

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

__attribute__((noinline)) void take_lock(void) {
  pthread_mutex_lock(&lock); /* the lock's call site */
  spin_us(1000);
  pthread_mutex_unlock(&lock);
}

static void *worker(void *arg) {
  (void)arg;
  for (int i = 0; i < 150; i++) take_lock();
  return 0;
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "lock") == 0) {
    pthread_t t[4];
    for (int i = 0; i < 4; i++) pthread_create(&t[i], 0, worker, 0);
    for (int i = 0; i < 4; i++) pthread_join(t[i], 0);
    return 0;
  }
  /* What the rounds took, and how long the thread was asleep, as it saw them: a busy
   * machine stretches both, and the test compares the profile against these. */
  struct timespec start, end, a, b;
  long slept = 0;
  clock_gettime(CLOCK_MONOTONIC, &start);
  for (int i = 0; i < 100; i++) {
    spin_ms(6);
    clock_gettime(CLOCK_MONOTONIC, &a);
    sleep_ms(4);
    clock_gettime(CLOCK_MONOTONIC, &b);
    slept += elapsed_us(&a, &b);
  }
  clock_gettime(CLOCK_MONOTONIC, &end);
  printf("split: slept %ld us of %ld us\n", slept, elapsed_us(&start, &end));
  return 0;
}
