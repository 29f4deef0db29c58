// The one client of a worker thread, for every capability that has one (diarization): it starts the worker on the
// first job, routes the worker's messages to jobs by id, cancels by id, gives up on a worker that dies or stalls
// (failing its jobs with the capability's own coded errors; the next job starts a fresh worker) and closes. What a
// job means, and how many workers a capability keeps, stay with the capability (Diarizer).

import type { Worker } from 'node:worker_threads';
import { ClosedError } from '../errors.js';
import { closeWorker, spawnWorker, stopWorker, workersExited } from './worker-thread.js';

/** Every message from a worker names the job it belongs to. */
export interface JobMessage {
  id: number;
}

/** What every worker understands besides its own jobs: stop job `id` (it answers the job once it stopped). */
export interface CancelMessage {
  type: 'cancel';
  id: number;
}

/** A capability's own errors for the ways a worker fails its jobs (each with its stable code). */
export interface WorkerErrors {
  /** The worker crashed, exited or was given up on (`TTS_WORKER_DIED`, `DIARIZATION_WORKER_DIED`). */
  died(message: string): Error;
  /** A job waited stallTimeoutMs without a message (`TTS_WORKER_STALLED`, `DIARIZATION_WORKER_STALLED`). */
  stalled(message: string): Error;
}

export interface WorkerClientOptions<FromWorker> {
  /** The worker script, resolved when the first worker starts. */
  script: () => URL;
  /** The worker's `workerData`. */
  data: object;
  /** How error messages name the worker ("synthesis worker"). */
  name: string;
  errors: WorkerErrors;
  /**
   * A job waiting for a message gets none for this long: the worker is stopped, its jobs fail with `stalled`.
   * A job may bring its own (start's `stallTimeoutMs`).
   */
  stallTimeoutMs: number;
  /** Messages that only say a job is alive: they restart its stall timer and go no further. */
  isHeartbeat?: (message: FromWorker) => boolean;
  /** A worker was lost (died, stalled or retired); the next job starts a fresh one. */
  onReplaced?: () => void;
}

/** One job in the worker. */
export interface WorkerJob<ToWorker, FromWorker> {
  readonly id: number;
  /**
   * The job's next message, in order. While it is awaited the worker is referenced (a script awaiting it has no
   * other handle) and the stall timer runs. Rejects with `died`, `stalled` or ClosedError.
   */
  next(): Promise<FromWorker>;
  /** Posts a message about this job to its worker, if that worker is still the client's. */
  send(message: ToWorker): void;
  /** Asks the worker to stop the job (a CancelMessage); the worker still answers it. */
  cancel(): void;
  /** The job is over for its owner: later messages for it are dropped. */
  end(): void;
}

interface JobState<FromWorker> {
  live: Worker;
  stallTimeoutMs: number;
  inbox: FromWorker[];
  failure: Error | undefined;
  waiter: { resolve(message: FromWorker): void; reject(error: Error): void } | undefined;
  stallTimer: NodeJS.Timeout | undefined;
}

export class WorkerClient<ToWorker, FromWorker extends JobMessage> {
  private live: Worker | undefined;
  private readonly jobs = new Map<number, JobState<FromWorker>>();
  /** Workers given up on, until they exit (close() waits for them). */
  private readonly retiring = new Set<Worker>();
  /** Jobs awaiting a message: the worker is referenced while there are any. */
  private waiting = 0;
  private closed = false;

  constructor(private readonly options: WorkerClientOptions<FromWorker>) {}

  /** Whether a worker thread is running. */
  get alive(): boolean {
    return this.live !== undefined;
  }

  /** Starts a job: posts `message` (which carries `id`) to the worker, starting one if there is none. */
  start(id: number, message: ToWorker, stallTimeoutMs = this.options.stallTimeoutMs): WorkerJob<ToWorker, FromWorker> {
    if (this.closed) throw new ClosedError();
    if (this.jobs.has(id)) throw new RangeError(`${this.options.name}: job ${id} is already running`);
    this.live ??= this.spawn();
    const live = this.live;
    const state: JobState<FromWorker> = {
      live,
      stallTimeoutMs,
      inbox: [],
      failure: undefined,
      waiter: undefined,
      stallTimer: undefined,
    };
    this.jobs.set(id, state);
    live.postMessage(message);
    return {
      id,
      next: () => this.next(id, state),
      send: (next) => {
        if (this.live === live && this.jobs.get(id) === state) live.postMessage(next);
      },
      cancel: () => this.cancel(id),
      end: () => this.end(id, state),
    };
  }

