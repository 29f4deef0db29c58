// The in-process job queue on a fake engine: results, progress, owners, cancelling (queued and running), retries
// and the dead-letter state, limits, signed callbacks and closing.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as delay } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
// Waits for work and bounds on how soon it ends grow with this machine's slowdown.
import { scaledMs } from '../../scripts/lib/machine-speed.mjs';
import {
  createJobQueue,
  InvalidOptionValueError,
  JobNotFoundError,
  type JobQueue,
  type JobQueueOptions,
  ModelNotFoundError,
  QueueFullError,
  type Transcription,
  TranscriptionError,
  verifyCallbackSignature,
} from '../../src/index.js';
import { defaultJobConcurrency } from '../../src/jobs/options.js';
import type { SpeechTranscribeOptions } from '../../src/stt/types.js';

/** An engine whose transcriptions take `steps` ticks of 20 ms, report progress, and stop when aborted. */
function fakeEngine(steps = 5) {
  const engine = {
    modelIds: ['tiny'],
    cpu: { cpuThreads: 2, threads: 1, maxConcurrentRuns: null as number | null },
    calls: 0,
    failures: [] as Error[],
    async transcribe(audio: unknown, options: SpeechTranscribeOptions = {}): Promise<Transcription> {
      engine.calls++;
      const failure = engine.failures.shift();
      if (failure) throw failure;
      for (let i = 0; i < steps; i++) {
        options.signal?.throwIfAborted();
        await delay(20);
        options.onProgress?.((i + 1) / steps);
      }
      options.signal?.throwIfAborted();
      return { text: `${(audio as Buffer).length} bytes`, language: 'en', duration: 1 };
    },
  };
  return engine;
}

const audio = (bytes = 100) => Buffer.alloc(bytes, 1);
let queues: JobQueue[] = [];
function queueWith(options: JobQueueOptions): JobQueue {
  const queue = createJobQueue({ progressIntervalMs: 0, backoffMs: 10, ...options });
  queues.push(queue);
  return queue;
}

afterEach(async () => {
  await Promise.all(queues.map((queue) => queue.close()));
  queues = [];
});

