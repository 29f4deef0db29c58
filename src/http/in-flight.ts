// The requests a handler has in progress, so that a server shutting down can cancel them and wait for them to end.
import { RequestAbortedError } from './http-error.js';

export class InFlightRequests {
  readonly #running = new Set<AbortController>();
  readonly #idleWaiters = new Set<() => void>();

  get size(): number {
    return this.#running.size;
  }

  add(controller: AbortController): void {
    this.#running.add(controller);
  }

  /** Forgets an ended request; the last one to end wakes whoever waits in idle(). */
  delete(controller: AbortController): void {
    this.#running.delete(controller);
    if (this.#running.size > 0) return;
    for (const wake of [...this.#idleWaiters]) wake();
  }

  /** Aborts every request in progress with a `shutdown` reason. */
  abortAll(): void {
    for (const controller of [...this.#running]) controller.abort(new RequestAbortedError('shutdown'));
  }

  /** Resolves when no request is in progress, or after `timeoutMs`. */
  idle(timeoutMs: number): Promise<void> {
    if (this.#running.size === 0) return Promise.resolve();
    return new Promise((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        this.#idleWaiters.delete(wake);
        resolve();
      };
      const timer = setTimeout(wake, timeoutMs);
      this.#idleWaiters.add(wake);
    });
  }
}
