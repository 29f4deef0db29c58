// Options of createJobQueue(): validated once, every limit named and defaulted here (the backends never re-default).
import { InvalidOptionTypeError, InvalidOptionValueError } from '../errors.js';
import type { Speech } from '../speech.js';
import {
  booleanOption,
  functionOption,
  integerOption,
  isPlainObject,
  objectOption,
  rejectUnknownKeys,
  stringOption,
} from '../util/validate.js';
import { type CallbackLookup, type CallbackPolicy, parseCallbackHosts, systemLookup } from './callback-target.js';

/** What a queue that works jobs needs of the engine. */
export type JobEngine = Pick<Speech, 'transcribe' | 'modelIds'> & Partial<Pick<Speech, 'cpu'>>;

/** Signed result callbacks (`callbackUrl`). */
export interface JobCallbackOptions {
  /**
   * The HMAC-SHA256 key callbacks are signed with (`Voxmill-Signature: t=<unix seconds>,v1=<hex>`, over
   * `<t>.<body>`). Without it, jobs with a callback URL are refused.
   */
  secret?: string;
  /** Deliveries tried per callback before it is given up (any 2xx answer ends them). Default 8. */
  attempts?: number;
  /** First retry delay in ms; each next one doubles. Default 1000 (the 8th try comes about 2 minutes later). */
  backoffMs?: number;
  /** Longest wait for the receiver's answer (the host's lookup included), in ms. Default 10000. */
  timeoutMs?: number;
  /**
   * Plain `http://` callback URLs to any host. Default false: callbacks go over https, except to hosts on
   * `callbackHosts` (a private network's receivers often have no certificate).
   */
  allowHttp?: boolean;
  /**
   * Resolves a callback host to its addresses (each checked before any connection). Default: the system resolver
   * (`dns.promises.lookup` with `all: true`).
   */
  lookup?: CallbackLookup;
}

/** Options of {@link createJobQueue}. */
export interface JobQueueOptions {
  /**
   * Redis, for a queue shared by many processes (BullMQ): a `redis://` URL or ioredis options. Without it the queue
   * lives in this process: jobs are held in memory and lost on restart.
   */
  connection?: string | Record<string, unknown>;
  /** The engine that runs the jobs. Required for the in-process queue, and on Redis when `work` is true. */
  speech?: JobEngine;
  /** Redis: whether this process also works jobs (a worker), or only adds and reads them. Default: when `speech`. */
  work?: boolean;
  /** Redis: the BullMQ queue name (and the prefix of voxmill's own keys). Default `voxmill-transcriptions`. */
  name?: string;
  /**
   * Jobs this process runs at once. Default: the CPU budget over the threads one transcription takes
   * (`speech.cpu`), at least 1 and at most the engine's `maxConcurrentRuns`.
   */
  concurrency?: number;
  /** Runs a failing job gets before it is failed for good (the dead-letter state). Default 3. */
  attempts?: number;
  /** First retry delay after a failed run, in ms; each next one doubles. Default 5000. */
  backoffMs?: number;
  /** How long ended jobs (results, errors) are kept, in seconds. Default 86400 (a day). */
  resultTtlSeconds?: number;
  /**
   * Most ended jobs kept at once (each with its result); past it the oldest go first, whatever their age. Bounds the
   * memory (in-process) or the Redis space results take. Default 10000.
   */
  maxKeptJobs?: number;
  /**
   * Redis: how long uploaded audio waits for a worker, in seconds; a job whose audio expired fails with
   * `audio_expired`. Default 86400 (a day).
   */
  audioTtlSeconds?: number;
  /**
   * Redis: a directory every process shares (NFS, a volume) to hold uploaded audio instead of Redis. Default: audio
   * is kept in Redis.
   */
  audioDir?: string;
  /**
   * Largest audio one job may carry, in bytes; larger is refused with AudioDecodeError `AUDIO_TOO_LARGE` (HTTP 413).
   * The HTTP route's `limits.maxFileBytes` (25 MiB) applies first. Default 256 MiB; at most 512 MiB (Redis' largest
   * value).
   */
  maxAudioBytes?: number;
  /** Jobs waiting at once; more are refused with QueueFullError (HTTP 429 `queue_full`). Default 10000. */
  maxQueuedJobs?: number;
  /**
   * Audio bytes held at once, more refused with QueueFullError (HTTP 429 `queue_full`): in-process, by waiting jobs;
   * on Redis, by every job not yet ended (waiting, running or waiting for a retry), across all processes, which bounds
   * the audio kept in Redis (or `audioDir`). Default 1 GiB.
   */
  maxQueuedBytes?: number;
  /**
   * Redis: a running job's lock, in ms. A worker that dies (kill -9, a lost machine) leaves its job locked this
   * long at most before another worker takes it again. Default 30000.
   */
  lockDurationMs?: number;
  /** Redis: how often workers look for jobs whose worker died, in ms. Default 30000. */
  stalledIntervalMs?: number;
  /** Redis: times a job may lose its worker before it fails (`job_stalled`). Default 2. */
  maxStalledCount?: number;
  /**
   * `close()`: how long running jobs get to finish, in ms; past it they are cancelled and (Redis) handed back to the
   * queue for another worker. Default 30000.
   */
  drainTimeoutMs?: number;
  /** Least time between two progress reports of a job, in ms. Default 1000. */
  progressIntervalMs?: number;
  /** How often `wait` looks at a job on Redis, in ms, besides the events. Default 1000. */
  pollIntervalMs?: number;
  /** Signed result callbacks. */
  callbacks?: JobCallbackOptions;
  /**
   * Hosts callbacks may reach although they resolve to addresses refused by default (loopback, private, link-local,
   * unique-local, multicast, unspecified, reserved; also IPv4-mapped): a name (`hooks.internal`), every subdomain
   * of one (`*.internal.example`), an address (`10.0.0.7`, `::1`) or a range (`10.0.0.0/8`). Listed hosts may also
   * be called over plain http. Default none: callbacks reach public addresses only.
   */
  callbackHosts?: string[];
}

