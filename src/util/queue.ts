// A bounded work queue: at most `concurrency` jobs run, at most `maxQueue` more wait; beyond that,
// admission fails at once with QueueFullError so a server sheds load instead of piling it up.
import { QueueFullError } from '../errors.js';
import { abortReason } from './job.js';

export interface QueueLimits {
  concurrency: number;
  maxQueue: number;
}

/** A place in the queue, taken before any expensive preparation (such as decoding) starts. */
export interface Lease {
  /** Waits for a run slot (FIFO). Rejects with the signal's reason if aborted while waiting. */
  acquire(signal?: AbortSignal): Promise<void>;
  /** Frees the slot or the waiting place. Idempotent. */
  release(): void;
}

export class WorkQueue {
  private running = 0;
  private admitted = 0;
  private readonly waiting: Array<() => void> = [];
  /** Fails the jobs still waiting when the queue closes. */
  private readonly failWaiting = new Map<() => void, (reason: unknown) => void>();
  private closedWith: unknown;

  constructor(
    private readonly name: string,
    private readonly limits: QueueLimits,
  ) {}

  /** Jobs running now. */
  get active(): number {
    return this.running;
  }

  /** Jobs admitted but not yet running. */
  get pending(): number {
    return this.admitted - this.running;
  }

  /**
   * Refuses new jobs (admit() throws `reason`) and fails the ones still waiting with it; running jobs finish.
   */
  close(reason: unknown): void {
    this.closedWith = reason;
    for (const [wake, fail] of this.failWaiting) {
      const index = this.waiting.indexOf(wake);
      if (index >= 0) this.waiting.splice(index, 1);
      fail(reason);
    }
    this.failWaiting.clear();
  }

  /** Takes a place or throws QueueFullError (or the reason the queue was closed with). */
  admit(): Lease {
    if (this.closedWith !== undefined) throw this.closedWith;
    const { concurrency, maxQueue } = this.limits;
    if (this.admitted >= concurrency + maxQueue) {
      throw new QueueFullError(
        `${this.name}: queue is full (${this.running} running, ${this.pending} waiting, maxQueue ${maxQueue})`,
      );
    }
    this.admitted++;
    let state: 'admitted' | 'waiting' | 'running' | 'released' = 'admitted';
    let wake: (() => void) | undefined;
    const lease: Lease = {
      acquire: (signal) => {
        if (state !== 'admitted') return Promise.reject(new Error('lease already used'));
        if (signal?.aborted) return Promise.reject(abortReason(signal));
        if (this.running < concurrency && this.waiting.length === 0) {
          state = 'running';
          this.running++;
          return Promise.resolve();
        }
        state = 'waiting';
        return new Promise<void>((resolve, reject) => {
          const onAbort = () => {
            const index = wake ? this.waiting.indexOf(wake) : -1;
            if (index >= 0) this.waiting.splice(index, 1);
            if (wake) this.failWaiting.delete(wake);
            reject(abortReason(signal));
          };
          const self = () => {
            signal?.removeEventListener('abort', onAbort);
            this.failWaiting.delete(self);
            state = 'running';
            this.running++;
            resolve();
          };
          wake = self;
          this.waiting.push(self);
          this.failWaiting.set(self, (reason) => {
            signal?.removeEventListener('abort', onAbort);
            reject(reason);
          });
          signal?.addEventListener('abort', onAbort, { once: true });
        });
      },
      release: () => {
        if (state === 'released') return;
        if (state === 'running') this.running--;
        if (state === 'waiting' && wake) {
          const index = this.waiting.indexOf(wake);
          if (index >= 0) this.waiting.splice(index, 1);
          this.failWaiting.delete(wake);
        }
        state = 'released';
        this.admitted--;
        this.next();
      },
    };
    return lease;
  }

  private next(): void {
    while (this.running < this.limits.concurrency && this.waiting.length > 0) this.waiting.shift()!();
  }
}
