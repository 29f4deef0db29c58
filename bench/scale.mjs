#!/usr/bin/env node
// Scale-out: transcription jobs on Redis across processes, on this machine.
//
//   npm run bench:scale [-- options]     (the flags: `node bench/scale.mjs --help`)
//
// Method (scripts/lib/job-cluster.mjs starts everything: redis-server on a free port, append-only; one
// `voxmill serve --redis --no-work` API; `voxmill worker`s; a callback receiver that checks every signature; the
// random-weight tiny.en fixture, cpuThreads 1 and threads 1 per process; jobs of jfk.wav, 11 s):
// 1. Kill run: --jobs jobs (200) on 3 workers; once 10 have called back, SIGKILL one worker. Counts: submitted,
//    completed (GET says completed), duplicated (jobs with more than one finished run in the workers' logs, or more
//    than one callback), lost (jobs never completed), bad signatures, and the wall time from the first submission.
// 2. Restart run: the same with Redis stopped (SIGTERM) and started again 2 s later instead of the kill.
// 3. Throughput: --throughput-jobs jobs (60) on 1, 2 and 3 workers (one job at a time each), jobs per minute from
//    the first submission to the last callback; the machine's cores bound it (each worker computes on one thread).
// 4. A /metrics sample: the API's and one worker's, after a run (the lines of voxmill's own metrics).
// 5. Drain: a standalone `voxmill serve` (in-process jobs) with 5 POST /v1/transcriptions in flight gets SIGTERM:
//    the timeline of /readyz, each response and the exit. Then a worker running 5 jobs (concurrency 5 on one thread:
//    they take turns) gets SIGTERM with jobs.drainTimeoutMs 2000: which finished, which were handed back, and the
//    exit; a new worker then finishes those.
// Raw results go to bench/out/scale-<timestamp>.json.
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { startCluster } from '../scripts/lib/job-cluster.mjs';
import {
  benchArgs,
  ensureDist,
  ensureFixtures,
  flag,
  gitCommit,
  machineFacts,
  root,
  runMain,
  sharedAudio,
  writeResults,
} from './lib.mjs';

const model = join(root, 'test', 'fixtures', 'models', 'ggml-tiny.en-random.bin');
const fastStalls = { lockDurationMs: 5000, stalledIntervalMs: 1000, backoffMs: 500 };
/** The worker drain's deadline: the first job or two (about 1 s each, taking turns on one thread) finish within it. */
const DRAIN_MS = 2000;
const log = (line) => process.stdout.write(`${line}\n`);

async function exactlyOnce(cluster, ids, started) {
  await cluster.allCalledBack(ids, 900_000);
  const seconds = (performance.now() - started) / 1000;
  const runs = cluster.runsById();
  const finished = ids.map((id) => (runs.get(id) ?? []).filter((run) => run.status === 'completed').length);
  const callbacks = new Map();
  for (const delivery of cluster.receiver.deliveries) callbacks.set(delivery.id, (callbacks.get(delivery.id) ?? 0) + 1);
  let completed = 0;
  let retried = 0;
  for (const id of ids) {
    const { body } = await cluster.get(id);
    if (body.status === 'completed') completed++;
    if (body.attempts > 1) retried++;
  }
  return {
    submitted: ids.length,
    completed,
    duplicated: finished.filter((n) => n > 1).length + ids.filter((id) => (callbacks.get(id) ?? 0) > 1).length,
    lost: ids.length - completed,
    retried,
    badSignatures: cluster.receiver.deliveries.filter((d) => !d.valid).length,
    seconds: Number(seconds.toFixed(1)),
  };
}

