// Transcription jobs across processes on a real Redis: a `voxmill serve --redis --no-work` API, `voxmill worker`
// processes and the random-weight tiny.en fixture. A worker killed with SIGKILL mid-run, and Redis restarted mid-run:
// every job still completes exactly once (one finished run, one result, one callback), nothing is lost, every
// callback's signature holds, and another API key sees none of the jobs. Ten running jobs cancelled: they stop.
// VOXMILL_SCALE_JOBS sets the jobs per run (default: 60 in CI, 200 with VOXMILL_TEST_FULL=1, as
// `npm run test:scale:full` runs it).
import { setTimeout as delay } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { startCluster } from '../../scripts/lib/job-cluster.mjs';
// Waits for jobs and bounds on how soon they stop grow with this machine's slowdown (the jobs' runs do too).
import { scaledMs } from '../../scripts/lib/machine-speed.mjs';
import { fixture, sharedAudio } from '../helpers/paths.js';
import { ciScoped } from '../helpers/test-scope.js';

const JOBS = Number(process.env.VOXMILL_SCALE_JOBS ?? ciScoped(200, 60));
const model = fixture('models/ggml-tiny.en-random.bin');
// Fast stall detection: a killed worker's job is taken again within about 5 s.
const jobs = { lockDurationMs: 5000, stalledIntervalMs: 1000, backoffMs: 500 };

type Cluster = Awaited<ReturnType<typeof startCluster>>;
let cluster: Cluster | undefined;
afterEach(async () => {
  await cluster?.stop();
  cluster = undefined;
});

/**
 * Every job completed, once: one finished run each, one callback each, all signatures valid, results kept.
 * `killedMidRun`: jobs a killed worker may have finished without logging it. A worker's `job_run` line is written
 * after BullMQ has committed the completion to Redis (and queued the callback); a SIGKILL between the two leaves a job
 * completed, with its one callback, and no line. Such a job is not lost: its status and its single delivery, checked
 * below, show it ran once.
 */
async function expectExactlyOnce(c: Cluster, ids: string[], killedMidRun = 0): Promise<void> {
  const runs = c.runsById();
  const completedRuns = ids.map((id) => (runs.get(id) ?? []).filter((run) => run.status === 'completed').length);
  expect(completedRuns.filter((n) => n === 0).length).toBeLessThanOrEqual(killedMidRun); // lost (or unlogged)
  expect(completedRuns.filter((n) => n > 1)).toHaveLength(0); // duplicated
  const wanted = new Set<string | undefined>(ids);
  const deliveries = c.receiver.deliveries.filter((d) => wanted.has(d.id));
  expect(deliveries).toHaveLength(ids.length);
  expect(new Set(deliveries.map((d) => d.id)).size).toBe(ids.length);
  expect(deliveries.every((d) => d.valid && d.type === 'transcription.job.completed')).toBe(true);
  for (const id of ids) {
    const { status, body } = await c.get(id);
    expect(status).toBe(200);
    expect(body.status).toBe('completed');
    expect(typeof body.result.text).toBe('string');
  }
}

