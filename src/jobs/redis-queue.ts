// The job queue on Redis, through BullMQ: any number of processes add jobs and any number work them. BullMQ gives
// the retries with backoff, the locks that make a job complete once, and the recovery of jobs whose worker died
// (stalled jobs run again elsewhere). voxmill adds, under its own keys (`voxmill:<name>:...`): the audio (with a TTL,
// or in a shared directory), each owner's list of jobs, cancel markers and a cancel channel that reaches the worker
// running a job, and a second queue that delivers signed callbacks with retries.
import { EventEmitter } from 'node:events';
import { setTimeout as delay } from 'node:timers/promises';
import type * as BullMQ from 'bullmq';
import type { Job, JobState, Queue, QueueEvents, Worker } from 'bullmq';
import type * as IORedis from 'ioredis';
import type { Redis, RedisOptions } from 'ioredis';
import { ClosedError, JobNotFoundError, JobStoreError, QueueFullError, VoxmillError } from '../errors.js';
import type { Transcription } from '../stt/types.js';
import { settlesWithin } from '../util/job.js';
import { lazyModule } from '../util/lazy-module.js';
import { type AudioStore, directoryAudioStore, redisAudioStore } from './audio-store.js';
import { callbackBody, deliverCallback } from './callback.js';
import {
  type CheckedJobRequest,
  checkCallbackTarget,
  checkJobRequest,
  DEFAULT_LIST_LIMIT,
  DEFAULT_OWNER,
  isEnded,
  isJobId,
  MAX_LIST_LIMIT,
  newJobId,
  queuedJob,
  unixSeconds,
} from './job-request.js';
import type { JobEngine, ResolvedJobQueueOptions } from './options.js';
import { CANCELLED, emitSafely, isRetriable, jobErrorOf, runTranscriptionJob } from './run-job.js';
import type {
  JobCounts,
  JobError,
  JobQueue,
  JobQueueEvents,
  JobTranscribeOptions,
  ListJobsOptions,
  TranscriptionJob,
  TranscriptionJobRequest,
} from './types.js';

// BullMQ and ioredis load when a queue on Redis is made, not with the library (about 160 ms to import).
const bullmq = lazyModule<typeof BullMQ>('bullmq');
const ioredis = lazyModule<typeof IORedis>('ioredis');

/** What a BullMQ job carries; the audio itself is in the audio store. */
interface StoredJob {
  owner: string;
  options: JobTranscribeOptions;
  callbackUrl?: string;
  filename?: string;
  createdMs: number;
}

/** A callback to deliver: the job as it ended. */
interface StoredCallback {
  url: string;
  job: TranscriptionJob;
}

const QUEUED_STATES = ['waiting', 'delayed', 'prioritized', 'waiting-children'] as const;
/** How long `cancel` waits for a running job to stop before answering with it as it is. */
const CANCEL_WAIT_MS = 2000;
/** Longest wait of a callback for its job to be marked ended. */
const CALLBACK_SETTLE_MS = 2000;
/**
 * How long a worker past its drain deadline waits for its jobs to be handed back before it cuts its connection, and
 * how long any closing step that needs Redis may take.
 */
const HAND_BACK_MS = 5000;
/** How long a closing step waits on a Redis that is not connected. */
const UNREACHABLE_MS = 1000;
/** How many of an owner's newest jobs `list` looks through for ones with the wanted status. */
const LIST_SCAN = 1000;

/**
 * Takes `bytes` of the audio budget for a job, atomically across every process: KEYS[1] the per-job hash of bytes,
 * KEYS[2] the total, KEYS[3] a sorted set of each job's deadline; ARGV id, bytes, limit, now (ms), deadline (ms).
 * Holds past their deadline (the audio's TTL: a job's audio is gone by then, so it holds nothing) are given back first,
 * so bytes a lost release left behind (a worker killed between its job's end and the release) heal on their own.
 * Returns -1 when taken, else the bytes already held (the job is refused).
 */
