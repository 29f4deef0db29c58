/** `voxmill worker`: a process that only runs transcription jobs from Redis, with `serve`'s model configuration. */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type Command, InvalidArgumentError } from 'commander';
import { createOpsHandler } from '../http/ops-handler.js';
import { chargeJobs, rateLimiterFor } from '../http/rate-limits.js';
import type { RedisJobQueue } from '../jobs/redis-queue.js';
import type { JobQueue } from '../jobs/types.js';
import { createSpeechMetrics } from '../metrics/speech-metrics.js';
import { jobQueueFor, redisConnection } from './job-queue-setup.js';
import { keepRunningWithoutStdout, logLine } from './json-log.js';
import { engineFromConfig, port, preloadModels } from './serve-command.js';
import { loadServeConfig, type ServeConfig } from './serve-config.js';

interface WorkerFlags {
  redis?: string;
  config?: string;
  modelsDir?: string;
  concurrency?: number;
  port?: number;
  host?: string;
  preload?: boolean;
  lazy?: boolean;
  quiet?: boolean;
}

function positiveInteger(value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value) || n < 1 || n > 256)
    throw new InvalidArgumentError('--concurrency must be an integer from 1 to 256');
  return n;
}

async function work(flags: WorkerFlags): Promise<void> {
  keepRunningWithoutStdout();
  const config: ServeConfig = flags.config ? await loadServeConfig(flags.config) : { speech: {} };
  if (redisConnection({ ...(flags.redis ? { redis: flags.redis } : {}), work: true }, config) === undefined) {
    throw new Error('a worker needs Redis: --redis redis://host:6379, VOXMILL_REDIS_URL, or "jobs.connection"');
  }
  const source = flags.config ? `the config file ${flags.config}` : 'the options';
  const speech = engineFromConfig(config, flags, source);
  const jobsConfig = { ...config.jobs, ...(flags.concurrency ? { concurrency: flags.concurrency } : {}) };
  let queue: JobQueue;
  try {
    queue = jobQueueFor(
      { ...config, jobs: jobsConfig },
      speech,
      { ...(flags.redis ? { redis: flags.redis } : {}), work: true },
      source,
    );
  } catch (error) {
    await speech.close();
    throw error;
  }

  // Per-client audio limits (http.limits.audioSecondsPerHour): the jobs this worker completes charge their owners, in
  // the buckets on Redis the API processes read.
  const limiter = rateLimiterFor({
    requestsPerMinute: 0,
    audioSecondsPerHour: config.http?.limits?.audioSecondsPerHour ?? 0,
    jobs: queue,
  });
  if (limiter) chargeJobs(queue, limiter);

  if (!flags.quiet) {
    (queue as RedisJobQueue).on('worked', (run) => {
      logLine({ ...(run.status === 'completed' ? {} : { level: 'warn' }), event: 'job_run', ...run });
    });
  }

  // Probes and metrics for the orchestrator, when asked for a port.
  let server: ReturnType<typeof createServer> | undefined;
  let draining = false;
  if (flags.port !== undefined) {
    const metrics = createSpeechMetrics();
    metrics.watchEngine(speech);
    metrics.watchJobs(queue);
    const ops = createOpsHandler({ speech, jobs: queue, metrics, draining: () => draining });
    server = createServer((req, res) => ops(req, res));
  }

  let stopping = false;
  const stop = (signal: NodeJS.Signals) => {
    if (stopping) {
      logLine({ level: 'warn', event: 'shutdown_forced', signal });
      process.exit(1);
    }
    stopping = true;
    draining = true;
    const started = Date.now();
    logLine({ event: 'shutdown', signal, message: 'no new jobs; finishing running ones (or handing them back)' });
    queue
      .close()
      .then(async () => {
        server?.close();
        await speech.close();
        logLine({ event: 'stopped', ms: Date.now() - started });
        process.exit(0);
      })
      .catch((error: Error) => {
        logLine({ level: 'error', event: 'shutdown_failed', message: error.message });
        process.exit(1);
      });
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);

  if (flags.preload) await preloadModels(speech, flags.lazy === true);
  let url: string | undefined;
  if (server) {
    const listening = server;
    const address = await new Promise<AddressInfo>((resolve, reject) => {
      listening.once('error', reject);
      listening.listen(flags.port, flags.host ?? '127.0.0.1', () => resolve(listening.address() as AddressInfo));
    });
    url = `http://${address.family === 'IPv6' ? `[${address.address}]` : address.address}:${address.port}`;
  }
  logLine({
    event: 'worker_started',
    models: speech.status().map(({ id, installed }) => ({ id, installed })),
    ...(url ? { url } : {}),
  });
}

export function registerWorkerCommand(program: Command): Command {
  return program
    .command('worker')
    .description('run transcription jobs from Redis (submitted to `voxmill serve --redis` or createJobQueue)')
    .option('--redis <url>', 'the Redis holding the jobs (default VOXMILL_REDIS_URL, then "jobs.connection")')
    .option('-c, --config <file>', "JSON config, as serve's: createSpeech options plus jobs")
    .option('--models-dir <dir>', 'where catalog models are installed')
    .option(
      '--concurrency <n>',
      'jobs run at once (default: the CPU budget over threads per transcription, at most maxConcurrentRuns)',
      positiveInteger,
    )
    .option('-p, --port <port>', 'serve /healthz, /readyz and /metrics on this port (default: none)', port)
    .option('--host <host>', 'interface for --port (default 127.0.0.1; 0.0.0.0 for all)')
    .option('--preload', 'load every configured speech-to-text model before taking jobs')
    .option('--lazy', 'with --preload: skip models that are not installed instead of failing')
    .option('-q, --quiet', 'no log line per job run')
    .addHelpText(
      'after',
      '\nSIGTERM or SIGINT: take no new jobs, let running ones finish within jobs.drainTimeoutMs (default 30 s),\n' +
        'hand the rest back to the queue for another worker, exit 0. A second signal exits at once.',
    )
    .action(work);
}
