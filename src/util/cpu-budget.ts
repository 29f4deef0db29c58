// One CPU budget for the whole engine: transcriptions, syntheses and diarizations take their threads from it before
// they compute, so work of every kind running at once never uses more threads than the budget (by default one core
// fewer than the machine has, the last one left to the event loop and the host). Grants are first come, first
// served. A transcription gets the threads free when its turn comes, up to what it asked for (whisper runs with as
// many as it is given), so no core idles while it waits; it keeps that many until it ends, even if more free up.
// Work with a fixed thread count (an ONNX Runtime session's) asks `exact` and waits until that many are free.
//
// Work is not preempted, so a short call could wait minutes behind an hour-long file. Short work (a clip of at most
// one whisper window, a sentence) may therefore borrow one thread beyond the budget when none is free; one such
// thread at a time, so the threads computing never exceed the budget + 1, which is the core count with the default
// budget.
//
// Work that can change its thread count while it runs (whisper, through patch 0003 to whisper.cpp: `elastic`) is lent
// that extra thread while no short work could borrow it, so a call alone computes on every core of a small machine
// (up to the threads it asked for); when short work arrives the loan is taken back first, and the lent work drops the
// thread at its next graph pass (a few milliseconds of decoding, at most one encoder pass: seconds with a large model
// on the CPU). Long work waiting for the budget's own threads leaves the loan alone: it could not use that thread.
//
// A budget may also cap the runs computing at once, whatever their threads (`maxRuns`). Memory, not cores, is then
// the limit: on a small device a transcription and a synthesis each hold their own working memory while they run,
// so with a cap of 1 the peak is the larger of the two instead of their sum. The borrowed thread counts as a run.
import { availableParallelism } from 'node:os';
import { abortReason } from './job.js';

/** Work on at most this much audio (one whisper window) counts as short: it may borrow the extra thread. */
export const SHORT_WORK_SECONDS = 30;

/**
 * The default budget: every core but one, which is left to the event loop and the host (ggml's workers spin while
 * they wait, so work on every core starves timers and I/O). At least 1.
 */
export function defaultCpuThreads(cores = availableParallelism()): number {
  return Math.max(1, cores - 1);
}

/** A thread count that may change while work runs. */
export interface LiveThreadCount {
  /** Threads the work may use now. */
  readonly threads: number;
  /** Calls `listener` with each new count until the returned function is called. */
  watch(listener: (threads: number) => void): () => void;
}

/** Threads granted to one piece of work; `release` gives them back (idempotent). */
export interface CpuGrant extends LiveThreadCount {
  /** Threads the work may use now: at least 1, at most what it asked for. Changes only for `elastic` work. */
  readonly threads: number;
  /** Whether this grant is the borrowed thread of short work. */
  readonly borrowed: boolean;
  release(): void;
}

export interface CpuRequest {
  /** Threads the work would like; it is given between 1 and this many. */
  threads: number;
  /** Short work may borrow the one thread beyond the budget when none is free. */
  short?: boolean;
  /**
   * The work runs a fixed number of threads (an ONNX Runtime session's), whatever it is granted: it waits until
   * min(threads, budget) are free and is granted exactly that many, and borrows only when that is 1.
   */
  exact?: boolean;
  /**
   * The work can take a thread more or less while it runs (it follows `watch`): it is lent the thread short work
   * may borrow while no short work could borrow it, up to `threads`, and gives it back when some could.
   */
  elastic?: boolean;
  signal?: AbortSignal;
}

/** What the budget is doing, for status reports and tests. */
export interface CpuBudgetStatus {
  /** The budget, in threads. */
  threads: number;
  /** Threads granted now, the borrowed one included. */
  inUse: number;
  /** Work waiting for threads. */
  waiting: number;
  /** Runs holding threads now, the borrowed one included. */
  runs: number;
  /** The most runs at once, or null for no cap beyond the threads. */
  maxRuns: number | null;
}

interface Waiter {
  request: CpuRequest;
  grant: (grant: CpuGrant) => void;
}

/** A grant as the budget keeps it: its own threads, and whether the extra thread is lent to it. */
interface HeldGrant extends CpuGrant {
  readonly request: CpuRequest;
  /** Threads from the budget (the lent thread not counted). */
  readonly base: number;
  lent: boolean;
  notify(): void;
}

export class CpuBudget {
  #inUse = 0;
  /** The extra thread is taken: borrowed by short work, or lent to elastic work (then `#lentTo`). */
  #borrowed = false;
  #lentTo: HeldGrant | undefined;
  #runs = 0;
  readonly #waiting: Waiter[] = [];
  /** Elastic grants held now, oldest first: the first that can take the extra thread is lent it. */
  readonly #elastic: HeldGrant[] = [];

  constructor(
    readonly threads: number,
    /** The most runs computing at once (grants outstanding), or null for no cap beyond the threads. */
    readonly maxRuns: number | null = null,
  ) {
    if (!Number.isInteger(threads) || threads < 1) throw new RangeError(`CPU budget must be >= 1 thread: ${threads}`);
    if (maxRuns !== null && (!Number.isInteger(maxRuns) || maxRuns < 1)) {
      throw new RangeError(`CPU budget runs must be >= 1: ${maxRuns}`);
    }
  }

