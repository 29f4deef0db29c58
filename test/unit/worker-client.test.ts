// The worker client every capability uses: replies by id, cancel by id, a stalled or dead worker fails its jobs with
// the capability's coded errors and is replaced by a fresh one on the next job, close fails what is pending.
import { afterEach, describe, expect, it } from 'vitest';
// The stall timeouts a job must finish within (a worker's startup counts) grow with this machine's slowdown; the short
// ones the tests set to fire, or to be outlasted by heartbeats, stay as set.
import { scaledMs } from '../../scripts/lib/machine-speed.mjs';
import { ClosedError, VoxmillError } from '../../src/errors.js';
import { WorkerClient, type WorkerClientOptions } from '../../src/util/worker-client.js';
import { EXIT_SETTLE_MS } from '../../src/util/worker-thread.js';

interface JobMessage {
  type: 'job';
  id: number;
  mode: string;
  value?: string;
  delayMs?: number;
}
type ToWorker = JobMessage | { type: 'more'; id: number; value: string } | { type: 'cancel'; id: number };
type FromWorker =
  | { type: 'reply'; id: number; threadId: number; value?: string }
  | { type: 'alive'; id: number }
  | { type: 'cancelled'; id: number };

const script = new URL('../helpers/workers/scripted-client-worker.mjs', import.meta.url);
let client: WorkerClient<ToWorker, FromWorker> | undefined;
/** [1] is set when the worker got a shutdown message. */
let log = new Int32Array(new SharedArrayBuffer(8));
let replaced = 0;

function make(overrides: Partial<WorkerClientOptions<FromWorker>> = {}) {
  const shared = new SharedArrayBuffer(8);
  log = new Int32Array(shared);
  replaced = 0;
  client = new WorkerClient<ToWorker, FromWorker>({
    script: () => script,
    data: { log: shared },
    name: 'test worker',
    errors: {
      died: (message) => new VoxmillError('TEST_WORKER_DIED', message),
      stalled: (message) => new VoxmillError('TEST_WORKER_STALLED', message),
    },
    // Generous: a worker's startup counts, and this machine may be busy. Stall tests warm the worker up first.
    stallTimeoutMs: scaledMs(10_000),
    isHeartbeat: (message) => message.type === 'alive',
    onReplaced: () => replaced++,
    ...overrides,
  });
  return client;
}

afterEach(async () => {
  await client?.close();
  client = undefined;
});

