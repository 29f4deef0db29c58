// A job cluster on this machine, for the scale tests (test/scale/) and bench/scale.mjs: a real Redis (Debian's
// redis-server on a free loopback port, append-only so a restart keeps the jobs), one `voxmill serve --redis
// --no-work` API process, N `voxmill worker` processes, and a callback receiver that checks every signature.
import { execFileSync, spawn } from 'node:child_process';
import { createHmac, timingSafeEqual } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';

const repoRoot = resolve(import.meta.dirname, '..', '..');
const cli = join(repoRoot, 'dist', 'cli', 'main.js');

export function redisServerPath() {
  try {
    return execFileSync('sh', ['-c', 'command -v redis-server'], { encoding: 'utf8' }).trim();
  } catch {
    throw new Error('redis-server is not installed: apt-get install redis-server (scripts/setup-system.sh --dev does)');
  }
}

async function freePort() {
  const server = createServer();
  await new Promise((done) => server.listen(0, '127.0.0.1', done));
  const { port } = server.address();
  await new Promise((done) => server.close(done));
  return port;
}

/** Redis with its data in a temporary directory; `restart` stops it (SIGTERM: it writes its data) and starts it. */
export async function startRedis() {
  const binary = redisServerPath();
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'voxmill-redis-'));
  let child;
  const launch = async () => {
    const args = ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--appendonly', 'yes', '--save', ''];
    child = spawn(binary, args, { stdio: 'ignore' });
    for (let i = 0; i < 100; i++) {
      if (child.exitCode !== null) throw new Error(`redis-server exited with ${child.exitCode}`);
      try {
        execFileSync('redis-cli', ['-p', String(port), 'ping'], { stdio: 'pipe' });
        return;
      } catch {
        await delay(50);
      }
    }
    throw new Error(`redis-server did not answer on port ${port} within 5 s`);
  };
  const halt = async () => {
    if (!child || child.exitCode !== null) return;
    const exited = new Promise((done) => child.once('exit', done));
    child.kill('SIGTERM');
    await exited;
  };
  await launch();
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    async restart(downMs = 1000) {
      await halt();
      await delay(downMs);
      await launch();
    },
    async stop() {
      await halt();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Runs a voxmill command; resolves once a log line satisfies `ready`. Lines are parsed JSON, kept in `lines`. */
export function startProcess(args, env, ready) {
  const child = spawn(process.execPath, [cli, ...args], { env: { ...process.env, ...env } });
  const lines = [];
  let stderr = '';
  child.stderr.on('data', (chunk) => {
    stderr += chunk;
  });
  const exited = new Promise((done) => child.once('close', (code, signal) => done(code ?? signal)));
  const started = new Promise((done, fail) => {
    let buffered = '';
    child.stdout.on('data', (chunk) => {
      buffered += chunk;
      for (let at = buffered.indexOf('\n'); at >= 0; at = buffered.indexOf('\n')) {
        const line = buffered.slice(0, at);
        buffered = buffered.slice(at + 1);
        let record;
        try {
          record = JSON.parse(line);
        } catch {
          record = { notJson: line };
        }
        lines.push(record);
        if (ready(record)) done();
      }
    });
    void exited.then((code) => fail(new Error(`voxmill ${args[0]} exited with ${code}: ${stderr.slice(-2000)}`)));
  });
  return { child, lines, exited, started, stderr: () => stderr };
}

function verify(secret, body, header) {
  const parts = Object.fromEntries(
    String(header ?? '')
      .split(',')
      .map((part) => part.split('=')),
  );
  if (!parts.t || !/^[0-9a-f]{64}$/.test(parts.v1 ?? '')) return false;
  const expected = createHmac('sha256', secret).update(`${parts.t}.${body}`).digest();
  return timingSafeEqual(expected, Buffer.from(parts.v1, 'hex'));
}

/** An HTTP server that records every callback and whether its signature holds. */
async function startReceiver(secret) {
  const deliveries = [];
  const server = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk) => {
      body += chunk;
    });
    req.on('end', () => {
      let parsed;
      try {
        parsed = JSON.parse(body);
      } catch {
        parsed = undefined;
      }
      deliveries.push({
        id: parsed?.job?.id,
        type: parsed?.type,
        valid: verify(secret, body, req.headers['voxmill-signature']),
        job: parsed?.job,
      });
      res.statusCode = 204;
      res.end();
    });
  });
  await new Promise((done) => server.listen(0, '127.0.0.1', done));
  return { url: `http://127.0.0.1:${server.address().port}/hook`, deliveries, close: () => server.close() };
}