describe('jobs on Redis across processes', () => {
  it(`completes ${JOBS} jobs exactly once when a worker is killed with SIGKILL mid-run`, async () => {
    cluster = await startCluster({ workers: 3, model, jobs });
    const c = cluster;
    const ids = await c.submit(JOBS, { audioPath: sharedAudio('jfk.wav') });
    // Mid-run: once some jobs are done, kill a worker while it runs one.
    await expect
      .poll(() => c.receiver.deliveries.length, { timeout: scaledMs(120_000), interval: 100 })
      .toBeGreaterThan(10);
    const victim = c.workers[0];
    victim?.child.kill('SIGKILL');
    await c.allCalledBack(ids, scaledMs(600_000));
    expect(await victim?.exited).toBe('SIGKILL');
    await expectExactlyOnce(c, ids, 1); // the victim runs one job at a time
    // The job the killed worker held ran again elsewhere.
    const retried: number[] = [];
    for (const id of ids) retried.push((await c.get(id)).body.attempts);
    expect(Math.max(...retried)).toBeGreaterThanOrEqual(2);
    // Another key sees none of them.
    const other = c.keys[1] as string;
    expect((await c.get(ids[0] as string, other)).status).toBe(404);
    const listed = await fetch(`${c.apiUrl}/v1/jobs`, { headers: { authorization: `Bearer ${other}` } });
    expect(((await listed.json()) as { data: unknown[] }).data).toEqual([]);
    const cancel = await fetch(`${c.apiUrl}/v1/jobs/${ids[0]}`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${other}` },
    });
    expect(cancel.status).toBe(404);
  });

  it(`finishes a run of ${JOBS} jobs when Redis restarts mid-run`, async () => {
    cluster = await startCluster({ workers: 3, model, jobs });
    const c = cluster;
    const ids = await c.submit(JOBS, { audioPath: sharedAudio('jfk.wav') });
    await expect
      .poll(() => c.receiver.deliveries.length, { timeout: scaledMs(120_000), interval: 100 })
      .toBeGreaterThan(10);
    await c.redis.restart(2000);
    await c.allCalledBack(ids, scaledMs(600_000));
    await expectExactlyOnce(c, ids);
    // Every process rode it out.
    for (const process of [c.api, ...c.workers]) expect(process.child.exitCode).toBeNull();
    const ready = await fetch(`${c.apiUrl}/readyz`);
    expect(ready.status).toBe(200);
    expect(((await ready.json()) as { jobs: unknown }).jobs).toEqual({ backend: 'redis', ok: true });
  });

  it('hands running jobs back on SIGTERM past the drain deadline, and another worker finishes them', async () => {
    // A drain deadline of 0: whatever runs at SIGTERM is handed back (three jobs taking turns on one thread).
    cluster = await startCluster({ workers: 1, model, jobs: { ...jobs, drainTimeoutMs: 0 }, concurrency: 3 });
    const c = cluster;
    const ids = await c.submit(3, { audioPath: sharedAudio('jfk.wav') });
    const statuses = async () => {
      const all: string[] = [];
      for (const id of ids) all.push((await c.get(id)).body.status);
      return all;
    };
    await expect.poll(statuses, { timeout: scaledMs(30_000), interval: 50 }).toEqual(['running', 'running', 'running']);
    const worker = c.workers[0];
    const started = performance.now();
    worker?.child.kill('SIGTERM');
    expect(await worker?.exited).toBe(0);
    // The hand-back and the engine's close: well under the 3 s the jobs would take.
    expect(performance.now() - started).toBeLessThan(scaledMs(2500));
    expect(await statuses()).toEqual(['queued', 'queued', 'queued']);
    await c.addWorker();
    await c.allCalledBack(ids, scaledMs(300_000));
    for (const id of ids) expect((await c.get(id)).body).toMatchObject({ status: 'completed' });
  });

  it('stops 10 running jobs within a second of their cancel', async () => {
    cluster = await startCluster({ workers: 3, model, jobs, concurrency: 4 });
    const c = cluster;
    const ids = await c.submit(12, { audioPath: sharedAudio('jfk.wav'), callback: false });
    const runningNow = async () => {
      const running: string[] = [];
      for (const id of ids) if ((await c.get(id)).body.status === 'running') running.push(id);
      return running;
    };
    await expect
      .poll(async () => (await runningNow()).length, { timeout: scaledMs(30_000), interval: 100 })
      .toBeGreaterThanOrEqual(10);
    const running = (await runningNow()).slice(0, 10);
    const started = performance.now();
    const answers = await Promise.all(
      running.map((id) =>
        fetch(`${c.apiUrl}/v1/jobs/${id}`, { method: 'DELETE', headers: { authorization: `Bearer ${c.keys[0]}` } }),
      ),
    );
    const elapsed = performance.now() - started;
    expect(answers.map((a) => a.status)).toEqual(running.map(() => 200));
    const states: { status: string; error: { code: string } | null }[] = [];
    for (const id of running) states.push((await c.get(id)).body);
    // Each DELETE waits (up to 2 s) for its job to stop: all ten stopped within about a second.
    expect(elapsed).toBeLessThan(scaledMs(1500));
    expect(states.map((job) => job.status)).toEqual(running.map(() => 'cancelled'));
    expect(states.every((job) => job.error?.code === 'cancelled')).toBe(true);
    // No worker finished a cancelled job afterwards.
    await delay(1500);
    const runs = c.runsById();
    expect(running.filter((id) => (runs.get(id) ?? []).some((run) => run.status === 'completed'))).toEqual([]);
  });
});
