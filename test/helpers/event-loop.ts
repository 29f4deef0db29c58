/**
 * Counts how often a 10 ms interval fires while `work` runs, against how often it should have: work done on the main
 * thread gives about 0. A busy machine lowers the ratio too (the interval's thread waits for a core): each test's
 * threshold is a fifth below the least ratio it gave in seven runs beside three busy loops (two test files at a time,
 * 2 cores, slowdown 1.87-2.12), rounded down to 0.05, which lets partial blocking (30 ms in every 100 ms: 0.68) pass.
 */
export async function measureEventLoop<T>(work: () => Promise<T>): Promise<{ result: T; ratio: number; ms: number }> {
  let ticks = 0;
  const timer = setInterval(() => {
    ticks++;
  }, 10);
  const started = performance.now();
  try {
    const result = await work();
    const ms = performance.now() - started;
    return { result, ratio: ticks / Math.floor(ms / 10), ms };
  } finally {
    clearInterval(timer);
  }
}

/** Peak RSS of this process while `work` runs, sampled every 5 ms. */
export async function peakRss<T>(work: () => Promise<T>): Promise<{ result: T; peak: number }> {
  let peak = process.memoryUsage().rss;
  const timer = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage().rss);
  }, 5);
  try {
    const result = await work();
    return { result, peak: Math.max(peak, process.memoryUsage().rss) };
  } finally {
    clearInterval(timer);
  }
}