export interface ResolvedCallbackOptions extends CallbackPolicy {
  secret: string | undefined;
  attempts: number;
  backoffMs: number;
}

export interface ResolvedJobQueueOptions {
  connection: string | Record<string, unknown> | undefined;
  speech: JobEngine | undefined;
  work: boolean;
  name: string;
  concurrency: number;
  attempts: number;
  backoffMs: number;
  resultTtlSeconds: number;
  maxKeptJobs: number;
  audioTtlSeconds: number;
  audioDir: string | undefined;
  maxAudioBytes: number;
  maxQueuedJobs: number;
  maxQueuedBytes: number;
  lockDurationMs: number;
  stalledIntervalMs: number;
  maxStalledCount: number;
  drainTimeoutMs: number;
  progressIntervalMs: number;
  pollIntervalMs: number;
  callbacks: ResolvedCallbackOptions;
}

export const JOB_QUEUE_KEYS = [
  'connection',
  'speech',
  'work',
  'name',
  'concurrency',
  'attempts',
  'backoffMs',
  'resultTtlSeconds',
  'maxKeptJobs',
  'audioTtlSeconds',
  'audioDir',
  'maxAudioBytes',
  'maxQueuedJobs',
  'maxQueuedBytes',
  'lockDurationMs',
  'stalledIntervalMs',
  'maxStalledCount',
  'drainTimeoutMs',
  'progressIntervalMs',
  'pollIntervalMs',
  'callbacks',
  'callbackHosts',
] as const;
const CALLBACK_KEYS = ['secret', 'attempts', 'backoffMs', 'timeoutMs', 'allowHttp', 'lookup'] as const;

const DAY_SECONDS = 86_400;
const QUEUE_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;

/**
 * The default number of jobs one process runs at once: as many as the CPU budget can feed, and no more than the
 * engine's cap on runs at once (`maxConcurrentRuns`), so jobs do not hold decoded audio while they wait for a run.
 */
export function defaultJobConcurrency(speech: JobEngine | undefined): number {
  const cpu = speech?.cpu;
  if (!cpu) return 1;
  const fed = Math.max(1, Math.floor(cpu.cpuThreads / cpu.threads));
  return cpu.maxConcurrentRuns ? Math.min(fed, cpu.maxConcurrentRuns) : fed;
}

function connectionOption(value: unknown): string | Record<string, unknown> | undefined {
  if (value === undefined) return undefined;
  if (typeof value === 'string') {
    if (!/^rediss?:\/\//.test(value)) {
      throw new InvalidOptionValueError('connection', 'a redis:// or rediss:// URL', value);
    }
    return value;
  }
  if (isPlainObject(value)) return value;
  throw new InvalidOptionTypeError('connection', 'a redis:// URL or ioredis options', value);
}