async function faultRun(kind, jobs) {
  const cluster = await startCluster({ workers: 3, model, jobs: fastStalls });
  try {
    const started = performance.now();
    const ids = await cluster.submit(jobs, { audioPath: sharedAudio('jfk.wav') });
    while (cluster.receiver.deliveries.length < 10) await delay(50);
    const at = (performance.now() - started) / 1000;
    if (kind === 'kill') cluster.workers[0].child.kill('SIGKILL');
    else await cluster.redis.restart(2000);
    const result = { ...(await exactlyOnce(cluster, ids, started)), faultAtSeconds: Number(at.toFixed(1)) };
    if (kind === 'restart') {
      const metrics = await (await fetch(`${cluster.apiUrl}/metrics`)).text();
      const workerUrl = cluster.workers[0].lines.find((line) => line.event === 'worker_started')?.url;
      const workerMetrics = workerUrl ? await (await fetch(`${workerUrl}/metrics`)).text() : '';
      result.metricsSample = {
        api: metrics.split('\n').filter((line) => /^voxmill_(jobs|http_requests_total)|^process_resident/.test(line)),
        worker: workerMetrics
          .split('\n')
          .filter((line) => /^voxmill_(transcri|model_)|^voxmill_jobs|^process_resident/.test(line))
          .filter((line) => !/_bucket\{/.test(line) || /le="0.5"|le="1"|le="\+Inf"/.test(line)),
      };
    }
    return result;
  } finally {
    await cluster.stop();
  }
}

async function throughput(workers, jobs) {
  const cluster = await startCluster({ workers, model, jobs: fastStalls });
  try {
    const started = performance.now();
    const ids = await cluster.submit(jobs, { audioPath: sharedAudio('jfk.wav') });
    await cluster.allCalledBack(ids, 900_000);
    const minutes = (performance.now() - started) / 60_000;
    return {
      workers,
      jobs,
      seconds: Number((minutes * 60).toFixed(1)),
      jobsPerMinute: Number((jobs / minutes).toFixed(1)),
    };
  } finally {
    await cluster.stop();
  }
}

/** `voxmill serve` with 5 transcriptions in flight, then SIGTERM: what happens when. */
async function serveDrain() {
  const dir = mkdtempSync(join(tmpdir(), 'voxmill-drain-'));
  const config = join(dir, 'config.json');
  writeFileSync(config, JSON.stringify({ models: { tiny: { model } }, vad: false, cpuThreads: 1, threads: 1 }));
  const child = spawn(process.execPath, [
    join(root, 'dist', 'cli', 'main.js'),
    'serve',
    '--port',
    '0',
    '--no-auth',
    '--config',
    config,
  ]);
  const url = await new Promise((resolve, reject) => {
    let buffered = '';
    child.stdout.on('data', (chunk) => {
      buffered += chunk;
      const match = /"event":"listening","url":"([^"]+)"/.exec(buffered);
      if (match) resolve(match[1]);
    });
    child.once('exit', (code) => reject(new Error(`serve exited with ${code}`)));
  });
  const audio = await import('node:fs').then((fs) => fs.readFileSync(sharedAudio('jfk.wav')));
  const t0 = performance.now();
  const at = () => Number(((performance.now() - t0) / 1000).toFixed(2));
  const timeline = [];
  const requests = Array.from({ length: 5 }, async (_, i) => {
    const form = new FormData();
    form.set('model', 'tiny');
    form.set('file', new Blob([audio]), 'jfk.wav');
    const answer = await fetch(`${url}/v1/transcriptions`, { method: 'POST', body: form });
    await answer.arrayBuffer();
    timeline.push({ t: at(), event: `request ${i + 1} answered ${answer.status}` });
  });
  await delay(300);
  const exited = new Promise((resolve) => child.once('exit', (code) => resolve(code)));
  child.kill('SIGTERM');
  timeline.push({ t: at(), event: 'SIGTERM' });
  // A new connection after SIGTERM is refused (the listening socket is closed), which probes read as not ready.
  await delay(10);
  const ready = await fetch(`${url}/readyz`).then(
    (r) => `answered ${r.status}`,
    () => 'refused (no new connections)',
  );
  timeline.push({ t: at(), event: `/readyz ${ready}` });
  await Promise.allSettled(requests);
  const code = await exited;
  timeline.push({ t: at(), event: `process exited ${code}` });
  return timeline.sort((a, b) => a.t - b.t);
}

