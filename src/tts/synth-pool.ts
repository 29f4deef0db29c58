// The pool of synthesis worker threads. Each slot owns at most one worker and runs one job at a time; a
// bounded queue admits jobs (QueueFullError beyond it). A worker that dies, stalls or whose phonemizer trapped
// is terminated and replaced by a fresh one on the slot's next job, and the job it was running fails with a
// SynthesisError whose code says which.
import { ClosedError, SynthesisError } from '../errors.js';
import { abortReason } from '../util/job.js';
import {
  closeWorker,
  closeWorkers,
  compiledWorkerUrl,
  type LiveWorker,
  spawnOnnxWorker,
  stopWorker,
} from '../util/onnx-worker.js';
import { WorkQueue } from '../util/queue.js';
import type { FromWorker, SynthJob, SynthStats, SynthWorkerSettings } from './worker-protocol.js';

export interface SynthPoolOptions extends SynthWorkerSettings {
  /** Worker threads. */
  size: number;
  /** Jobs waiting for a worker beyond those running; more fail with QueueFullError. */
  maxQueue: number;
  /** Sentences a worker may synthesize ahead of the consumer. */
  lookahead: number;
  /** A worker that is owed audio and sends nothing for this long is terminated. */
  stallTimeoutMs: number;
  /** The worker script; default the compiled `synth-worker.js`. */
  workerUrl?: URL;
}

/** The compiled synthesis worker script. */
export function defaultWorkerUrl(): URL {
  return compiledWorkerUrl(
    new URL('./synth-worker.js', import.meta.url),
    'tts/synth-worker.js',
    (message) => new SynthesisError(message, { code: 'TTS_WORKER_MISSING' }),
  );
}

interface Listener {
  jobId: number;
  deliver(message: FromWorker): void;
  fail(error: Error): void;
}

/** One worker thread, replaced when it dies. */
class WorkerSlot {
  private live: LiveWorker | undefined;
  private listener: Listener | undefined;

  constructor(
    private readonly url: URL,
    private readonly settings: SynthWorkerSettings,
    private readonly onReplaced: () => void,
    /** Workers stopped while inside ONNX Runtime, until they exit (the pool's close() waits for them). */
    private readonly retiring: Set<LiveWorker>,
    private readonly closed: () => boolean,
  ) {}

  get alive(): boolean {
    return this.live !== undefined;
  }

  private spawn(): LiveWorker {
    const live = spawnOnnxWorker(this.url, this.settings);
    const { thread } = live;
    thread.on('message', (message: FromWorker) => {
      if (this.live === live && this.listener && message.jobId === this.listener.jobId) this.listener.deliver(message);
    });
    thread.on('error', (error) => this.lose(live, 'TTS_WORKER_DIED', `synthesis worker crashed: ${error.message}`));
    thread.on('exit', (code) => this.lose(live, 'TTS_WORKER_DIED', `synthesis worker exited (code ${code})`));
    return live;
  }

  private lose(live: LiveWorker, code: string, message: string): void {
    if (this.live !== live) return;
    this.live = undefined;
    this.onReplaced();
    this.listener?.fail(new SynthesisError(message, { code }));
  }

  /** Gives up on the worker and stops it (see stopWorker); a fresh one starts with the next job. */
  retire(code: string, message: string): void {
    const live = this.live;
    if (!live) return;
    this.lose(live, code, message);
    stopWorker(live, this.retiring);
  }

