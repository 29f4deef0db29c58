// The Redis queue's bounds and its cancel, in this process with a fake engine: a running job cancelled is answered
// `cancelled` within a second and counted as cancelled (not failed); the audio held by unfinished jobs is bounded by
// maxQueuedBytes (QueueFullError past it), and the bytes come back as jobs end, are cancelled or expire. And per-key
// rate limits shared through that Redis by two handlers (two processes behind one load balancer).
import { setTimeout as delay } from 'node:timers/promises';
import request from 'supertest';
import { afterEach, describe, expect, it } from 'vitest';
import { startRedis } from '../../scripts/lib/job-cluster.mjs';
import { scaledMs } from '../../scripts/lib/machine-speed.mjs';
import {
  createJobQueue,
  createSpeechHandler,
  type JobQueue,
  QueueFullError,
  type Transcription,
} from '../../src/index.js';
import type { SpeechTranscribeOptions } from '../../src/stt/types.js';
import { FakeSpeechEngine } from '../helpers/fake-speech-engine.js';

/** Transcriptions that take `ms` unless aborted (as whisper.cpp stops at its next abort check). */
function engine(ms: number) {
  return {
    modelIds: ['m'],
    async transcribe(_audio: unknown, options: SpeechTranscribeOptions = {}): Promise<Transcription> {
      await delay(ms, undefined, { signal: options.signal });
      return { text: 'done', language: 'en', duration: 1 };
    },
  };
}

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
});

async function queueOn(options: Record<string, unknown>): Promise<JobQueue> {
  const redis = await startRedis();
  cleanups.push(() => redis.stop());
  const queue = createJobQueue({ connection: redis.url, name: `bounds-${process.pid}-${Date.now()}`, ...options });
  cleanups.push(() => queue.close());
  queue.on('failed', () => undefined);
  return queue;
}

describe('the Redis queue', () => {
  it('answers a cancelled running job as cancelled within a second, and counts it so', async () => {
    const queue = await queueOn({ speech: engine(60_000), pollIntervalMs: 1000 });
    const latencies: number[] = [];
    for (let round = 0; round < 5; round++) {
      const job = await queue.enqueue({ audio: Buffer.alloc(8), options: { model: 'm' } });
      await expect.poll(async () => (await queue.get(job.id))?.status, { timeout: scaledMs(10_000) }).toBe('running');
      const started = performance.now();
      const answer = await queue.cancel(job.id);
      latencies.push(performance.now() - started);
      expect(answer?.status).toBe('cancelled');
      expect(answer?.error?.code).toBe('cancelled');
    }
    // 16-60 ms here. Before the wait listened ahead of its read, an end falling between the two waited out a whole
    // pollIntervalMs (1,015 ms in 2 of 4 cancels).
    expect(Math.max(...latencies)).toBeLessThan(scaledMs(600));
    const counts = await queue.counts();
    expect(counts).toMatchObject({ cancelled: 5, failed: 0, running: 0 });
  });

  it('counts a queued job cancelled before any worker took it', async () => {
    const queue = await queueOn({});
    const job = await queue.enqueue({ audio: Buffer.alloc(8), options: { model: 'm' } });
    expect((await queue.cancel(job.id))?.status).toBe('cancelled');
    expect(await queue.counts()).toMatchObject({ queued: 0, cancelled: 1, failed: 0 });
  });

  it('bounds the audio held by unfinished jobs (maxQueuedBytes), and frees it as they end', async () => {
    // A queue that only adds: jobs wait, holding their audio.
    const queue = await queueOn({ maxQueuedBytes: 1000 });
    const first = await queue.enqueue({ audio: Buffer.alloc(600), options: { model: 'm' } });
    const refused = await queue.enqueue({ audio: Buffer.alloc(500), options: { model: 'm' } }).catch((e) => e);
    expect(refused).toBeInstanceOf(QueueFullError);
    expect((refused as Error).message).toMatch(/600 bytes of audio; 500 more would pass maxQueuedBytes 1000/);
    await queue.enqueue({ audio: Buffer.alloc(400), options: { model: 'm' } });
    await expect(queue.enqueue({ audio: Buffer.alloc(1), options: { model: 'm' } })).rejects.toThrow(QueueFullError);
    // Cancelling a queued job gives its bytes back (twice cancelled, once given back).
    await Promise.all([queue.cancel(first.id), queue.cancel(first.id)]);
    await queue.enqueue({ audio: Buffer.alloc(600), options: { model: 'm' } });
    await expect(queue.enqueue({ audio: Buffer.alloc(1), options: { model: 'm' } })).rejects.toThrow(QueueFullError);
  });

  it('gives the bytes back when jobs are worked', async () => {
    const queue = await queueOn({ speech: engine(10), maxQueuedBytes: 1000, concurrency: 2 });
    for (let round = 0; round < 5; round++) {
      const jobs = await Promise.all(
        [0, 1].map(() => queue.enqueue({ audio: Buffer.alloc(500), options: { model: 'm' } })),
      );
      await Promise.all(jobs.map((job) => queue.wait(job.id)));
      // The audio goes when the job has ended; the bytes with it, a moment after the end event.
      await expect
        .poll(
          () =>
            queue.enqueue({ audio: Buffer.alloc(1000), options: { model: 'm' } }).then(
              (job) => queue.cancel(job.id).then(() => true),
              () => false,
            ),
          { timeout: scaledMs(3000), interval: 50 },
        )
        .toBe(true);
    }
  });

  it('shares per-key rate limits between handlers on one Redis', async () => {
    const redis = await startRedis();
    cleanups.push(() => redis.stop());
    const name = `limits-${process.pid}-${Date.now()}`;
    const handler = () => {
      const jobs = createJobQueue({ connection: redis.url, name });
      cleanups.push(() => jobs.close());
      return createSpeechHandler({
        speech: new FakeSpeechEngine(),
        jobs,
        auth: [{ id: 'team-a', key: 'key-a' }, 'key-b'],
        limits: { requestsPerMinute: 4 },
      });
    };
    const apps = [handler(), handler()];
    const second = apps[1] as ReturnType<typeof handler>;
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) {
      const answer = await request(apps[i % 2] as ReturnType<typeof handler>)
        .get('/v1/voices')
        .set('authorization', 'Bearer key-a');
      statuses.push(answer.status);
      if (i === 3) expect(answer.headers.ratelimit).toBe('"requests";r=0;t=60');
    }
    expect(statuses).toEqual([200, 200, 200, 200, 429, 429]);
    expect((await request(second).get('/v1/voices').set('authorization', 'Bearer key-b')).status).toBe(200);
  });
});
