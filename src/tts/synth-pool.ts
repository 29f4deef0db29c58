// Where syntheses wait and run: at most `size` at once (`tts.workers`), each holding `intraOpThreads` of the engine's
// CPU budget while it runs, a bounded queue behind them (QueueFullError beyond it), and the loaded voices they share.
// The work itself is native (espeak-ng and ONNX Runtime in the addon, on libuv's pool): there is no worker thread to
// start, replace or terminate.
import { ClosedError } from '../errors.js';
import type { CpuBudget, CpuGrant } from '../util/cpu-budget.js';
import { WorkQueue } from '../util/queue.js';
import type { SynthJob, SynthStats } from './synth-job.js';
import { type SentenceAudio, Synthesizer } from './synthesizer.js';
import { VoiceSessions } from './voice-sessions.js';

export type { SentenceAudio } from './synthesizer.js';

export interface SynthPoolOptions {
  /** Syntheses running at once. */
  size: number;
  /** Syntheses waiting beyond those running; more fail with QueueFullError. */
  maxQueue: number;
  /** Sentences synthesized ahead of the consumer. */
  lookahead: number;
  /** One native step (an ONNX run, a phonemizer call) taking longer than this fails its synthesis. */
  stallTimeoutMs: number;
  /** ONNX Runtime intra-op threads per voice. */
  intraOpThreads: number;
  /** ONNX Runtime's CPU memory arena and memory patterns for voices. */
  memoryArena: boolean;
  /** Release a voice after this many ms unused; 0 keeps it. */
  sessionIdleMs: number;
  /** The engine's CPU budget: a synthesis holds `intraOpThreads` of it while it runs. None: no limit but `size`. */
  cpu?: CpuBudget;
}

/** A place to run one synthesis, held until release(). */
export interface SlotLease {
  run(job: SynthJob, signal?: AbortSignal): AsyncGenerator<SentenceAudio, SynthStats>;
  release(): void;
}

export class SynthPool {
  readonly #options: SynthPoolOptions;
  readonly #queue: WorkQueue;
  readonly #voices: VoiceSessions;
  readonly #synthesizer: Synthesizer;
  /** Each lease's stop switch: close() stops the syntheses running, with ClosedError. */
  readonly #leases = new Set<AbortController>();

  constructor(options: SynthPoolOptions) {
    this.#options = options;
    this.#queue = new WorkQueue('text-to-speech', { concurrency: options.size, maxQueue: options.maxQueue });
    this.#voices = new VoiceSessions({
      intraOpThreads: options.intraOpThreads,
      memoryArena: options.memoryArena,
      sessionIdleMs: options.sessionIdleMs,
    });
    this.#synthesizer = new Synthesizer(this.#voices, {
      lookahead: options.lookahead,
      stallTimeoutMs: options.stallTimeoutMs,
    });
  }

  get active(): number {
    return this.#queue.active;
  }

  get pending(): number {
    return this.#queue.pending;
  }

  /** Syntheses that can run at once. */
  get size(): number {
    return this.#options.size;
  }

  /** Voices loaded now. */
  get loadedVoices(): number {
    return this.#voices.loaded;
  }

  /**
   * Takes a place in the queue now (throws QueueFullError when full), then waits for a turn and for its threads in
   * the CPU budget; `short` work may borrow the budget's extra thread (see CpuBudget).
   */
  async acquire(signal?: AbortSignal, short = true): Promise<SlotLease> {
    const lease = this.#queue.admit();
    let grant: CpuGrant | undefined;
    try {
      await lease.acquire(signal);
      // An ONNX session runs its intra-op threads whatever it is granted: exactly that many.
      grant = await this.#options.cpu?.acquire({ threads: this.#options.intraOpThreads, exact: true, short, signal });
    } catch (error) {
      lease.release();
      throw error;
    }
    let released = false;
    const stop = new AbortController();
    this.#leases.add(stop);
    return {
      run: (job, runSignal) =>
        this.#synthesizer.run(job, runSignal ? AbortSignal.any([runSignal, stop.signal]) : stop.signal),
      release: () => {
        if (released) return;
        released = true;
        this.#leases.delete(stop);
        grant?.release();
        lease.release();
      },
    };
  }

  /**
   * Fails waiting syntheses and stops running ones with ClosedError (an ONNX run in flight is cancelled), then releases
   * every voice.
   */
  async close(): Promise<void> {
    this.#queue.close(new ClosedError());
    for (const stop of this.#leases) stop.abort(new ClosedError());
    this.#voices.close();
  }
}
