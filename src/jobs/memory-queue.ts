// The in-process job queue: what a single machine uses without Redis. Jobs and their audio are held in memory
// (bounded by maxQueuedJobs and maxQueuedBytes) and lost when the process ends; ended jobs are kept for
// resultTtlSeconds. Same behaviour as the Redis queue otherwise: retries with backoff, cancelling, callbacks.
import { EventEmitter } from 'node:events';
import { ClosedError, JobNotFoundError, QueueFullError } from '../errors.js';
import { settlesWithin } from '../util/job.js';
import { callbackBody, deliverWithRetries } from './callback.js';
import {
  type CheckedJobRequest,
  checkCallbackTarget,
  checkJobRequest,
  DEFAULT_LIST_LIMIT,
  DEFAULT_OWNER,
  isEnded,
  MAX_LIST_LIMIT,
  newJobId,
  queuedJob,
  unixSeconds,
} from './job-request.js';
import type { JobEngine, ResolvedJobQueueOptions } from './options.js';
import { CANCELLED, emitSafely, isRetriable, jobErrorOf, runTranscriptionJob } from './run-job.js';
import type {
  JobCounts,
  JobQueue,
  JobQueueEvents,
  ListJobsOptions,
  TranscriptionJob,
  TranscriptionJobRequest,
} from './types.js';

interface Entry {
  job: TranscriptionJob;
  request: CheckedJobRequest;
  /** Set while it runs. */
  controller: AbortController | undefined;
  cancelRequested: boolean;
  /** The retry backoff or the expiry of an ended job. */
  timer: NodeJS.Timeout | undefined;
}

const SHUTTING_DOWN = { code: 'shutting_down', message: 'the process stopped before the job ended' };
/** How long `cancel` waits for a running job to stop before answering with it as it is. */
const CANCEL_WAIT_MS = 2000;

export class MemoryJobQueue extends EventEmitter implements JobQueue {
  readonly backend = 'memory' as const;
  readonly #options: ResolvedJobQueueOptions;
  readonly #engine: JobEngine;
  readonly #entries = new Map<string, Entry>();
  readonly #waiting: string[] = [];
  /** Ended jobs still kept, oldest first. */
  readonly #ended: string[] = [];
  #queuedBytes = 0;
  #running = 0;
  #closed = false;
  /** Aborts callback retries when the queue closes. */
  readonly #closing = new AbortController();
  readonly #deliveries = new Set<Promise<boolean>>();

  constructor(options: ResolvedJobQueueOptions) {
    super();
    // Every waiter adds its listeners; many at once are normal here, not a leak.
    this.setMaxListeners(0);
    if (!options.speech) throw new TypeError('the in-process queue needs speech');
    this.#options = options;
    this.#engine = options.speech;
  }