describe('in-process job queue', () => {
  it('runs a job to its result, reporting progress, and keeps it for its owner only', async () => {
    const queue = queueWith({ speech: fakeEngine() });
    const progress: number[] = [];
    queue.on('progress', (_id, fraction) => progress.push(fraction));
    const job = await queue.enqueue({ audio: audio(42), options: { model: 'tiny' }, owner: 'alice' });
    expect(job).toMatchObject({ status: 'queued', progress: 0, model: 'tiny', attempts: 0, result: null });
    expect(job.id).toMatch(/^job_[0-9a-f]{32}$/);
    const done = await queue.wait(job.id, { owner: 'alice' });
    expect(done).toMatchObject({ status: 'completed', progress: 1, attempts: 1, error: null });
    expect(done.result?.text).toBe('42 bytes');
    expect(done.finished_at).toBeGreaterThanOrEqual(done.created_at);
    expect(progress.length).toBeGreaterThan(0);
    expect(progress).toEqual([...progress].sort((a, b) => a - b));
    expect(await queue.get(job.id, 'bob')).toBeUndefined();
    expect(await queue.cancel(job.id, 'bob')).toBeUndefined();
    await expect(queue.wait(job.id, { owner: 'bob' })).rejects.toBeInstanceOf(JobNotFoundError);
    expect(await queue.list({ owner: 'bob' })).toEqual([]);
  });

  it('defaults its concurrency to what the CPU budget feeds, and no more than maxConcurrentRuns', () => {
    const engine = fakeEngine();
    engine.cpu = { cpuThreads: 8, threads: 2, maxConcurrentRuns: null };
    expect(defaultJobConcurrency(engine)).toBe(4);
    engine.cpu = { cpuThreads: 8, threads: 2, maxConcurrentRuns: 1 };
    expect(defaultJobConcurrency(engine)).toBe(1);
    expect(defaultJobConcurrency(undefined)).toBe(1);
  });

  it('runs `concurrency` jobs at once and the rest in order', async () => {
    const queue = queueWith({ speech: fakeEngine(), concurrency: 2 });
    const jobs = await Promise.all(
      [1, 2, 3, 4].map((n) => queue.enqueue({ audio: audio(n), options: { model: 'tiny' } })),
    );
    const counts = await queue.counts();
    expect(counts).toMatchObject({ running: 2, queued: 2 });
    const ended = await Promise.all(jobs.map((job) => queue.wait(job.id)));
    expect(ended.map((job) => job.result?.text)).toEqual(['1 bytes', '2 bytes', '3 bytes', '4 bytes']);
  });

  it('cancels a queued job at once and a running one within a second', async () => {
    const queue = queueWith({ speech: fakeEngine(100), concurrency: 1 });
    const running = await queue.enqueue({ audio: audio(), options: { model: 'tiny' } });
    const queued = await queue.enqueue({ audio: audio(), options: { model: 'tiny' } });
    const cancelledEvents: string[] = [];
    queue.on('cancelled', (id) => cancelledEvents.push(id));
    expect(await queue.cancel(queued.id)).toMatchObject({ status: 'cancelled', error: { code: 'cancelled' } });
    await delay(50);
    expect((await queue.get(running.id))?.status).toBe('running');
    const started = performance.now();
    await queue.cancel(running.id);
    const ended = await queue.wait(running.id);
    expect(performance.now() - started).toBeLessThan(scaledMs(1000));
    expect(ended).toMatchObject({ status: 'cancelled', error: { code: 'cancelled' } });
    expect(cancelledEvents.sort()).toEqual([queued.id, running.id].sort());
    // An ended job stays as it ended.
    expect((await queue.cancel(ended.id))?.status).toBe('cancelled');
  });

  it('retries a failing run with backoff, and fails for good after `attempts` (the dead-letter state)', async () => {
    const engine = fakeEngine(1);
    engine.failures.push(new TranscriptionError('whisper failed once'));
    const queue = queueWith({ speech: engine, attempts: 2 });
    const recovered = await queue.enqueue({ audio: audio(), options: { model: 'tiny' } });
    expect(await queue.wait(recovered.id)).toMatchObject({ status: 'completed', attempts: 2 });

    engine.failures.push(new TranscriptionError('whisper failed'), new TranscriptionError('whisper failed again'));
    const failed = await queue.enqueue({ audio: audio(), options: { model: 'tiny' } });
    expect(await queue.wait(failed.id)).toMatchObject({
      status: 'failed',
      attempts: 2,
      error: { code: 'transcription_failed', message: 'whisper failed again' },
    });
    expect((await queue.list({ status: 'failed' })).map((job) => job.id)).toEqual([failed.id]);
  });

  it('does not retry what no other run can fix (undecodable audio)', async () => {
    const engine = fakeEngine(1);
    const { AudioDecodeError } = await import('../../src/index.js');
    engine.failures.push(new AudioDecodeError('not audio'));
    const queue = queueWith({ speech: engine, attempts: 3 });
    const job = await queue.enqueue({ audio: audio(), options: { model: 'tiny' } });
    expect(await queue.wait(job.id)).toMatchObject({
      status: 'failed',
      attempts: 1,
      error: { code: 'audio_decode_failed' },
    });
    expect(engine.calls).toBe(1);
  });

  it('refuses jobs past maxQueuedJobs and maxQueuedBytes, and jobs that could never run', async () => {
    const queue = queueWith({ speech: fakeEngine(50), concurrency: 1, maxQueuedJobs: 1, maxQueuedBytes: 150 });
    await queue.enqueue({ audio: audio(), options: { model: 'tiny' } }); // runs
    await queue.enqueue({ audio: audio(), options: { model: 'tiny' } }); // waits
    await expect(queue.enqueue({ audio: audio(), options: { model: 'tiny' } })).rejects.toBeInstanceOf(QueueFullError);
    const roomy = queueWith({ speech: fakeEngine(50), concurrency: 1, maxQueuedBytes: 150 });
    await roomy.enqueue({ audio: audio(), options: { model: 'tiny' } });
    await roomy.enqueue({ audio: audio(100), options: { model: 'tiny' } });
    await expect(roomy.enqueue({ audio: audio(100), options: { model: 'tiny' } })).rejects.toThrow(/maxQueuedBytes/);
    await expect(queue.enqueue({ audio: audio(), options: { model: 'large' } })).rejects.toBeInstanceOf(
      ModelNotFoundError,
    );
    await expect(queue.enqueue({ audio: Buffer.alloc(0), options: { model: 'tiny' } })).rejects.toThrow(/audio/);
    const small = queueWith({ speech: fakeEngine(1), maxAudioBytes: 10 });
    await expect(small.enqueue({ audio: audio(11), options: { model: 'tiny' } })).rejects.toMatchObject({
      code: 'AUDIO_TOO_LARGE',
    });
    await expect(
      queue.enqueue({ audio: audio(), options: { model: 'tiny' }, callbackUrl: 'https://example.com/hook' }),
    ).rejects.toThrow(/callbacks\.secret/);
  });

  it('lists the owner’s jobs newest first, by status, up to the limit', async () => {
    const queue = queueWith({ speech: fakeEngine(1) });
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await queue.enqueue({ audio: audio(), options: { model: 'tiny' } })).id);
    await Promise.all(ids.map((id) => queue.wait(id)));
    expect((await queue.list()).map((job) => job.id)).toEqual([...ids].reverse());
    expect(await queue.list({ limit: 2 })).toHaveLength(2);
    expect(await queue.list({ status: 'running' })).toEqual([]);
  });

  it('delivers a signed callback when a job ends, retrying until the receiver takes it', async () => {
    const secret = 'a-callback-secret-of-some-length';
    const received: { body: string; signature: string | undefined; attempt: string | undefined }[] = [];
    let refusals = 1;
    const receiver: Server = createServer((req, res) => {
      let body = '';
      req.on('data', (chunk: Buffer) => {
        body += chunk;
      });
      req.on('end', () => {
        received.push({
          body,
          signature: req.headers['voxmill-signature'] as string | undefined,
          attempt: req.headers['voxmill-delivery-attempt'] as string | undefined,
        });
        res.statusCode = refusals-- > 0 ? 503 : 204;
        res.end();
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = receiver.address() as AddressInfo;
      const queue = queueWith({
        speech: fakeEngine(1),
        callbacks: { secret, backoffMs: 20 },
        // A receiver on this machine is a private target: allowed on purpose.
        callbackHosts: ['127.0.0.1'],
      });
      const job = await queue.enqueue({
        audio: audio(7),
        options: { model: 'tiny' },
        callbackUrl: `http://127.0.0.1:${port}/hook`,
      });
      await queue.wait(job.id);
      await expect.poll(() => received.length, { timeout: scaledMs(5000) }).toBe(2);
      expect(received.map((r) => r.attempt)).toEqual(['1', '2']);
      for (const delivery of received) {
        expect(verifyCallbackSignature(secret, delivery.body, delivery.signature)).toBe(true);
        expect(verifyCallbackSignature('another-secret-entirely', delivery.body, delivery.signature)).toBe(false);
      }
      const body = JSON.parse(received[1]?.body as string);
      expect(body).toMatchObject({ type: 'transcription.job.completed', job: { id: job.id, status: 'completed' } });
      expect(body.job.result.text).toBe('7 bytes');
    } finally {
      receiver.close();
    }
  });

  it('closes: queued jobs fail as shutting_down, running ones get drainTimeoutMs, then are cancelled', async () => {
    const queue = createJobQueue({ speech: fakeEngine(1000), concurrency: 1, drainTimeoutMs: 100 });
    const running = await queue.enqueue({ audio: audio(), options: { model: 'tiny' } });
    const queued = await queue.enqueue({ audio: audio(), options: { model: 'tiny' } });
    const ended = queue.wait(running.id);
    const waiting = queue.wait(queued.id);
    const started = performance.now();
    await queue.close();
    expect(performance.now() - started).toBeLessThan(scaledMs(1000));
    expect(await waiting).toMatchObject({ status: 'failed', error: { code: 'shutting_down' } });
    expect(await ended).toMatchObject({ status: 'failed', error: { code: 'shutting_down' } });
    await expect(queue.enqueue({ audio: audio(), options: { model: 'tiny' } })).rejects.toThrow(/closed/);
  });

  it('ends a job waiting for its retry when the queue closes', async () => {
    const engine = fakeEngine(1);
    engine.failures.push(new TranscriptionError('whisper failed'));
    const queue = createJobQueue({ speech: engine, attempts: 3, backoffMs: 60_000 });
    const job = await queue.enqueue({ audio: audio(), options: { model: 'tiny' } });
    await expect.poll(async () => (await queue.get(job.id))?.attempts, { timeout: scaledMs(1000) }).toBe(1);
    const ended = queue.wait(job.id);
    await queue.close();
    expect(await ended).toMatchObject({ status: 'failed', error: { code: 'shutting_down' } });
  });

  it('keeps at most maxKeptJobs ended jobs, forgetting the oldest', async () => {
    const queue = queueWith({ speech: fakeEngine(1), maxKeptJobs: 2 });
    const ids: string[] = [];
    for (let i = 0; i < 4; i++) {
      const job = await queue.enqueue({ audio: audio(), options: { model: 'tiny' } });
      await queue.wait(job.id);
      ids.push(job.id);
    }
    expect((await queue.list()).map((job) => job.id)).toEqual([ids[3], ids[2]]);
    expect(await queue.get(ids[0] as string)).toBeUndefined();
  });

  it('names the option when one is wrong', () => {
    expect(() => createJobQueue({ speech: fakeEngine(), attempts: 0 })).toThrow(InvalidOptionValueError);
    expect(() => createJobQueue({ speech: fakeEngine(), attempts: 0 })).toThrow(/attempts/);
    expect(() => createJobQueue({ speech: fakeEngine(), connection: 'http://redis' })).toThrow(/connection/);
    expect(() => createJobQueue({ speech: fakeEngine(), callbacks: { secret: 'short' } })).toThrow(/callbacks\.secret/);
    expect(() => createJobQueue({})).toThrow(/speech/);
    expect(() => createJobQueue({ speech: fakeEngine(), name: 'bad name' } as JobQueueOptions)).toThrow(/name/);
    expect(() => createJobQueue({ speech: fakeEngine(), nope: 1 } as JobQueueOptions)).toThrow(/nope/);
  });
});

describe('callback signatures', () => {
  const secret = 'a-callback-secret-of-some-length';
  it('accepts the signed body only, within the tolerance', async () => {
    const { signCallback } = await import('../../src/index.js');
    const now = 1_800_000_000;
    const header = signCallback(secret, '{"a":1}', now);
    expect(header).toMatch(/^t=1800000000,v1=[0-9a-f]{64}$/);
    expect(verifyCallbackSignature(secret, '{"a":1}', header, { now })).toBe(true);
    expect(verifyCallbackSignature(secret, Buffer.from('{"a":1}'), header, { now: now + 299 })).toBe(true);
    expect(verifyCallbackSignature(secret, '{"a":2}', header, { now })).toBe(false);
    expect(verifyCallbackSignature(secret, '{"a":1}', header, { now: now + 301 })).toBe(false);
    expect(verifyCallbackSignature(secret, '{"a":1}', undefined, { now })).toBe(false);
    expect(verifyCallbackSignature(secret, '{"a":1}', 't=1800000000,v1=zz', { now })).toBe(false);
    expect(verifyCallbackSignature(secret, '{"a":1}', 'garbage', { now })).toBe(false);
  });
});
