// The Redis queue in this process (a fake engine) when Redis goes away: close() still returns within its limits
// (the drain deadline, the 5 s hand-back, then 1 s per step), and two cancels of one queued job at once both answer
// with it cancelled.
import { setTimeout as delay } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { startRedis } from '../../scripts/lib/job-cluster.mjs';
// The wait for the job to start grows with this machine's slowdown; close()'s bound is the sum of the queue's own
// timers (with room to spare), so it stays as set.
import { scaledMs } from '../../scripts/lib/machine-speed.mjs';
import { createJobQueue, type JobQueue, type Transcription } from '../../src/index.js';
import type { SpeechTranscribeOptions } from '../../src/stt/types.js';

/** Transcriptions that take a minute unless aborted. */
const slowEngine = {
  modelIds: ['m'],
  async transcribe(_audio: unknown, options: SpeechTranscribeOptions = {}): Promise<Transcription> {
    await delay(60_000, undefined, { signal: options.signal });
    return { text: 'late', language: 'en', duration: 1 };
  },
};

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
});

describe('the Redis queue when Redis goes away', () => {
  it('closes within its limits while a job runs', async () => {
    const redis = await startRedis();
    cleanups.push(() => redis.stop());
    const queue: JobQueue = createJobQueue({
      connection: redis.url,
      speech: slowEngine,
      name: `down-${process.pid}-${Date.now()}`,
      drainTimeoutMs: 1000,
    });
    queue.on('failed', () => undefined);
    const job = await queue.enqueue({ audio: Buffer.alloc(8), options: { model: 'm' } });
    await expect.poll(async () => (await queue.get(job.id))?.status, { timeout: scaledMs(10_000) }).toBe('running');
    await redis.stop();
    const started = performance.now();
    await queue.close();
    // 1 s of drain, 5 s trying to hand the job back, then 1 s per closing step.
    expect(performance.now() - started).toBeLessThan(15_000);
  });

  it('answers two cancels of one queued job at once with the job cancelled', async () => {
    const redis = await startRedis();
    cleanups.push(() => redis.stop());
    // Adds jobs only: they stay queued.
    const queue = createJobQueue({ connection: redis.url, name: `cancel-${process.pid}-${Date.now()}` });
    cleanups.push(() => queue.close());
    for (let round = 0; round < 20; round++) {
      const job = await queue.enqueue({ audio: Buffer.alloc(8), options: { model: 'm' } });
      const answers = await Promise.all([queue.cancel(job.id), queue.cancel(job.id)]);
      expect(answers.map((answer) => answer?.status)).toEqual(['cancelled', 'cancelled']);
      expect((await queue.get(job.id))?.status).toBe('cancelled');
    }
  });
});