  async enqueue(raw: TranscriptionJobRequest): Promise<TranscriptionJob> {
    if (this.#closed) throw new ClosedError('the job queue is closed');
    const request = checkJobRequest(raw, this.#engine.modelIds, this.#options);
    await checkCallbackTarget(request, this.#options);
    // The lookup took a moment: the queue may have closed meanwhile.
    if (this.#closed) throw new ClosedError('the job queue is closed');
    const { maxQueuedJobs, maxQueuedBytes } = this.#options;
    if (this.#waiting.length >= maxQueuedJobs) {
      throw new QueueFullError(`${this.#waiting.length} jobs are waiting (maxQueuedJobs ${maxQueuedJobs})`);
    }
    if (this.#queuedBytes + request.audio.length > maxQueuedBytes) {
      throw new QueueFullError(
        `waiting jobs hold ${this.#queuedBytes} bytes of audio; ${request.audio.length} more would pass ` +
          `maxQueuedBytes ${maxQueuedBytes}`,
      );
    }
    const id = newJobId();
    const entry: Entry = {
      job: queuedJob(id, request, Date.now()),
      request,
      controller: undefined,
      cancelRequested: false,
      timer: undefined,
    };
    this.#entries.set(id, entry);
    this.#queuedBytes += request.audio.length;
    this.#waiting.push(id);
    // The job as it was queued: the answer to its submission says `queued` even when a worker took it at once.
    const queued = { ...entry.job };
    this.#pump();
    return queued;
  }

  #entry(id: string, owner: string | undefined): Entry | undefined {
    const entry = typeof id === 'string' ? this.#entries.get(id) : undefined;
    return entry && entry.request.owner === (owner ?? DEFAULT_OWNER) ? entry : undefined;
  }

  async get(id: string, owner?: string): Promise<TranscriptionJob | undefined> {
    const entry = this.#entry(id, owner);
    return entry ? { ...entry.job } : undefined;
  }

  async cancel(id: string, owner?: string): Promise<TranscriptionJob | undefined> {
    const entry = this.#entry(id, owner);
    if (!entry) return undefined;
    if (entry.controller) {
      // It ends as cancelled when the transcription stops (at whisper's next checkpoint): the answer waits for that,
      // up to CANCEL_WAIT_MS, as the Redis queue's does.
      entry.cancelRequested = true;
      entry.controller.abort(new DOMException(CANCELLED.message, 'AbortError'));
      const signal = AbortSignal.timeout(CANCEL_WAIT_MS);
      return this.wait(id, { ...(owner === undefined ? {} : { owner }), signal }).catch(() => ({ ...entry.job }));
    }
    if (!isEnded(entry.job.status)) {
      this.#unqueue(entry);
      this.#end(entry, 'cancelled');
    }
    return { ...entry.job };
  }

  async list(options: ListJobsOptions = {}): Promise<TranscriptionJob[]> {
    const owner = options.owner ?? DEFAULT_OWNER;
    const limit = Math.min(options.limit ?? DEFAULT_LIST_LIMIT, MAX_LIST_LIMIT);
    const jobs: TranscriptionJob[] = [];
    // Insertion order is creation order: walk it backwards for newest first.
    const all = [...this.#entries.values()];
    for (let i = all.length - 1; i >= 0 && jobs.length < limit; i--) {
      const { job, request } = all[i] as Entry;
      if (request.owner === owner && (options.status === undefined || job.status === options.status)) {
        jobs.push({ ...job });
      }
    }
    return jobs;
  }

  async wait(id: string, options: { owner?: string; signal?: AbortSignal } = {}): Promise<TranscriptionJob> {
    const entry = this.#entry(id, options.owner);
    if (!entry) throw new JobNotFoundError(id);
    if (isEnded(entry.job.status)) return { ...entry.job };
    const { signal } = options;
    signal?.throwIfAborted();
    return new Promise((resolve, reject) => {
      const onEnd = (endedId: string) => {
        if (endedId !== id) return;
        stop();
        resolve({ ...entry.job });
      };
      const onAbort = () => {
        stop();
        reject(signal?.reason);
      };
      const stop = () => {
        this.off('completed', onEnd).off('failed', onEnd).off('cancelled', onEnd);
        signal?.removeEventListener('abort', onAbort);
      };
      this.on('completed', onEnd).on('failed', onEnd).on('cancelled', onEnd);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  async counts(): Promise<JobCounts> {
    const counts: JobCounts = { queued: 0, running: 0, completed: 0, failed: 0, cancelled: 0 };
    for (const { job } of this.#entries.values()) counts[job.status]++;
    return counts;
  }

  async ping(): Promise<void> {
    if (this.#closed) throw new ClosedError('the job queue is closed');
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    // Every job that is not running ends now: those waiting in line and those waiting for a retry.
    for (const entry of this.#entries.values()) {
      if (entry.controller || isEnded(entry.job.status)) continue;
      this.#unqueue(entry);
      this.#end(entry, 'failed', SHUTTING_DOWN);
    }
    const running = [...this.#entries.values()].filter((entry) => entry.controller);
    const deadline = this.#options.drainTimeoutMs;
    const ended = Promise.all(running.map((entry) => this.wait(entry.job.id, { owner: entry.request.owner })));
    await settlesWithin(ended, deadline);
    for (const entry of running) entry.controller?.abort(new DOMException(SHUTTING_DOWN.message, 'AbortError'));
    await ended.catch(() => undefined);
    this.#closing.abort();
    await Promise.all(this.#deliveries);
    for (const entry of this.#entries.values()) clearTimeout(entry.timer);
    this.#entries.clear();
  }

  #forget(id: string): void {
    const entry = this.#entries.get(id);
    if (entry) clearTimeout(entry.timer);
    this.#entries.delete(id);
    const at = this.#ended.indexOf(id);
    if (at >= 0) this.#ended.splice(at, 1);
  }

  #unqueue(entry: Entry): void {
    // Waiting in line, or for its retry backoff (a timer): either way its audio counts as queued.
    const at = this.#waiting.indexOf(entry.job.id);
    if (at >= 0) this.#waiting.splice(at, 1);
    if (at >= 0 || entry.timer) this.#queuedBytes -= entry.request.audio.length;
    clearTimeout(entry.timer);
    entry.timer = undefined;
  }

  #pump(): void {
    while (!this.#closed && this.#running < this.#options.concurrency && this.#waiting.length > 0) {
      const entry = this.#entries.get(this.#waiting.shift() as string) as Entry;
      this.#queuedBytes -= entry.request.audio.length;
      void this.#run(entry);
    }
  }

  async #run(entry: Entry): Promise<void> {
    const { job, request } = entry;
    this.#running++;
    entry.controller = new AbortController();
    job.status = 'running';
    job.attempts++;
    job.started_at = unixSeconds(Date.now());
    try {
      job.result = await runTranscriptionJob(this.#engine, request.audio, request.options, {
        signal: entry.controller.signal,
        progressIntervalMs: this.#options.progressIntervalMs,
        onProgress: (fraction) => {
          job.progress = fraction;
          this.emit('progress', job.id, fraction);
        },
      });
      entry.controller = undefined;
      emitSafely(this, 'transcribed', entry.request.owner, job.result?.duration ?? 0);
      this.#end(entry, 'completed');
    } catch (cause) {
      const aborted = entry.controller?.signal.aborted === true;
      entry.controller = undefined;
      const error = entry.cancelRequested ? CANCELLED : aborted ? SHUTTING_DOWN : jobErrorOf(cause);
      if (!this.#closed && isRetriable(error) && job.attempts < this.#options.attempts) {
        this.#retry(entry);
      } else {
        this.#end(entry, error === CANCELLED ? 'cancelled' : 'failed', error);
      }
    } finally {
      this.#running--;
      this.#pump();
    }
  }

  /** Back in the queue after the backoff (5 s, 10 s, ... by default). */
  #retry(entry: Entry): void {
    entry.job.status = 'queued';
    this.#queuedBytes += entry.request.audio.length;
    entry.timer = setTimeout(
      () => {
        entry.timer = undefined;
        this.#waiting.push(entry.job.id);
        this.#pump();
      },
      this.#options.backoffMs * 2 ** (entry.job.attempts - 1),
    );
    entry.timer.unref();
  }

  #end(entry: Entry, status: 'completed' | 'failed' | 'cancelled', error = CANCELLED): void {
    const { job } = entry;
    job.status = status;
    job.finished_at = unixSeconds(Date.now());
    if (status === 'completed') job.progress = 1;
    else job.error = error;
    // The audio is not needed any more; the job record stays for resultTtlSeconds.
    entry.request.audio = Buffer.alloc(0);
    entry.timer = setTimeout(() => this.#forget(job.id), this.#options.resultTtlSeconds * 1000);
    entry.timer.unref();
    this.#ended.push(job.id);
    // Past maxKeptJobs the oldest ended job goes first, whatever its age.
    while (this.#ended.length > this.#options.maxKeptJobs) this.#forget(this.#ended[0] as string);
    if (status === 'completed') this.emit('completed', job.id);
    else if (status === 'cancelled') this.emit('cancelled', job.id);
    else this.emit('failed', job.id, error);
    // Also while closing: a job that ends then still tells its receiver (once; closing stops the retries).
    if (entry.request.callbackUrl) this.#deliver(entry.request.callbackUrl, job);
  }

  #deliver(url: string, job: TranscriptionJob): void {
    const delivery = deliverWithRetries(url, callbackBody(job), this.#options.callbacks, this.#closing.signal);
    this.#deliveries.add(delivery);
    void delivery.finally(() => this.#deliveries.delete(delivery));
  }

  override on<E extends keyof JobQueueEvents>(event: E, listener: (...args: JobQueueEvents[E]) => void): this {
    return super.on(event, listener as (...args: unknown[]) => void);
  }

  override off<E extends keyof JobQueueEvents>(event: E, listener: (...args: JobQueueEvents[E]) => void): this {
    return super.off(event, listener as (...args: unknown[]) => void);
  }
}