const RESERVE_BYTES = `
local expired = redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', ARGV[4], 'LIMIT', 0, 1000)
for _, id in ipairs(expired) do
  local bytes = redis.call('HGET', KEYS[1], id)
  if bytes then
    redis.call('HDEL', KEYS[1], id)
    redis.call('DECRBY', KEYS[2], bytes)
  end
  redis.call('ZREM', KEYS[3], id)
end
local held = tonumber(redis.call('GET', KEYS[2]) or '0')
if held < 0 then
  redis.call('SET', KEYS[2], '0')
  held = 0
end
if held + tonumber(ARGV[2]) > tonumber(ARGV[3]) then return held end
redis.call('INCRBY', KEYS[2], ARGV[2])
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('ZADD', KEYS[3], ARGV[5], ARGV[1])
return -1`;
/** Gives a job's bytes back, once however often it is called: KEYS as above; ARGV id. */
const RELEASE_BYTES = `
redis.call('ZREM', KEYS[3], ARGV[1])
local bytes = redis.call('HGET', KEYS[1], ARGV[1])
if not bytes then return 0 end
redis.call('HDEL', KEYS[1], ARGV[1])
redis.call('DECRBY', KEYS[2], bytes)
return tonumber(bytes)`;

/** Job errors travel through BullMQ as the failure's message. */
function encodeError(error: JobError): string {
  return JSON.stringify(error);
}

function decodeError(reason: string | undefined): JobError {
  try {
    const parsed = JSON.parse(reason ?? '') as JobError;
    if (typeof parsed?.code === 'string' && typeof parsed.message === 'string') return parsed;
  } catch {
    // BullMQ's own reasons are plain text
  }
  const stalled = /stalled/i.test(reason ?? '');
  return { code: stalled ? 'job_stalled' : 'internal_error', message: reason ?? 'unknown failure' };
}

function redisOptions(connection: string | Record<string, unknown>, forWorker: boolean): RedisOptions {
  const base = typeof connection === 'string' ? {} : (connection as RedisOptions);
  // Workers block on Redis and must wait out a restart instead of failing each command (BullMQ requires it).
  return { ...base, ...(forWorker ? { maxRetriesPerRequest: null } : {}) };
}

function newClient(connection: string | Record<string, unknown>, forWorker: boolean): Redis {
  const options = redisOptions(connection, forWorker);
  const { Redis: Client } = ioredis();
  return typeof connection === 'string' ? new Client(connection, options) : new Client(options);
}

export class RedisJobQueue extends EventEmitter implements JobQueue {
  readonly backend = 'redis' as const;
  readonly #options: ResolvedJobQueueOptions;
  readonly #prefix: string;
  readonly #client: Redis;
  readonly #queue: Queue<StoredJob, Transcription>;
  readonly #callbacks: Queue<StoredCallback>;
  readonly #events: QueueEvents;
  readonly #audio: AudioStore;
  readonly #working: Working | undefined;
  #closed: Promise<void> | undefined;
  /** Every Redis client made here: BullMQ closes none it was given, so close() does. */
  readonly #connections: Redis[] = [];
  readonly #connection: string | Record<string, unknown>;

