// A process-wide budget for decoded audio held by admitted work. Queue limits count jobs, not bytes: 17 admitted
// jobs each holding three hours of decoded samples would take gigabytes. Each job takes its bytes once its audio is
// decoded and gives them back when the native work reading them has stopped.
import { AudioTooLongError, QueueFullError } from '../errors.js';

const MIB = 1024 * 1024;

export class MemoryBudget {
  #used = 0;

  constructor(
    /** What the budget is for, in messages: "decoded audio". */
    private readonly what: string,
    /** The engine option that sets it, named in messages. */
    private readonly option: string,
    readonly limitBytes: number,
  ) {}

  /** Bytes taken now. */
  get used(): number {
    return this.#used;
  }

  /**
   * Takes `bytes`, returning the function that gives them back (idempotent). Throws AudioTooLongError when one job
   * alone needs more than the whole budget (it can never fit), QueueFullError when it does not fit next to the
   * work already holding memory (it may, later).
   */
  take(bytes: number, maxDurationSeconds: number): () => void {
    if (bytes > this.limitBytes) {
      throw new AudioTooLongError(
        `the ${this.what} needs ${(bytes / MIB).toFixed(1)} MiB, more than the engine's ${this.option} of ` +
          `${(this.limitBytes / MIB).toFixed(1)} MiB`,
        maxDurationSeconds,
      );
    }
    if (this.#used + bytes > this.limitBytes) {
      throw new QueueFullError(
        `the ${this.option} budget (${(this.limitBytes / MIB).toFixed(1)} MiB of ${this.what}) is in use by other work`,
      );
    }
    this.#used += bytes;
    let returned = false;
    return () => {
      if (returned) return;
      returned = true;
      this.#used -= bytes;
    };
  }
}
