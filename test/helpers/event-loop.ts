/** Counts how often a 10 ms interval fires while `work` runs, against how often it should have. */
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
