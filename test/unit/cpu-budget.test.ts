import { describe, expect, it } from 'vitest';
import { CpuBudget, type CpuGrant } from '../../src/util/cpu-budget.js';

/** Resolves on the next turn of the microtask queue whether or not `promise` settled; returns it if it did. */
async function settled<T>(promise: Promise<T>): Promise<T | 'pending'> {
  return Promise.race([promise, new Promise<'pending'>((resolve) => setTimeout(() => resolve('pending'), 5))]);
}

describe('CpuBudget', () => {
  it('grants up to the threads asked for, and what is free when the budget is partly taken', async () => {
    const budget = new CpuBudget(7);
    const first = await budget.acquire({ threads: 4 });
    expect(first.threads).toBe(4);
    const second = await budget.acquire({ threads: 4 });
    expect(second.threads).toBe(3);
    expect(budget.status()).toMatchObject({ threads: 7, inUse: 7, waiting: 0, runs: 2, maxRuns: null });
    first.release();
    second.release();
    expect(budget.status().inUse).toBe(0);
  });

  it('makes work wait, first come first served, until threads are free; release is idempotent', async () => {
    const budget = new CpuBudget(2);
    const running = await budget.acquire({ threads: 2 });
    const a = budget.acquire({ threads: 1 });
    const b = budget.acquire({ threads: 2 });
    expect(await settled(a)).toBe('pending');
    expect(budget.status().waiting).toBe(2);
    running.release();
    running.release();
    const grantA = (await a) as CpuGrant;
    const grantB = (await b) as CpuGrant;
    expect([grantA.threads, grantB.threads]).toEqual([1, 1]);
    expect(budget.status()).toMatchObject({ threads: 2, inUse: 2, waiting: 0 });
  });

  it('lends one thread beyond the budget to short work, one at a time', async () => {
    const budget = new CpuBudget(1);
    const long = await budget.acquire({ threads: 1 });
    const short1 = budget.acquire({ threads: 4, short: true });
    const short2 = budget.acquire({ threads: 1, short: true });
    const borrowed = (await settled(short1)) as CpuGrant;
    expect(borrowed).toMatchObject({ threads: 1, borrowed: true });
    expect(await settled(short2)).toBe('pending');
    expect(budget.status()).toMatchObject({ threads: 1, inUse: 2, waiting: 1, runs: 2 });
    borrowed.release();
    expect(await settled(short2)).toMatchObject({ threads: 1, borrowed: true });
    long.release();
  });

  it('does not lend to long work, and short work takes a free thread of the budget before borrowing', async () => {
    const budget = new CpuBudget(2);
    const long = await budget.acquire({ threads: 1 });
    const short = await budget.acquire({ threads: 1, short: true });
    expect(short.borrowed).toBe(false);
    const waitingLong = budget.acquire({ threads: 1 });
    expect(await settled(waitingLong)).toBe('pending');
    long.release();
    expect(await settled(waitingLong)).toMatchObject({ threads: 1, borrowed: false });
  });

  it('grants exact work exactly its threads once they are free, and lends it the extra thread only when it needs one', async () => {
    const budget = new CpuBudget(3);
    const first = await budget.acquire({ threads: 2 });
    const exact = budget.acquire({ threads: 2, exact: true, short: true });
    const later = budget.acquire({ threads: 1 });
    // One thread is free, but the exact work at the head needs two, and nothing passes it (nor borrows for it).
    expect(await settled(exact)).toBe('pending');
    expect(await settled(later)).toBe('pending');
    first.release();
    expect(await settled(exact)).toMatchObject({ threads: 2, borrowed: false });
    expect(await settled(later)).toMatchObject({ threads: 1, borrowed: false });
    const single = budget.acquire({ threads: 1, exact: true, short: true });
    expect(await settled(single)).toMatchObject({ threads: 1, borrowed: true });
  });

  it('rejects with the signal reason when aborted while waiting, and forgets the waiter', async () => {
    const budget = new CpuBudget(1);
    const held = await budget.acquire({ threads: 1 });
    const controller = new AbortController();
    const waiting = budget.acquire({ threads: 1, signal: controller.signal });
    controller.abort(new Error('gone'));
    await expect(waiting).rejects.toThrow('gone');
    expect(budget.status().waiting).toBe(0);
    held.release();
    expect(budget.status().inUse).toBe(0);
    await expect(budget.acquire({ threads: 1, signal: AbortSignal.abort(new Error('early')) })).rejects.toThrow(
      'early',
    );
  });

  it('caps the runs at once with maxRuns, free threads and the borrowed one included', async () => {
    const budget = new CpuBudget(4, 1);
    const transcription = await budget.acquire({ threads: 2 });
    // Two threads are free and a short synthesis could borrow, but one run is already computing.
    const synthesis = budget.acquire({ threads: 1, exact: true, short: true });
    const diarization = budget.acquire({ threads: 1 });
    expect(await settled(synthesis)).toBe('pending');
    expect(await settled(diarization)).toBe('pending');
    expect(budget.status()).toMatchObject({ inUse: 2, runs: 1, maxRuns: 1, waiting: 2 });
    transcription.release();
    // First come, first served: the synthesis runs next, alone, on the budget's own thread.
    const granted = (await settled(synthesis)) as CpuGrant;
    expect(granted).toMatchObject({ threads: 1, borrowed: false });
    expect(await settled(diarization)).toBe('pending');
    granted.release();
    const last = (await settled(diarization)) as CpuGrant;
    expect(last.threads).toBe(1);
    last.release();
    expect(budget.status()).toMatchObject({ inUse: 0, runs: 0, waiting: 0 });
  });

  it('lends a lone elastic call the extra thread, and takes it back when short work arrives', async () => {
    const budget = new CpuBudget(1);
    const call = await budget.acquire({ threads: 2, elastic: true });
    expect(call).toMatchObject({ threads: 2, borrowed: false });
    expect(budget.status()).toMatchObject({ inUse: 2, runs: 1 });
    const seen: number[] = [];
    call.watch((threads) => seen.push(threads));
    const short = (await settled(budget.acquire({ threads: 1, short: true }))) as CpuGrant;
    expect(short).toMatchObject({ threads: 1, borrowed: true });
    expect(call.threads).toBe(1);
    expect(seen).toEqual([1]);
    expect(budget.status()).toMatchObject({ inUse: 2, runs: 2 });
    short.release();
    expect(call.threads).toBe(2);
    expect(seen).toEqual([1, 2]);
    call.release();
    expect(budget.status()).toMatchObject({ inUse: 0, runs: 0, waiting: 0 });
  });

  it('keeps the loan while only long work waits (it needs the budget, not the extra thread)', async () => {
    const budget = new CpuBudget(1);
    const call = await budget.acquire({ threads: 4, elastic: true });
    expect(call.threads).toBe(2);
    const long = budget.acquire({ threads: 1 });
    expect(await settled(long)).toBe('pending');
    expect(call.threads).toBe(2);
    call.release();
    const next = (await settled(long)) as CpuGrant;
    expect(next).toMatchObject({ threads: 1, borrowed: false });
    next.release();
  });

  it('lends to elastic work that asked for more than it got, never beyond what it asked', async () => {
    const budget = new CpuBudget(2);
    const one = await budget.acquire({ threads: 1, elastic: true });
    expect(one.threads).toBe(1);
    const two = await budget.acquire({ threads: 2, elastic: true });
    expect(two.threads).toBe(2); // one thread of the budget and the lent one
    one.release();
    expect(two.threads).toBe(2);
    two.release();
    expect(budget.status()).toMatchObject({ inUse: 0, runs: 0 });
  });

  it('with maxRuns, keeps the loan while short work waiting could not run anyway', async () => {
    const budget = new CpuBudget(1, 1);
    const call = await budget.acquire({ threads: 2, elastic: true });
    expect(call.threads).toBe(2);
    const short = budget.acquire({ threads: 1, short: true });
    expect(await settled(short)).toBe('pending');
    expect(call.threads).toBe(2);
    call.release();
    const next = (await settled(short)) as CpuGrant;
    expect(next).toMatchObject({ threads: 1, borrowed: false });
    next.release();
    expect(budget.status()).toMatchObject({ inUse: 0, runs: 0, waiting: 0 });
  });

  it('a watcher that throws does not break the budget', async () => {
    const budget = new CpuBudget(1);
    const call = await budget.acquire({ threads: 2, elastic: true });
    call.watch(() => {
      throw new Error('listener failed');
    });
    const short = (await settled(budget.acquire({ threads: 1, short: true }))) as CpuGrant;
    expect(short.borrowed).toBe(true);
    expect(call.threads).toBe(1);
    short.release();
    call.release();
    expect(budget.status()).toMatchObject({ inUse: 0, runs: 0, waiting: 0 });
  });

  it('stops telling a watcher once it unsubscribes or the grant is released', async () => {
    const budget = new CpuBudget(1);
    const call = await budget.acquire({ threads: 2, elastic: true });
    const seen: number[] = [];
    const stop = call.watch((threads) => seen.push(threads));
    stop();
    const short = await budget.acquire({ threads: 1, short: true });
    expect(seen).toEqual([]);
    call.watch((threads) => seen.push(threads));
    call.release();
    short.release();
    expect(seen).toEqual([]);
  });

  it('refuses a budget below one thread or one run', () => {
    expect(() => new CpuBudget(0)).toThrow(RangeError);
    expect(() => new CpuBudget(2, 0)).toThrow(RangeError);
  });
});
