import { describe, expect, it } from 'vitest';
import { QueueFullError } from '../../src/errors.js';
import { WorkQueue } from '../../src/util/queue.js';

describe('WorkQueue', () => {
  it('runs at most `concurrency` at once and admits at most `maxQueue` more', async () => {
    const queue = new WorkQueue('test', { concurrency: 2, maxQueue: 1 });
    const a = queue.admit();
    const b = queue.admit();
    const c = queue.admit();
    expect(() => queue.admit()).toThrow(QueueFullError);
    await a.acquire();
    await b.acquire();
    let cStarted = false;
    const cRun = c.acquire().then(() => {
      cStarted = true;
    });
    await Promise.resolve();
    expect(cStarted).toBe(false);
    expect(queue.active).toBe(2);
    expect(queue.pending).toBe(1);
    a.release();
    await cRun;
    expect(cStarted).toBe(true);
    b.release();
    c.release();
    expect(queue.active).toBe(0);
    expect(queue.pending).toBe(0);
    queue.admit().release();
  });

  it('wakes waiters in FIFO order', async () => {
    const queue = new WorkQueue('fifo', { concurrency: 1, maxQueue: 5 });
    const first = queue.admit();
    await first.acquire();
    const order: number[] = [];
    const waits = [1, 2, 3].map((n) => {
      const lease = queue.admit();
      return lease.acquire().then(() => {
        order.push(n);
        lease.release();
      });
    });
    first.release();
    await Promise.all(waits);
    expect(order).toEqual([1, 2, 3]);
  });

  it('rejects a waiter with the abort reason and frees its place', async () => {
    const queue = new WorkQueue('abort', { concurrency: 1, maxQueue: 1 });
    const running = queue.admit();
    await running.acquire();
    const waiting = queue.admit();
    const controller = new AbortController();
    const wait = waiting.acquire(controller.signal);
    controller.abort(new Error('client went away'));
    await expect(wait).rejects.toThrow('client went away');
    waiting.release();
    expect(queue.pending).toBe(0);
    running.release();
    const next = queue.admit();
    await next.acquire();
    expect(queue.active).toBe(1);
    next.release();
  });

  it('release is idempotent', async () => {
    const queue = new WorkQueue('idem', { concurrency: 1, maxQueue: 0 });
    const lease = queue.admit();
    await lease.acquire();
    lease.release();
    lease.release();
    expect(queue.active).toBe(0);
    expect(queue.pending).toBe(0);
  });
});
