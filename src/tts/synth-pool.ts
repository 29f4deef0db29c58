// The pool of synthesis worker threads, one WorkerClient each, running one job at a time; a bounded queue admits
// jobs (QueueFullError beyond it). A worker that dies, stalls or whose phonemizer trapped is given up on and
// replaced by a fresh one on its next job, and the job it was running fails with a SynthesisError whose code says
// which. Sentences flow under credit: the worker runs at most `lookahead` sentences ahead of the consumer.
import { ClosedError, SynthesisError } from '../errors.js';
import type { CpuBudget, CpuGrant } from '../util/cpu-budget.js';
import { untilAborted } from '../util/job.js';
import { workerScriptUrl } from '../util/onnx-worker.js';
import { WorkQueue } from '../util/queue.js';
import { WorkerClient, type WorkerErrors } from '../util/worker-client.js';
import type { SpokenWord } from './types.js';
import type { FromWorker, SynthJob, SynthStats, SynthWorkerSettings, ToWorker } from './worker-protocol.js';

/** One sentence's audio from a worker, with its words' times when the job asked for them. */
export interface SentenceAudio {
  samples: Float32Array;
  words: SpokenWord[] | undefined;
}

export interface SynthPoolOptions extends SynthWorkerSettings {
  /** Worker threads. */
  size: number;
  /** Jobs waiting for a worker beyond those running; more fail with QueueFullError. */
  maxQueue: number;
  /** Sentences a worker may synthesize ahead of the consumer. */
  lookahead: number;
  /** A worker that is owed audio and sends nothing for this long is terminated. */
  stallTimeoutMs: number;
  /** The worker script; default `synth-worker.js` (or its `.ts` source, see workerScriptUrl). */
  workerUrl?: URL;
  /** The engine's CPU budget: a job holds `intraOpThreads` of it while it has a worker. None: no limit but `size`. */
  cpu?: CpuBudget;
}

/** The synthesis worker script. */
export function defaultWorkerUrl(): URL {
  return workerScriptUrl(
    new URL('./synth-worker.js', import.meta.url),
    (message) => new SynthesisError(message, { code: 'TTS_WORKER_MISSING' }),
  );
}

const synthesisWorkerErrors: WorkerErrors = {
  died: (message) => new SynthesisError(message, { code: 'TTS_WORKER_DIED' }),
  stalled: (message) => new SynthesisError(message, { code: 'TTS_WORKER_STALLED' }),
};

type SynthClient = WorkerClient<ToWorker, FromWorker>;

/**
 * Runs a job on a worker, yielding each sentence's audio; returns the worker's counters. Stopping early (return,
 * throw, abort) cancels the job in the worker, which stops before its next sentence.
 */
async function* runJob(
  client: SynthClient,
  job: SynthJob,
  lookahead: number,
  signal?: AbortSignal,
): AsyncGenerator<SentenceAudio, SynthStats> {
  signal?.throwIfAborted();
  const running = client.start(job.jobId, { type: 'job', job: { ...job, credit: lookahead } });
  let settled = false;
  try {
    for (;;) {
      const message = await untilAborted(running.next(), signal);
      if (message.type === 'audio') {
        yield { samples: message.samples, words: message.words };
        running.send({ type: 'credit', id: job.jobId, n: 1 });
      } else if (message.type === 'done') {
        settled = true;
        return message.stats;
      } else if (message.type === 'error') {
        settled = true;
        if (message.fatal) client.retire(synthesisWorkerErrors.died(message.message));
        throw new SynthesisError(message.message, { code: message.code });
      }
    }
  } finally {
    if (!settled) running.cancel();
    running.end();
  }
}

/** A worker slot held for one job. */
export interface SlotLease {
  run(job: SynthJob, signal?: AbortSignal): AsyncGenerator<SentenceAudio, SynthStats>;
  release(): void;
}

export class SynthPool {
  private readonly slots: SynthClient[];
  private readonly free: SynthClient[];
  private readonly queue: WorkQueue;
  /** Workers replaced after dying, stalling or trapping, since the pool started. */
  replacedWorkers = 0;

  constructor(private readonly options: SynthPoolOptions) {
    const url = options.workerUrl ?? defaultWorkerUrl();
    const data: SynthWorkerSettings = {
      intraOpThreads: options.intraOpThreads,
      memoryArena: options.memoryArena,
      sessionIdleMs: options.sessionIdleMs,
      onnxRuntime: options.onnxRuntime,
    };
    this.slots = Array.from(
      { length: options.size },
      () =>
        new WorkerClient<ToWorker, FromWorker>({
          script: () => url,
          data,
          name: 'synthesis worker',
          errors: synthesisWorkerErrors,
          stallTimeoutMs: options.stallTimeoutMs,
          onReplaced: () => this.replacedWorkers++,
        }),
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

  /**
   * Takes a place in the queue now (throws QueueFullError when full), then waits for a free worker and for its
   * threads in the CPU budget; `short` work may borrow the budget's extra thread (see CpuBudget).
   */
  async acquire(signal?: AbortSignal, short = true): Promise<SlotLease> {
    const lease = this.queue.admit();
    let grant: CpuGrant | undefined;
    try {
      await lease.acquire(signal);
      // An ONNX session runs its intra-op threads whatever it is granted: exactly that many.
      grant = await this.options.cpu?.acquire({ threads: this.options.intraOpThreads, exact: true, short, signal });
    } catch (error) {
      lease.release();
      throw error;
    }
    // Prefer a slot whose worker is already running (its sessions may be warm).
    const index = Math.max(
      0,
      this.free.findIndex((slot) => slot.alive),
    );
    const slot = this.free.splice(index, 1)[0] as SynthClient;
    let released = false;
    return {
      run: (job, runSignal) => runJob(slot, job, this.options.lookahead, runSignal),
      release: () => {
        if (released) return;
        released = true;
        this.free.push(slot);
        grant?.release();
        lease.release();
      },
    };
  }

  /** Fails waiting jobs, stops every worker (after its current ONNX Runtime call) and waits for them to exit. */
  async close(): Promise<void> {
    this.queue.close(new ClosedError());
    await Promise.all(this.slots.map((slot) => slot.close()));
  }
}