function resolveCallbacks(raw: unknown, hosts: unknown): ResolvedCallbackOptions {
  const options = objectOption('callbacks', raw);
  rejectUnknownKeys('callbacks', options, CALLBACK_KEYS);
  const secret = stringOption('callbacks.secret', options.secret, 4096);
  if (secret !== undefined && secret.length < 16) {
    throw new InvalidOptionValueError('callbacks.secret', 'at least 16 characters', `${secret.length} characters`);
  }
  return {
    secret,
    attempts: integerOption('callbacks.attempts', options.attempts, 1, 100) ?? 8,
    backoffMs: integerOption('callbacks.backoffMs', options.backoffMs, 0, 3_600_000) ?? 1000,
    timeoutMs: integerOption('callbacks.timeoutMs', options.timeoutMs, 100, 600_000) ?? 10_000,
    allowHttp: booleanOption('callbacks.allowHttp', options.allowHttp) ?? false,
    hosts: parseCallbackHosts('callbackHosts', hosts),
    lookup: functionOption('callbacks.lookup', options.lookup) ?? systemLookup,
  };
}

export function resolveJobQueueOptions(raw: JobQueueOptions = {}): ResolvedJobQueueOptions {
  const options = objectOption('options', raw);
  rejectUnknownKeys('options', options, JOB_QUEUE_KEYS);
  const connection = connectionOption(options.connection);
  const speech = raw.speech;
  if (speech !== undefined && (typeof speech !== 'object' || typeof speech.transcribe !== 'function')) {
    throw new InvalidOptionTypeError('speech', 'a Speech from createSpeech()', speech);
  }
  const work = booleanOption('work', options.work) ?? speech !== undefined;
  if (work && !speech) throw new InvalidOptionValueError('speech', 'an engine to run the jobs with', speech);
  const name = stringOption('name', options.name) ?? 'voxmill-transcriptions';
  if (!QUEUE_NAME.test(name)) {
    throw new InvalidOptionValueError('name', 'letters, digits, _ . - (at most 64, no leading punctuation)', name);
  }
  const audioDir = stringOption('audioDir', options.audioDir, 4096);
  if (audioDir !== undefined && audioDir.trim() === '') {
    throw new InvalidOptionValueError('audioDir', 'a directory path', audioDir);
  }
  return {
    connection,
    speech,
    work,
    name,
    concurrency: integerOption('concurrency', options.concurrency, 1, 256) ?? defaultJobConcurrency(speech),
    attempts: integerOption('attempts', options.attempts, 1, 100) ?? 3,
    backoffMs: integerOption('backoffMs', options.backoffMs, 0, 3_600_000) ?? 5000,
    resultTtlSeconds: integerOption('resultTtlSeconds', options.resultTtlSeconds, 1, 365 * DAY_SECONDS) ?? DAY_SECONDS,
    maxKeptJobs: integerOption('maxKeptJobs', options.maxKeptJobs, 1, 10_000_000) ?? 10_000,
    audioTtlSeconds: integerOption('audioTtlSeconds', options.audioTtlSeconds, 1, 30 * DAY_SECONDS) ?? DAY_SECONDS,
    audioDir,
    maxAudioBytes: integerOption('maxAudioBytes', options.maxAudioBytes, 1, 512 * 1024 ** 2) ?? 256 * 1024 ** 2,
    maxQueuedJobs: integerOption('maxQueuedJobs', options.maxQueuedJobs, 1, 10_000_000) ?? 10_000,
    maxQueuedBytes: integerOption('maxQueuedBytes', options.maxQueuedBytes, 1, 2 ** 50) ?? 1024 ** 3,
    lockDurationMs: integerOption('lockDurationMs', options.lockDurationMs, 1000, 3_600_000) ?? 30_000,
    stalledIntervalMs: integerOption('stalledIntervalMs', options.stalledIntervalMs, 500, 3_600_000) ?? 30_000,
    maxStalledCount: integerOption('maxStalledCount', options.maxStalledCount, 0, 100) ?? 2,
    drainTimeoutMs: integerOption('drainTimeoutMs', options.drainTimeoutMs, 0, 3_600_000) ?? 30_000,
    progressIntervalMs: integerOption('progressIntervalMs', options.progressIntervalMs, 0, 600_000) ?? 1000,
    pollIntervalMs: integerOption('pollIntervalMs', options.pollIntervalMs, 50, 600_000) ?? 1000,
    callbacks: resolveCallbacks(options.callbacks, options.callbackHosts),
  };
}