  /** Starts a job and resolves with its one reply. */
  async request(id: number, message: ToWorker, stallTimeoutMs?: number): Promise<FromWorker> {
    const job = this.start(id, message, stallTimeoutMs);
    try {
      return await job.next();
    } finally {
      job.end();
    }
  }

  /** Asks the worker to stop job `id`, if the job is running on the current worker. */
  cancel(id: number): void {
    const state = this.jobs.get(id);
    if (state && state.live === this.live) state.live.postMessage({ type: 'cancel', id } satisfies CancelMessage);
  }

  /** Gives up on the worker: fails its jobs with `error` and stops it (see stopWorker); the next job starts afresh. */
  retire(error: Error): void {
    const live = this.live;
    if (!live) return;
    this.lose(live, error);
    stopWorker(live, this.retiring);
  }

  /** Fails every job with ClosedError and lets each worker exit. */
  async close(): Promise<void> {
    this.closed = true;
    const live = this.live;
    this.live = undefined;
    for (const state of this.jobs.values()) this.fail(state, new ClosedError());
    await Promise.all([live ? closeWorker(live) : undefined, workersExited(this.retiring)]);
  }

  private spawn(): Worker {
    const { name, errors } = this.options;
    const live = spawnWorker(this.options.script(), this.options.data);
    live.on('message', (message: FromWorker) => {
      const state = this.jobs.get(message.id);
      if (state?.live === live) this.deliver(state, message);
    });
    live.on('error', (error) => this.lose(live, errors.died(`${name} crashed: ${error.message}`)));
    live.on('exit', (code) => this.lose(live, errors.died(`${name} exited (code ${code})`)));
    return live;
  }

  private lose(live: Worker, error: Error): void {
    if (this.live !== live) return;
    this.live = undefined;
    this.options.onReplaced?.();
    for (const state of this.jobs.values()) if (state.live === live) this.fail(state, error);
  }

  private next(id: number, state: JobState<FromWorker>): Promise<FromWorker> {
    if (state.failure) return Promise.reject(state.failure);
    const queued = state.inbox.shift();
    if (queued) return Promise.resolve(queued);
    if (state.waiter || this.jobs.get(id) !== state) {
      return Promise.reject(new RangeError(`${this.options.name}: job ${id} is over or already awaited`));
    }
    return new Promise<FromWorker>((resolve, reject) => {
      state.waiter = { resolve, reject };
      if (this.waiting++ === 0) state.live.ref();
      this.armStallTimer(state);
    });
  }

  private armStallTimer(state: JobState<FromWorker>): void {
    clearTimeout(state.stallTimer);
    const ms = state.stallTimeoutMs;
    state.stallTimer = setTimeout(() => {
      if (this.live !== state.live) return;
      this.retire(
        this.options.errors.stalled(
          `${this.options.name} sent nothing for ${ms} ms; it was stopped and will be replaced`,
        ),
      );
    }, ms);
  }

  private deliver(state: JobState<FromWorker>, message: FromWorker): void {
    if (this.options.isHeartbeat?.(message)) {
      if (state.waiter) this.armStallTimer(state);
      return;
    }
    const waiter = this.stopWaiting(state);
    if (waiter) waiter.resolve(message);
    else state.inbox.push(message);
  }

  private fail(state: JobState<FromWorker>, error: Error): void {
    state.failure ??= error;
    this.stopWaiting(state)?.reject(state.failure);
  }

  private end(id: number, state: JobState<FromWorker>): void {
    if (this.jobs.get(id) === state) this.jobs.delete(id);
    // A next() still awaited (its owner gave up on it, on abort) stays pending, unreferenced.
    this.stopWaiting(state);
  }

  private stopWaiting(state: JobState<FromWorker>): JobState<FromWorker>['waiter'] {
    const { waiter } = state;
    if (!waiter) return undefined;
    state.waiter = undefined;
    clearTimeout(state.stallTimer);
    // A worker that was given up on stays as stopWorker left it (referenced until it has exited).
    if (--this.waiting === 0 && this.live === state.live) state.live.unref();
    return waiter;
  }
}
