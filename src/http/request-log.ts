// One structured record per request the handler owns, and request ids.
import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';

/** What the handler reports about each request it owns (see the `onRequest` option). */
export interface RequestLogEntry {
  /** ISO 8601 time the request arrived. */
  time: string;
  request_id: string;
  method: string;
  /** The path as the handler saw it (below the mount point). */
  path: string;
  /** The response status; for a client that went away before the response ended, the status it was given. */
  status: number;
  duration_ms: number;
  /** Body bytes sent. */
  bytes_out: number;
  /** The error code, when the request failed. */
  error_code?: string;
  /** True when the client closed the connection before the response ended. */
  client_closed?: boolean;
}

// A client's own id is echoed only when it is plainly an id: no header injection, no log forging, bounded.
const WELL_FORMED_ID = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/;

/** The client's `X-Request-Id` when well-formed, else a fresh `req_<32 hex>`. */
export function requestIdOf(req: IncomingMessage): string {
  const inbound = req.headers['x-request-id'];
  if (typeof inbound === 'string' && WELL_FORMED_ID.test(inbound)) return inbound;
  return `req_${randomUUID().replaceAll('-', '')}`;
}

const sent = new WeakMap<object, number>();

/** Counts body bytes written to a response (for the log record). */
export function countBytesOut(res: object, bytes: number): void {
  sent.set(res, (sent.get(res) ?? 0) + bytes);
}

/** Body bytes counted for a response. */
export function bytesOut(res: object): number {
  return sent.get(res) ?? 0;
}

/**
 * Calls the host's logger. A logger that throws, or returns a promise that rejects, must not take the request (or
 * the server) down with it.
 */
export function callLogger<T>(logger: ((value: T) => unknown) | undefined, value: T): void {
  if (!logger) return;
  try {
    const result = logger(value);
    if (result instanceof Promise) result.catch(() => undefined);
  } catch {
    // ignored, as above
  }
}