  constructor(options: ResolvedJobQueueOptions) {
    super();
    // Every waiter adds its listeners; many at once are normal here, not a leak.
    this.setMaxListeners(0);
    const connection = options.connection as string | Record<string, unknown>;
    this.#connection = connection;
    this.#options = options;
    this.#prefix = `voxmill:${options.name}`;
    this.#client = this.connect(false);
    const bull = { connection: this.#client };
    const { Queue: BullQueue, QueueEvents: BullQueueEvents } = bullmq();
    this.#queue = new BullQueue(options.name, bull);
    this.#callbacks = new BullQueue(`${options.name}-callbacks`, bull);
    this.#events = new BullQueueEvents(options.name, { connection: this.connect(true) });
    const report = (error: Error) => this.emit('connectionError', error);
    this.#queue.on('error', report);
    this.#callbacks.on('error', report);
    this.#events.on('error', report);
    this.#events.on('progress', ({ jobId, data }) => {
      if (typeof data === 'number') this.emit('progress', jobId, data);
    });
    this.#events.on('completed', ({ jobId }) => this.emit('completed', jobId));
    this.#events.on('failed', ({ jobId, failedReason }) => {
      const error = decodeError(failedReason);
      if (error.code === CANCELLED.code) this.emit('cancelled', jobId);
      else this.emit('failed', jobId, error);
      // A job failed by BullMQ's stall check never reached a processor's end: its callback and audio are seen to here.
      if (error.code === 'job_stalled' && options.work) void this.#afterStalled(jobId).catch(report);
    });
    this.#audio = options.audioDir
      ? directoryAudioStore(options.audioDir)
      : redisAudioStore(this.#client, this.#prefix, options.audioTtlSeconds);
    this.#working = options.work ? new Working(this) : undefined;
  }

  /** @internal A Redis client that reports its errors and is closed with the queue. */
  connect(forWorker: boolean): Redis {
    const client = newClient(this.#connection, forWorker);
    client.on('error', (error: Error) => this.emit('connectionError', error));
    this.#connections.push(client);
    return client;
  }

  async #afterStalled(id: string): Promise<void> {
    const job = await this.#queue.getJob(id);
    if (job?.data.callbackUrl) await this.addCallback(job.data.callbackUrl, await this.#view(job));
    await this.#audio.remove(id);
    await this.releaseBytes(id);
  }

  /** Redis failures (down, out of memory) as the typed error callers answer 503 to. */
  async #store<T>(work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (error) {
      if (error instanceof VoxmillError || error instanceof TypeError || error instanceof RangeError) throw error;
      throw new JobStoreError(`the job store (Redis) failed: ${(error as Error).message}`, { cause: error });
    }
  }

  /** @internal For the worker half. */
  get internals() {
    return {
      options: this.#options,
      prefix: this.#prefix,
      client: this.#client,
      audio: this.#audio,
      callbacks: this.#callbacks,
      jobs: this.#queue,
    };
  }

  #cancelKey(id: string): string {
    return `${this.#prefix}:cancel:${id}`;
  }

  /** The record of a queued job cancelled before any worker took it (BullMQ no longer has it). */
  #cancelledKey(id: string): string {
    return `${this.#prefix}:cancelled:${id}`;
  }

  #ownerKey(owner: string): string {
    return `${this.#prefix}:owner:${owner}`;
  }

  async enqueue(raw: TranscriptionJobRequest): Promise<TranscriptionJob> {
    if (this.#closed) throw new ClosedError('the job queue is closed');
    // A queue that only adds jobs cannot know its workers' models; they refuse an unknown one when they run it.
    const request = checkJobRequest(raw, this.#options.speech?.modelIds, this.#options);
    await checkCallbackTarget(request, this.#options);
    return this.#store(() => this.#enqueue(request));
  }

  async #enqueue(request: CheckedJobRequest): Promise<TranscriptionJob> {
    const waiting = await this.#queue.getJobCountByTypes(...QUEUED_STATES);
    const { maxQueuedJobs } = this.#options;
    if (waiting >= maxQueuedJobs) {
      throw new QueueFullError(`${waiting} jobs are waiting (maxQueuedJobs ${maxQueuedJobs})`);
    }
    const id = newJobId();
    const createdMs = Date.now();
    await this.#reserveBytes(id, request.audio.length);
    try {
      await this.#add(id, request, createdMs);
    } catch (error) {
      await this.releaseBytes(id).catch(() => undefined);
      throw error;
    }
    return queuedJob(id, request, createdMs);
  }

  /** Holds the job's audio bytes against maxQueuedBytes until the job ends (QueueFullError past it). */
  async #reserveBytes(id: string, bytes: number): Promise<void> {
    const { maxQueuedBytes } = this.#options;
    const now = Date.now();
    const deadline = now + this.#options.audioTtlSeconds * 1000;
    const held = Number(
      await this.#client.eval(
        RESERVE_BYTES,
        3,
        this.#heldKey,
        this.#heldBytesKey,
        this.#heldUntilKey,
        id,
        bytes,
        maxQueuedBytes,
        now,
        deadline,
      ),
    );
    if (held >= 0) {
      throw new QueueFullError(
        `unfinished jobs hold ${held} bytes of audio; ${bytes} more would pass maxQueuedBytes ${maxQueuedBytes}`,
      );
    }
  }

  /** @internal Gives a job's audio bytes back (once): it ended, was cancelled while queued, or never got queued. */
  async releaseBytes(id: string): Promise<void> {
    await this.#client.eval(RELEASE_BYTES, 3, this.#heldKey, this.#heldBytesKey, this.#heldUntilKey, id);
  }

  get #heldUntilKey(): string {
    return `${this.#prefix}:held-until`;
  }

  get #heldKey(): string {
    return `${this.#prefix}:held`;
  }

  get #heldBytesKey(): string {
    return `${this.#prefix}:held-bytes`;
  }

  /** @internal Records a cancelled job for counts(): `running` ones are failed jobs to BullMQ, `queued` ones gone. */
  async recordCancelled(id: string, was: 'queued' | 'running'): Promise<void> {
    const key = `${this.#prefix}:cancelled-${was}`;
    const now = Date.now();
    await this.#client
      .multi()
      .zadd(key, now, id)
      .zremrangebyscore(key, '-inf', now - this.#options.resultTtlSeconds * 1000)
      // As BullMQ keeps at most maxKeptJobs ended jobs, so are these counted.
      .zremrangebyrank(key, 0, -this.#options.maxKeptJobs - 1)
      .expire(key, this.#options.resultTtlSeconds)
      .exec();
  }

  async #add(id: string, request: CheckedJobRequest, createdMs: number): Promise<void> {
    const { resultTtlSeconds } = this.#options;
    await this.#audio.put(id, request.audio);
    const data: StoredJob = {
      owner: request.owner,
      options: request.options,
      createdMs,
      ...(request.callbackUrl === undefined ? {} : { callbackUrl: request.callbackUrl }),
      ...(request.filename === undefined ? {} : { filename: request.filename }),
    };
    const ownerKey = this.#ownerKey(request.owner);
    await this.#client
      .multi()
      .zadd(ownerKey, createdMs, id)
      .zremrangebyscore(ownerKey, '-inf', createdMs - resultTtlSeconds * 1000)
      .expire(ownerKey, resultTtlSeconds)
      .exec();
    await this.#queue.add('transcription', data, {
      jobId: id,
      attempts: this.#options.attempts,
      backoff: { type: 'exponential', delay: this.#options.backoffMs },
      removeOnComplete: { age: resultTtlSeconds, count: this.#options.maxKeptJobs },
      removeOnFail: { age: resultTtlSeconds, count: this.#options.maxKeptJobs },
    });
  }

  async #job(id: string, owner: string | undefined): Promise<Job<StoredJob, Transcription> | undefined> {
    if (!isJobId(id)) return undefined;
    const job = await this.#queue.getJob(id);
    return job && job.data.owner === (owner ?? DEFAULT_OWNER) ? job : undefined;
  }

  /** A job as the API shows it. */
  async #view(fetched: Job<StoredJob, Transcription>): Promise<TranscriptionJob> {
    let job = fetched;
    const state: JobState | 'unknown' = await job.getState();
    // It ended between reading the job and its state: read it again for its result or failure.
    if ((state === 'completed' || state === 'failed') && !job.finishedOn) {
      job = (await this.#queue.getJob(job.id as string)) ?? job;
    }
    const data = job.data;
    const failure = job.failedReason ? decodeError(job.failedReason) : null;
    let status: TranscriptionJob['status'];
    if (state === 'active') status = 'running';
    else if (state === 'completed') status = 'completed';
    else if (state === 'failed') status = failure?.code === CANCELLED.code ? 'cancelled' : 'failed';
    else status = 'queued';
    const progress = typeof job.progress === 'number' ? job.progress : 0;
    return {
      id: job.id as string,
      object: 'transcription.job',
      status,
      progress: status === 'completed' ? 1 : progress,
      model: data.options.model,
      created_at: unixSeconds(data.createdMs),
      started_at: job.processedOn ? unixSeconds(job.processedOn) : null,
      finished_at: isEnded(status) && job.finishedOn ? unixSeconds(job.finishedOn) : null,
      attempts: job.attemptsStarted ?? job.attemptsMade,
      filename: data.filename ?? null,
      callback_url: data.callbackUrl ?? null,
      result: status === 'completed' ? job.returnvalue : null,
      // A failed run waiting for its retry still says why the last run failed.
      error: status === 'completed' ? null : failure,
    };
  }

  /** A queued job cancelled before any worker took it is removed from BullMQ; its record is kept here. */
  async #tombstone(id: string, owner: string | undefined): Promise<TranscriptionJob | undefined> {
    if (!isJobId(id)) return undefined;
    const stored = await this.#client.get(this.#cancelledKey(id));
    if (!stored) return undefined;
    try {
      const { owner: of, job } = JSON.parse(stored) as { owner: string; job: TranscriptionJob };
      return of === (owner ?? DEFAULT_OWNER) ? job : undefined;
    } catch {
      return undefined; // not a record of ours
    }
  }

  async get(id: string, owner?: string): Promise<TranscriptionJob | undefined> {
    if (!isJobId(id)) return undefined;
    return this.#store(async () => {
      const job = await this.#job(id, owner);
      return job ? this.#view(job) : this.#tombstone(id, owner);
    });
  }

  cancel(id: string, owner?: string): Promise<TranscriptionJob | undefined> {
    return this.#store(() => this.#cancel(id, owner));
  }

  async #cancel(id: string, owner: string | undefined): Promise<TranscriptionJob | undefined> {
    if (!isJobId(id)) return undefined;
    const job = await this.#job(id, owner);
    if (!job) return this.#tombstone(id, owner);
    const view = await this.#view(job);
    if (isEnded(view.status)) return view;
    const ttl = this.#options.resultTtlSeconds;
    // The marker first: a worker taking the job from now on sees it and does not run it.
    await this.#client.set(this.#cancelKey(id), '1', 'EX', ttl);
    if (view.status === 'queued') {
      const cancelled: TranscriptionJob = {
        ...view,
        status: 'cancelled',
        finished_at: unixSeconds(Date.now()),
        error: CANCELLED,
      };
      // The record first: once BullMQ has removed the job, a concurrent cancel or get must find it here.
      const record = JSON.stringify({ owner: job.data.owner, job: cancelled });
      await this.#client.set(this.#cancelledKey(id), record, 'EX', ttl);
      const removed = await job.remove().then(
        () => true,
        () => false,
      );
      if (removed) {
        try {
          await this.#audio.remove(id);
        } finally {
          await this.releaseBytes(id);
        }
        await this.recordCancelled(id, 'queued');
        if (job.data.callbackUrl) await this.addCallback(job.data.callbackUrl, cancelled);
        this.emit('cancelled', id);
        return cancelled;
      }
      // Not removed: another cancel removed it (the record stands), or a worker took it (cancelled running, below).
      if (!(await this.#queue.getJob(id))) return (await this.#tombstone(id, owner)) ?? cancelled;
      await this.#client.del(this.#cancelledKey(id));
    }
    await this.#client.publish(`${this.#prefix}:cancel`, id);
    const signal = AbortSignal.timeout(CANCEL_WAIT_MS);
    return this.wait(id, { ...(owner === undefined ? {} : { owner }), signal }).catch(() => this.get(id, owner));
  }

  /** Queues the delivery of a job's callback; once per job, however many times this is called. */
  async addCallback(url: string, job: TranscriptionJob): Promise<void> {
    const { attempts, backoffMs } = this.#options.callbacks;
    await this.#callbacks.add(
      'callback',
      { url, job },
      {
        jobId: `callback_${job.id}`,
        attempts,
        backoff: { type: 'exponential', delay: backoffMs },
        removeOnComplete: { age: this.#options.resultTtlSeconds },
        removeOnFail: { age: this.#options.resultTtlSeconds },
      },
    );
  }

  list(options: ListJobsOptions = {}): Promise<TranscriptionJob[]> {
    return this.#store(() => this.#list(options));
  }

  async #list(options: ListJobsOptions): Promise<TranscriptionJob[]> {
    const owner = options.owner ?? DEFAULT_OWNER;
    const limit = Math.min(options.limit ?? DEFAULT_LIST_LIMIT, MAX_LIST_LIMIT);
    const since = Date.now() - this.#options.resultTtlSeconds * 1000;
    const ids = await this.#client.zrevrangebyscore(this.#ownerKey(owner), '+inf', since, 'LIMIT', 0, LIST_SCAN);
    const jobs: TranscriptionJob[] = [];
    for (let at = 0; at < ids.length && jobs.length < limit; at += limit) {
      const batch = await Promise.all(ids.slice(at, at + limit).map((id) => this.get(id, owner)));
      for (const job of batch) {
        if (job && (options.status === undefined || job.status === options.status) && jobs.length < limit) {
          jobs.push(job);
        }
      }
    }
    return jobs;
  }

  async wait(id: string, options: { owner?: string; signal?: AbortSignal } = {}): Promise<TranscriptionJob> {
    const { signal } = options;
    for (;;) {
      signal?.throwIfAborted();
      // Listening before reading: an end between the read and the listener would otherwise wait out a whole poll.
      const next = this.#nextEventOf(id, signal);
      try {
        const job = await this.get(id, options.owner);
        if (!job) throw new JobNotFoundError(id);
        if (isEnded(job.status)) return job;
        await next.ended;
      } finally {
        next.stop();
      }
    }
  }

  /** Settles on the job's next end event, or after pollIntervalMs (events can be missed across reconnects). */
  #nextEventOf(id: string, signal: AbortSignal | undefined): { ended: Promise<void>; stop: () => void } {
    let stop = () => undefined as void;
    const ended = new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.off('completed', onEvent).off('failed', onEvent).off('cancelled', onEvent);
        signal?.removeEventListener('abort', done);
        resolve();
      };
      const onEvent = (eventId: string) => {
        if (eventId === id) done();
      };
      const timer = setTimeout(done, this.#options.pollIntervalMs);
      this.on('completed', onEvent).on('failed', onEvent).on('cancelled', onEvent);
      signal?.addEventListener('abort', done, { once: true });
      stop = done;
    });
    return { ended, stop };
  }

  async counts(): Promise<JobCounts> {
    const counts = await this.#queue.getJobCounts(...QUEUED_STATES, 'active', 'completed', 'failed');
    const queued = QUEUED_STATES.reduce((sum, state) => sum + (counts[state] ?? 0), 0);
    // Cancelled running jobs are failed jobs to BullMQ, and cancelled queued ones are gone from it: both are counted
    // in sets of their own over the results' lifetime.
    const since = Date.now() - this.#options.resultTtlSeconds * 1000;
    const [wasRunning, wasQueued] = await Promise.all(
      (['running', 'queued'] as const).map((was) =>
        this.#client.zcount(`${this.#prefix}:cancelled-${was}`, since, '+inf'),
      ),
    );
    return {
      queued,
      running: counts.active ?? 0,
      completed: counts.completed ?? 0,
      failed: Math.max(0, (counts.failed ?? 0) - (wasRunning ?? 0)),
      cancelled: (wasRunning ?? 0) + (wasQueued ?? 0),
    };
  }

  async ping(): Promise<void> {
    const answer = await Promise.race([
      this.#client.ping(),
      new Promise<never>((_resolve, reject) => {
        setTimeout(() => reject(new Error('Redis did not answer PING within 1 s')), 1000).unref();
      }),
    ]);
    if (answer !== 'PONG') throw new Error(`Redis answered PING with ${answer}`);
  }

  /** Whether a job has been cancelled (its marker), for the worker half. */
  async isCancelled(id: string): Promise<boolean> {
    return (await this.#client.exists(this.#cancelKey(id))) === 1;
  }

  close(): Promise<void> {
    this.#closed ??= (async () => {
      await this.#working?.close();
      // Closing talks to Redis: it gets HAND_BACK_MS, or UNREACHABLE_MS when Redis is away; then connections are cut.
      await settlesWithin(
        Promise.allSettled([this.#events.close(), this.#queue.close(), this.#callbacks.close()]),
        this.#client.status === 'ready' ? HAND_BACK_MS : UNREACHABLE_MS,
      );
      await settlesWithin(
        Promise.allSettled([this.#events.disconnect(), this.#queue.disconnect(), this.#callbacks.disconnect()]),
        1000,
      );
      for (const client of this.#connections) client.disconnect();
    })();
    return this.#closed;
  }

  override on<E extends keyof JobQueueEvents>(event: E, listener: (...args: JobQueueEvents[E]) => void): this;
  override on(event: 'connectionError', listener: (error: Error) => void): this;
  override on(event: 'worked', listener: (run: WorkedRun) => void): this;
  override on(event: string, listener: (...args: never[]) => void): this {
    return super.on(event, listener as (...args: unknown[]) => void);
  }

  override off<E extends keyof JobQueueEvents>(event: E, listener: (...args: JobQueueEvents[E]) => void): this;
  override off(event: 'connectionError', listener: (error: Error) => void): this;
  override off(event: string, listener: (...args: never[]) => void): this {
    return super.off(event, listener as (...args: unknown[]) => void);
  }
}

/** The Redis connection and key prefix of a queue on Redis (rate limits share them), or undefined for another queue. */
export function sharedRedisOf(queue: JobQueue): { client: Redis; prefix: string } | undefined {
  if (!(queue instanceof RedisJobQueue)) return undefined;
  const { client, prefix } = queue.internals;
  return { client, prefix };
}

/** The worker half: runs jobs and delivers callbacks, in a process that has the engine. */
class Working {
  readonly #queue: RedisJobQueue;
  readonly #engine: JobEngine;
  readonly #worker: Worker<StoredJob, Transcription>;
  readonly #callbackWorker: Worker<StoredCallback>;
  readonly #subscriber: Redis;
  readonly #workerClient: Redis;
  /** Set when close() ran past its deadline: running jobs are being handed back, not failed. */
  #handingBack = false;

  constructor(queue: RedisJobQueue) {
    this.#queue = queue;
    const { options, prefix } = queue.internals;
    this.#engine = options.speech as JobEngine;
    const report = (error: Error) => queue.emit('connectionError', error);
    this.#workerClient = queue.connect(true);
    const { Worker: BullWorker } = bullmq();
    this.#worker = new BullWorker<StoredJob, Transcription>(
      options.name,
      (job, token, signal) => this.#process(job, token, signal),
      {
        connection: this.#workerClient,
        concurrency: options.concurrency,
        lockDuration: options.lockDurationMs,
        stalledInterval: options.stalledIntervalMs,
        maxStalledCount: options.maxStalledCount,
      },
    );
    this.#worker.on('error', report);
    // `worked`: each run this process finished, for its logs (`voxmill worker`); the queue-wide events are others'.
    this.#worker.on('completed', (job) => {
      void this.#afterEnd(job.id as string);
      queue.emit('worked', workedRun(job, 'completed'));
    });
    this.#worker.on('failed', (job, error) => {
      if (!job) return;
      if (job.finishedOn) void this.#afterEnd(job.id as string);
      queue.emit('worked', workedRun(job, job.finishedOn ? 'failed' : 'retrying', decodeError(error.message)));
    });
    this.#callbackWorker = new BullWorker<StoredCallback>(
      `${options.name}-callbacks`,
      async (job) => {
        await this.#ended(job.data.job.id);
        await deliverCallback(job.data.url, callbackBody(job.data.job), options.callbacks, job.attemptsMade + 1);
      },
      { connection: queue.connect(true), concurrency: 8 },
    );
    this.#callbackWorker.on('error', report);
    this.#subscriber = queue.connect(true);
    this.#subscriber.on('message', (_channel: string, id: string) => {
      this.#worker.cancelJob(id, CANCELLED.code);
    });
    void this.#subscriber.subscribe(`${prefix}:cancel`).catch(report);
  }

  /**
   * Waits (up to CALLBACK_SETTLE_MS) for the job to leave `active`: its callback is queued just before BullMQ marks it
   * completed, and a receiver that asks for the job at once should find it ended.
   */
  async #ended(id: string): Promise<void> {
    const { jobs } = this.#queue.internals;
    for (let waited = 0; waited < CALLBACK_SETTLE_MS; waited += 100) {
      if ((await jobs.getJobState(id)) !== 'active') return;
      await delay(100);
    }
  }

  /** The audio is not needed once the job has ended for good. */
  async #afterEnd(id: string): Promise<void> {
    await this.#queue.internals.audio.remove(id).catch(() => undefined);
    await this.#queue.releaseBytes(id).catch(() => undefined);
  }

  async #process(
    job: Job<StoredJob, Transcription>,
    token: string | undefined,
    signal: AbortSignal | undefined,
  ): Promise<Transcription> {
    const { options, audio } = this.#queue.internals;
    // Listening first: a cancel or the drain deadline may come while the checks below wait on Redis.
    const controller = new AbortController();
    const onAbort = () => controller.abort(signal?.reason);
    signal?.addEventListener('abort', onAbort, { once: true });
    if (signal?.aborted) onAbort();
    try {
      return await this.#run(job, token, controller, options, audio);
    } finally {
      signal?.removeEventListener('abort', onAbort);
    }
  }

  async #run(
    job: Job<StoredJob, Transcription>,
    token: string | undefined,
    controller: AbortController,
    options: ResolvedJobQueueOptions,
    audio: AudioStore,
  ): Promise<Transcription> {
    const id = job.id as string;
    const final = (error: JobError) => !isRetriable(error) || job.attemptsMade + 1 >= (job.opts.attempts ?? 1);
    const fail = async (error: JobError): Promise<never> => {
      // Counting it is not worth losing the cancel over: a Redis error here leaves the job cancelled, uncounted.
      if (error.code === CANCELLED.code) await this.#queue.recordCancelled(id, 'running').catch(() => undefined);
      if (final(error) && job.data.callbackUrl) await this.#callback(job, error);
      throw isRetriable(error) ? new Error(encodeError(error)) : new (bullmq().UnrecoverableError)(encodeError(error));
    };
    if (await this.#queue.isCancelled(id)) return fail(CANCELLED);
    const bytes = await audio.get(id);
    if (!bytes) return fail({ code: 'audio_expired', message: 'the job waited longer than audioTtlSeconds' });
    try {
      const result = await runTranscriptionJob(this.#engine, bytes, job.data.options, {
        signal: controller.signal,
        progressIntervalMs: options.progressIntervalMs,
        onProgress: (fraction) => void job.updateProgress(fraction).catch(() => undefined),
      });
      emitSafely(this.#queue, 'transcribed', job.data.owner, result.duration ?? 0);
      if (job.data.callbackUrl) await this.#callback(job, null, result);
      return result;
    } catch (cause) {
      if (controller.signal.aborted && this.#handingBack && !(await this.#queue.isCancelled(id))) {
        // Shutting down past the drain deadline: back to the queue for another worker, no attempt spent.
        await job.moveToWait(token);
        throw new (bullmq().WaitingError)();
      }
      const cancelled = controller.signal.aborted && (await this.#queue.isCancelled(id));
      return fail(cancelled ? CANCELLED : jobErrorOf(cause));
    }
  }

  async #callback(job: Job<StoredJob, Transcription>, error: JobError | null, result?: Transcription): Promise<void> {
    const status = error === null ? 'completed' : error.code === CANCELLED.code ? 'cancelled' : 'failed';
    const view: TranscriptionJob = {
      id: job.id as string,
      object: 'transcription.job',
      status,
      progress: status === 'completed' ? 1 : typeof job.progress === 'number' ? job.progress : 0,
      model: job.data.options.model,
      created_at: unixSeconds(job.data.createdMs),
      started_at: job.processedOn ? unixSeconds(job.processedOn) : null,
      finished_at: unixSeconds(Date.now()),
      attempts: job.attemptsStarted ?? job.attemptsMade + 1,
      filename: job.data.filename ?? null,
      callback_url: job.data.callbackUrl ?? null,
      result: result ?? null,
      error,
    };
    await this.#queue.addCallback(job.data.callbackUrl as string, view);
  }

  async close(): Promise<void> {
    const { drainTimeoutMs } = this.#queue.internals.options;
    // Callback deliveries and the cancel channel stop alongside the drain, not after it.
    const sideClosing = Promise.allSettled([this.#callbackWorker.close(), this.#subscriber.quit()]);
    const closing = this.#worker.close();
    if (!(await settlesWithin(closing, drainTimeoutMs))) {
      this.#handingBack = true;
      this.#worker.cancelAllJobs('shutting_down');
      // Handing back needs Redis. Without it the commands would wait for ever (a worker's client retries them): the
      // connection is cut, they fail, and the jobs' locks expire, so that the stall check hands them on instead.
      if (!(await settlesWithin(closing, HAND_BACK_MS))) {
        this.#workerClient.disconnect();
        await settlesWithin(this.#worker.disconnect(), UNREACHABLE_MS);
      }
    }
    await settlesWithin(sideClosing, this.#queue.internals.client.status === 'ready' ? HAND_BACK_MS : UNREACHABLE_MS);
    // BullMQ's own connections (a worker's blocking one) reconnect for ever unless cut: after a close that could not
    // reach Redis, they are.
    await settlesWithin(Promise.allSettled([this.#worker.disconnect(), this.#callbackWorker.disconnect()]), 1000);
  }
}

/** One run a worker finished, as `worked` reports it. */
export interface WorkedRun {
  id: string;
  status: 'completed' | 'failed' | 'retrying';
  /** Which run of the job this was (1 for the first). */
  attempt: number;
  /** Wall time of the run, in ms. */
  ms: number;
  error?: JobError;
}

function workedRun(job: Job, status: WorkedRun['status'], error?: JobError): WorkedRun {
  return {
    id: job.id as string,
    status,
    attempt: job.attemptsStarted ?? job.attemptsMade,
    ms: job.finishedOn && job.processedOn ? job.finishedOn - job.processedOn : 0,
    ...(error && status !== 'completed' ? { error } : {}),
  };
}