  /**
   * Runs a job, yielding each sentence's audio; returns the worker's counters. Stopping early (return, throw,
   * abort) cancels the job in the worker, which stops before its next sentence.
   */
  async *run(job: SynthJob, lookahead: number, stallTimeoutMs: number, signal?: AbortSignal) {
    if (this.closed()) throw new ClosedError();
    this.live ??= this.spawn();
    const live = this.live;
    const worker = live.thread;
    const inbox: FromWorker[] = [];
    let failure: unknown;
    let wake: (() => void) | undefined;
    const notify = () => {
      wake?.();
      wake = undefined;
    };
    this.listener = {
      jobId: job.jobId,
      deliver: (message) => {
        inbox.push(message);
        notify();
      },
      fail: (error) => {
        failure ??= error;
        notify();
      },
    };
    const onAbort = () => this.listener?.fail(abortReason(signal) as Error);
    signal?.addEventListener('abort', onAbort, { once: true });
    let settled = false;
    try {
      signal?.throwIfAborted();
      worker.postMessage({ type: 'job', job: { ...job, credit: lookahead } });
      for (;;) {
        if (inbox.length === 0 && failure === undefined) {
          // Referenced only while audio is owed: a script awaiting it has no other handle, but a stream nobody reads
          // must not keep the process alive.
          worker.ref();
          await this.nextMessage(stallTimeoutMs, (w) => (wake = w));
          if (this.live === live) worker.unref();
        }
        if (failure !== undefined) throw failure;
        const message = inbox.shift();
        if (!message) continue;
        if (message.type === 'audio') {
          yield message.samples;
          worker.postMessage({ type: 'credit', jobId: job.jobId, n: 1 });
        } else if (message.type === 'done') {
          settled = true;
          return message.stats as SynthStats;
        } else if (message.type === 'error') {
          settled = true;
          if (message.fatal) this.retire('TTS_WORKER_DIED', message.message);
          throw new SynthesisError(message.message, { code: message.code });
        }
      }
    } finally {
      signal?.removeEventListener('abort', onAbort);
      this.listener = undefined;
      if (!settled && this.live === live) worker.postMessage({ type: 'cancel', jobId: job.jobId });
    }
  }

  private nextMessage(stallTimeoutMs: number, setWake: (wake: () => void) => void): Promise<void> {
    return new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        this.retire(
          'TTS_WORKER_STALLED',
          `synthesis worker sent nothing for ${stallTimeoutMs} ms; it was stopped and will be replaced`,
        );
        resolve();
      }, stallTimeoutMs);
      setWake(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }

  /** Asks the worker to exit after its current ONNX Runtime call; resolves when it did (or gave up waiting). */
  async close(): Promise<void> {
    const live = this.live;
    this.live = undefined;
    this.listener?.fail(new ClosedError());
    if (live) await closeWorker(live);
  }
}

/** A worker slot held for one job. */
export interface SlotLease {
  run(job: SynthJob, signal?: AbortSignal): AsyncGenerator<Float32Array, SynthStats>;
  release(): void;
}

export class SynthPool {
  private readonly slots: WorkerSlot[];
  private readonly free: WorkerSlot[];
  private readonly queue: WorkQueue;
  private readonly retiring = new Set<LiveWorker>();
  private closed = false;
  /** Workers replaced after dying, stalling or trapping, since the pool started. */
  replacedWorkers = 0;

  constructor(private readonly options: SynthPoolOptions) {
    const url = options.workerUrl ?? defaultWorkerUrl();
    const settings = { intraOpThreads: options.intraOpThreads, sessionIdleMs: options.sessionIdleMs };
    this.slots = Array.from(
      { length: options.size },
      () =>
        new WorkerSlot(
          url,
          settings,
          () => this.replacedWorkers++,
          this.retiring,
          () => this.closed,
        ),
    );
    this.free = [...this.slots];
    this.queue = new WorkQueue('text-to-speech', { concurrency: options.size, maxQueue: options.maxQueue });
  }

  get active(): number {
    return this.queue.active;
  }

  get pending(): number {
    return this.queue.pending;
  }

  /** Live worker threads. */
  get workers(): number {
    return this.slots.filter((slot) => slot.alive).length;
  }

  /** Takes a place in the queue now (throws QueueFullError when full), then waits for a free worker. */
  async acquire(signal?: AbortSignal): Promise<SlotLease> {
    const lease = this.queue.admit();
    try {
      await lease.acquire(signal);
    } catch (error) {
      lease.release();
      throw error;
    }
    // Prefer a slot whose worker is already running (its sessions may be warm).
    const index = Math.max(
      0,
      this.free.findIndex((slot) => slot.alive),
    );
    const slot = this.free.splice(index, 1)[0] as WorkerSlot;
    let released = false;
    return {
      run: (job, runSignal) => slot.run(job, this.options.lookahead, this.options.stallTimeoutMs, runSignal),
      release: () => {
        if (released) return;
        released = true;
        this.free.push(slot);
        lease.release();
      },
    };
  }

  /** Fails waiting jobs, stops every worker (after its current ONNX Runtime call) and waits for them to exit. */
  async close(): Promise<void> {
    this.closed = true;
    this.queue.close(new ClosedError());
    await Promise.all([...this.slots.map((slot) => slot.close()), closeWorkers(this.retiring)]);
  }
}