/** A worker running 5 jobs gets SIGTERM with a 2 s drain deadline. */
async function workerDrain() {
  const cluster = await startCluster({
    workers: 1,
    model,
    concurrency: 5,
    jobs: { ...fastStalls, drainTimeoutMs: DRAIN_MS },
  });
  try {
    const ids = await cluster.submit(5, { audioPath: sharedAudio('jfk.wav') });
    const t0 = performance.now();
    const at = () => Number(((performance.now() - t0) / 1000).toFixed(2));
    const worker = cluster.workers[0];
    while (
      (await Promise.all(ids.map(async (id) => (await cluster.get(id)).body.status))).some((s) => s === 'queued')
    ) {
      await delay(50);
    }
    const timeline = [{ t: at(), event: '5 jobs running' }];
    worker.child.kill('SIGTERM');
    timeline.push({ t: at(), event: 'SIGTERM' });
    const code = await worker.exited;
    timeline.push({ t: at(), event: `worker exited ${code}` });
    for (const line of worker.lines) {
      if (line.event === 'job_run') timeline.push({ t: null, event: `job run ${line.status} (${line.ms} ms)` });
      if (line.event === 'stopped') timeline.push({ t: null, event: `stopped after ${line.ms} ms` });
    }
    const states = await Promise.all(ids.map(async (id) => (await cluster.get(id)).body.status));
    timeline.push({ t: at(), event: `job states after exit: ${states.join(', ')}` });
    await cluster.addWorker();
    await cluster.allCalledBack(ids, 300_000);
    timeline.push({ t: at(), event: 'a new worker finished the handed-back jobs' });
    return timeline;
  } finally {
    await cluster.stop();
  }
}

async function main() {
  const { settings } = benchArgs('npm run bench:scale -- [--jobs N] [--throughput-jobs N]', {
    jobs: flag.integer('jobs per fault run (kill, restart)', 200),
    'throughput-jobs': flag.integer('jobs per throughput run (1, 2 and 3 workers)', 60),
  });
  ensureDist();
  ensureFixtures([model], 'the random-weight tiny.en fixture');
  const results = { machine: machineFacts(), commit: gitCommit(), settings };
  log(`machine: ${results.machine.cores} cores, ${results.machine.cpu}`);
  results.kill = await faultRun('kill', settings.jobs);
  log(`kill -9 a worker mid-run: ${JSON.stringify(results.kill)}`);
  results.restart = await faultRun('restart', settings.jobs);
  const { metricsSample, ...restart } = results.restart;
  log(`restart Redis mid-run: ${JSON.stringify(restart)}`);
  results.throughput = [];
  for (const workers of [1, 2, 3]) {
    const run = await throughput(workers, settings.throughputJobs);
    results.throughput.push(run);
    const ratio = run.jobsPerMinute / results.throughput[0].jobsPerMinute;
    log(`throughput, ${workers} worker(s): ${run.jobsPerMinute} jobs/min (${ratio.toFixed(2)}x one worker)`);
  }
  log('metrics sample (API):');
  for (const line of metricsSample.api) log(`  ${line}`);
  log('metrics sample (worker):');
  for (const line of metricsSample.worker) log(`  ${line}`);
  results.serveDrain = await serveDrain();
  log('drain, voxmill serve with 5 requests in flight:');
  for (const { t, event } of results.serveDrain) log(`  ${t.toFixed(2)} s  ${event}`);
  results.workerDrain = await workerDrain();
  log(`drain, voxmill worker with 5 jobs running (drainTimeoutMs ${DRAIN_MS}):`);
  for (const { t, event } of results.workerDrain) log(`  ${t === null ? '      ' : `${t.toFixed(2)} s`}  ${event}`);
  log(`raw results: ${writeResults('scale', results)}`);
}

runMain('scale', main);