/**
 * Starts Redis, the API and `workers` workers. `jobs`: the config's jobs options (fast stall detection for tests).
 * Returns the cluster; `stop()` ends everything.
 */
export async function startCluster({ workers = 3, model, jobs = {}, keys = ['key-a', 'key-b'], concurrency = 1 }) {
  const redis = await startRedis();
  const dir = mkdtempSync(join(tmpdir(), 'voxmill-cluster-'));
  const secret = 'cluster-callback-secret-0123456789';
  const config = join(dir, 'config.json');
  writeFileSync(
    config,
    JSON.stringify({
      models: { tiny: { model } },
      vad: false,
      cpuThreads: 1,
      threads: 1,
      // The callback receiver listens on loopback, which callbacks may reach only when listed.
      jobs: { name: `scale-${process.pid}-${Date.now()}`, callbackHosts: ['127.0.0.1'], ...jobs },
      // One batch client submits and polls many jobs at once.
      http: { limits: { maxConcurrentRequestsPerClient: 32 } },
    }),
  );
  const env = { VOXMILL_API_KEYS: keys.join(','), VOXMILL_CALLBACK_SECRET: secret, VOXMILL_REDIS_URL: redis.url };
  const receiver = await startReceiver(secret);
  const processes = [];
  const api = startProcess(
    ['serve', '--port', '0', '--config', config, '--no-work', '--quiet'],
    env,
    (r) => r.event === 'listening',
  );
  processes.push(api);
  await api.started;
  const apiUrl = api.lines.find((r) => r.event === 'listening').url;
  const workerList = [];
  const addWorker = async () => {
    // Each worker serves its probes and metrics on a port of its own (the `worker_started` line's url).
    const worker = startProcess(
      ['worker', '--config', config, '--concurrency', String(concurrency), '--port', '0'],
      env,
      (r) => r.event === 'worker_started',
    );
    processes.push(worker);
    workerList.push(worker);
    await worker.started;
    return worker;
  };
  for (let i = 0; i < workers; i++) await addWorker();

  /** Submits `count` jobs of `audioPath` as `key`, `parallel` at a time; resolves to their ids in order. */
  const submit = async (count, { audioPath, key = keys[0], parallel = 8, callback = true }) => {
    const audio = readFileSync(audioPath);
    const ids = new Array(count);
    let next = 0;
    const one = async () => {
      for (let i = next++; i < count; i = next++) {
        const form = new FormData();
        form.set('model', 'tiny');
        if (callback) form.set('callback_url', receiver.url);
        form.set('file', new Blob([audio]), 'audio.wav');
        const answer = await fetch(`${apiUrl}/v1/jobs/transcriptions`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key}` },
          body: form,
        });
        const body = await answer.json();
        if (answer.status !== 202) throw new Error(`job ${i}: ${answer.status} ${JSON.stringify(body)}`);
        ids[i] = body.id;
      }
    };
    await Promise.all(Array.from({ length: parallel }, one));
    return ids;
  };

  const get = async (id, key = keys[0]) => {
    const answer = await fetch(`${apiUrl}/v1/jobs/${id}`, { headers: { authorization: `Bearer ${key}` } });
    return { status: answer.status, body: await answer.json() };
  };

  /** Resolves when each id has had a callback (or `timeoutMs` passes); to the ms it took. */
  const allCalledBack = async (ids, timeoutMs) => {
    const started = performance.now();
    const wanted = new Set(ids);
    while (performance.now() - started < timeoutMs) {
      const seen = new Set(receiver.deliveries.map((d) => d.id).filter((id) => wanted.has(id)));
      if (seen.size === wanted.size) return performance.now() - started;
      await delay(100);
    }
    throw new Error(`not every job called back within ${timeoutMs} ms`);
  };

  /** Job runs each worker finished (its `job_run` log lines), by job id. */
  const runsById = () => {
    const runs = new Map();
    for (const worker of workerList) {
      for (const line of worker.lines) {
        if (line.event !== 'job_run') continue;
        const list = runs.get(line.id) ?? [];
        list.push(line);
        runs.set(line.id, list);
      }
    }
    return runs;
  };

  return {
    redis,
    apiUrl,
    api,
    workers: workerList,
    receiver,
    keys,
    addWorker,
    submit,
    get,
    allCalledBack,
    runsById,
    async stop() {
      for (const process_ of processes) {
        if (process_.child.exitCode === null && process_.child.signalCode === null) process_.child.kill('SIGKILL');
      }
      await Promise.all(processes.map((p) => p.exited));
      receiver.close();
      await redis.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