  status(): CpuBudgetStatus {
    return {
      threads: this.threads,
      inUse: this.#inUse + (this.#borrowed ? 1 : 0),
      waiting: this.#waiting.length,
      runs: this.#runs,
      maxRuns: this.maxRuns,
    };
  }

  /** Whether one more run may start under `maxRuns`. */
  #runFree(): boolean {
    return this.maxRuns === null || this.#runs < this.maxRuns;
  }

  /** Resolves with threads once it is this work's turn; rejects with the signal's reason if aborted while waiting. */
  acquire(request: CpuRequest): Promise<CpuGrant> {
    const { signal } = request;
    if (signal?.aborted) return Promise.reject(abortReason(signal));
    return new Promise<CpuGrant>((resolve, reject) => {
      const waiter: Waiter = {
        request,
        grant: (grant) => {
          signal?.removeEventListener('abort', onAbort);
          resolve(grant);
        },
      };
      const onAbort = () => {
        const index = this.#waiting.indexOf(waiter);
        if (index >= 0) this.#waiting.splice(index, 1);
        reject(abortReason(signal!));
        // Exact work at the head may have been holding back smaller work behind it.
        this.#dispatch();
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.#waiting.push(waiter);
      this.#dispatch();
    });
  }

  /** The fewest threads a request can run with. */
  #least(request: CpuRequest): number {
    return request.exact ? Math.max(1, Math.min(request.threads, this.threads)) : 1;
  }

  #dispatch(): void {
    // First come, first served on the budget's own threads: the first in line runs once its least is free, and no
    // later work passes it.
    while (this.#waiting.length > 0 && this.#runFree()) {
      const { request } = this.#waiting[0]!;
      const free = this.threads - this.#inUse;
      if (free < this.#least(request)) break;
      const waiter = this.#waiting.shift()!;
      const threads = request.exact ? this.#least(request) : Math.max(1, Math.min(request.threads, free));
      this.#inUse += threads;
      waiter.grant(this.#grant(threads, false, request));
    }
    // Short work that could borrow now comes before a loan: the lent thread goes back first (effective at the lent
    // work's next pass). Other work waits for the budget's own threads, which the loan does not hold.
    const borrowerReady = this.#runFree() && this.#borrowerWaiting();
    if (borrowerReady && this.#lentTo) this.#takeBackLoan();
    // The first short work waiting that can run on one thread may borrow the extra one.
    if (!this.#borrowed && this.#runFree()) {
      const index = this.#waiting.findIndex((waiter) => this.#mayBorrow(waiter.request));
      if (index >= 0) {
        const [waiter] = this.#waiting.splice(index, 1);
        this.#borrowed = true;
        waiter!.grant(this.#grant(1, true, waiter!.request));
      }
    }
    // No short work could borrow it: the extra thread, if free, is lent to the oldest elastic work that asked for more.
    if (!this.#borrowed && !borrowerReady) {
      const taker = this.#elastic.find((held) => held.base < held.request.threads);
      if (taker) {
        this.#borrowed = true;
        this.#lentTo = taker;
        taker.lent = true;
        taker.notify();
      }
    }
  }

  #mayBorrow(request: CpuRequest): boolean {
    return request.short === true && this.#least(request) === 1;
  }

  #borrowerWaiting(): boolean {
    return this.#waiting.some((waiter) => this.#mayBorrow(waiter.request));
  }

  #takeBackLoan(): void {
    const held = this.#lentTo!;
    this.#lentTo = undefined;
    this.#borrowed = false;
    held.lent = false;
    held.notify();
  }

  #grant(base: number, borrowed: boolean, request: CpuRequest): CpuGrant {
    let released = false;
    this.#runs++;
    const listeners = new Set<(threads: number) => void>();
    const held: HeldGrant = {
      request,
      base,
      lent: false,
      borrowed,
      get threads() {
        return base + (held.lent ? 1 : 0);
      },
      watch: (listener) => {
        listeners.add(listener);
        return () => listeners.delete(listener);
      },
      notify: () => {
        // A listener's failure must not stop the budget's bookkeeping half-way (this runs inside #dispatch).
        for (const listener of listeners) {
          try {
            listener(held.threads);
          } catch {}
        }
      },
      release: () => {
        if (released) return;
        released = true;
        this.#runs--;
        listeners.clear();
        const index = this.#elastic.indexOf(held);
        if (index >= 0) this.#elastic.splice(index, 1);
        if (this.#lentTo === held) {
          this.#lentTo = undefined;
          held.lent = false;
          this.#borrowed = false;
        }
        if (borrowed) this.#borrowed = false;
        else this.#inUse -= base;
        this.#dispatch();
      },
    };
    if (request.elastic && !borrowed) this.#elastic.push(held);
    return held;
  }
}