const job = (id: number, mode: string, extra: Partial<JobMessage> = {}): ToWorker => ({
  type: 'job',
  id,
  mode,
  ...extra,
});
const failureOf = (promise: Promise<unknown>) =>
  promise.then(
    () => undefined,
    (error: unknown) => error,
  );
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('WorkerClient', () => {
  it('starts a worker on the first job and routes each reply to its job by id', async () => {
    const c = make();
    expect(c.alive).toBe(false);
    const slow = c.request(1, job(1, 'echo', { value: 'one', delayMs: 80 }));
    const fast = c.request(2, job(2, 'echo', { value: 'two' }));
    expect(await fast).toMatchObject({ type: 'reply', id: 2, value: 'two' });
    expect(await slow).toMatchObject({ type: 'reply', id: 1, value: 'one' });
    expect(c.alive).toBe(true);
  });

  it('streams a job: its messages in order, and messages sent to its worker', async () => {
    const c = make();
    const running = c.start(7, job(7, 'echo', { value: 'first' }));
    expect(await running.next()).toMatchObject({ value: 'first' });
    running.send({ type: 'more', id: 7, value: 'second' });
    running.send({ type: 'more', id: 7, value: 'third' });
    expect(await running.next()).toMatchObject({ value: 'second' });
    expect(await running.next()).toMatchObject({ value: 'third' });
    running.end();
    await expect(c.start(7, job(7, 'echo', { value: 'again' })).next()).resolves.toMatchObject({ value: 'again' });
  });

  it('cancels a job by id', async () => {
    const c = make();
    const reply = c.request(3, job(3, 'until-cancel'));
    await sleep(20);
    c.cancel(3);
    expect(await reply).toEqual({ type: 'cancelled', id: 3 });
  });

  it('a job that hears nothing for stallTimeoutMs fails with the stalled error, and the worker is replaced', async () => {
    const c = make({ stallTimeoutMs: 200 });
    const first = await c.request(1, job(1, 'echo'), scaledMs(10_000));
    const started = Date.now();
    const failure = await failureOf(c.request(2, job(2, 'silent')));
    expect(failure).toMatchObject({ code: 'TEST_WORKER_STALLED' });
    expect((failure as Error).message).toContain('test worker sent nothing for 200 ms');
    expect(Date.now() - started).toBeGreaterThanOrEqual(190);
    expect(replaced).toBe(1);
    expect(c.alive).toBe(false);
    const next = await c.request(3, job(3, 'echo'), scaledMs(10_000)); // a fresh worker's startup is not timed here
    expect(next).toMatchObject({ type: 'reply' });
    expect((next as { threadId: number }).threadId).not.toBe((first as { threadId: number }).threadId);
  });

  it('a job may bring its own stall timeout', async () => {
    const c = make();
    await expect(c.request(1, job(1, 'silent'), 100)).rejects.toMatchObject({ code: 'TEST_WORKER_STALLED' });
  });

  it('heartbeats keep a long job alive and never reach it', async () => {
    const c = make({ stallTimeoutMs: 200 });
    await c.request(1, job(1, 'echo'), scaledMs(10_000));
    expect(await c.request(2, job(2, 'heartbeats', { delayMs: 600 }))).toMatchObject({ value: 'after heartbeats' });
    expect(replaced).toBe(0);
  });

  it('no stall while nobody awaits the job: its messages wait in order', async () => {
    const c = make({ stallTimeoutMs: 100 });
    await c.request(1, job(1, 'echo'), scaledMs(10_000));
    const running = c.start(2, job(2, 'echo', { value: 'late', delayMs: 250 }));
    await sleep(400);
    expect(await running.next()).toMatchObject({ value: 'late' });
    expect(replaced).toBe(0);
  });

  it('a worker given up on is terminated after EXIT_SETTLE_MS (not asked to exit); close waits for it', async () => {
    const c = make();
    const running = c.start(1, job(1, 'echo', { value: 'first' }));
    expect(await running.next()).toMatchObject({ value: 'first' });
    const failed = failureOf(running.next());
    const reason = new Error('given up');
    const started = Date.now();
    c.retire(reason);
    expect(await failed).toBe(reason);
    expect(replaced).toBe(1);
    await c.close();
    expect(Date.now() - started).toBeGreaterThanOrEqual(EXIT_SETTLE_MS - 5);
    // It was terminated: it never got the shutdown message.
    expect(Atomics.load(log, 1)).toBe(0);
  });

  for (const mode of ['exit', 'throw']) {
    it(`a worker that does "${mode}" fails its jobs with the died error; the next job gets a fresh worker`, async () => {
      const c = make();
      const other = c.request(1, job(1, 'until-cancel'));
      const failure = await failureOf(c.request(2, job(2, mode)));
      expect(failure).toMatchObject({ code: 'TEST_WORKER_DIED' });
      expect((failure as Error).message).toMatch(mode === 'exit' ? /test worker exited \(code 5\)/ : /crashed: boom/);
      expect(await failureOf(other)).toBe(failure);
      expect(replaced).toBe(1);
      await expect(c.request(3, job(3, 'echo'))).resolves.toMatchObject({ type: 'reply' });
    });
  }

  it('close fails pending jobs with ClosedError, lets the worker exit and refuses new jobs', async () => {
    const c = make();
    const pending = failureOf(c.request(1, job(1, 'until-cancel')));
    await sleep(20);
    await c.close();
    expect(await pending).toBeInstanceOf(ClosedError);
    expect(Atomics.load(log, 1)).toBe(1);
    expect(c.alive).toBe(false);
    expect(replaced).toBe(0);
    expect(() => c.start(2, job(2, 'echo'))).toThrow(ClosedError);
  });
});
