// How long OpenBLAS's idle threads spin before they sleep, set for the moment the addon loads.
import { isMainThread } from 'node:worker_threads';

/**
 * OpenBLAS's environment setting for its idle threads' spin, as a power of two of CPU cycles (4-30; its default is 28,
 * about 0.1 s). After each product its worker threads call sched_yield() in a loop for that long, and ggml's own
 * threads compute between the encoder's products, so on 2 cores three threads took turns at every operator: the
 * process spent 10 s of system time on the 600 s file (tiny.en, greedy, 2 threads). With 4 (16 cycles) a worker
 * sleeps at once and the next product wakes it, which costs microseconds against products of milliseconds. Measured
 * (BENCHMARKS.md, "OpenBLAS's idle threads", medians): tiny.en on jfk 560 -> 355 ms greedy, 779 -> 658 ms beam 5;
 * the 600 s file 16.5 -> 13.6 s (tiny.en) and 33.1 -> 30.3 s (base).
 */
export const OPENBLAS_THREAD_TIMEOUT = '4';
/** The variable's name, as OpenBLAS reads it. */
export const OPENBLAS_TIMEOUT_VARIABLE = 'OPENBLAS_THREAD_TIMEOUT';

/**
 * Runs `load` (the addon's first dlopen, which runs OpenBLAS's constructor, the one moment it reads its environment)
 * with OPENBLAS_THREAD_TIMEOUT set, then takes the variable away again, so the host's environment and its child
 * processes never see it. A value the host set itself is left as it is (an empty one too: OpenBLAS's default). Every
 * load attempt runs inside it (a candidate that fails to load and the next). A worker thread's `process.env` is its own
 * copy (Node's default), which the C library never reads: there this does nothing, and OpenBLAS keeps its default
 * when a worker thread is the first to load the addon.
 */
export function withOpenBlasIdleSleep<T>(load: () => T): T {
  if (!isMainThread || process.env[OPENBLAS_TIMEOUT_VARIABLE] !== undefined) return load();
  process.env[OPENBLAS_TIMEOUT_VARIABLE] = OPENBLAS_THREAD_TIMEOUT;
  try {
    return load();
  } finally {
    delete process.env[OPENBLAS_TIMEOUT_VARIABLE];
  }
}
