// Deadlines on a request body's arrival, so a client that trickles (or stops sending) its body cannot hold a
// request slot for long: a longest gap between chunks, a longest time for the whole body, and a lowest average rate.
import type { IncomingMessage } from 'node:http';
import { RequestAbortedError } from './http-error.js';

export interface BodyDeadlines {
  /** Longest gap between two chunks, in ms; 0 = none. */
  idleMs: number;
  /** Longest time for the whole body from when the watch starts, in ms; 0 = none. */
  totalMs: number;
  /** Lowest average rate of the body, in bytes per second, judged once `rateGraceMs` has passed; 0 = none. */
  minBytesPerSecond: number;
  /** Time the body flows before its average rate is judged, in ms; more than 0 when `minBytesPerSecond` is set. */
  rateGraceMs: number;
}

/** The longest delay setTimeout() takes; a longer one fires at once. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** Whether the request declares a body (a non-zero Content-Length, or any Transfer-Encoding). */
export function declaresBody(req: IncomingMessage): boolean {
  if (req.headers['transfer-encoding'] !== undefined) return true;
  const length = req.headers['content-length'];
  return length !== undefined && length !== '0';
}

/**
 * Whether part of the declared body has yet to arrive. Node keeps reading such a body after the response to keep
 * the connection alive, however long it is, so an answer to it should close the connection instead.
 */
export function bodyStillArriving(req: IncomingMessage): boolean {
  if (!declaresBody(req) || req.complete || req.destroyed) return false;
  // Node marks a request complete a moment after its last bytes are buffered; a body not yet read whose declared
  // length is all buffered has arrived.
  const declared = Number(req.headers['content-length']);
  return !(!req.readableDidRead && Number.isFinite(declared) && req.readableLength >= declared);
}

/**
 * Calls `expire` with a `body_timeout` RequestAbortedError when the body of `req` stops arriving for `idleMs`, has
 * not fully arrived `totalMs` after this call, or, once it has flowed for `rateGraceMs`, has arrived at an average
 * below `minBytesPerSecond` since it started flowing. Returns the function that stops watching (also stopped when
 * the body has arrived, and after `expire`).
 *
 * It reads nothing itself: a 'data' listener is added only once the body's reader has made the request flow, so
 * no chunk is taken from that reader. A gap while bytes wait unread, or while the reader itself paused the body
 * (a slow disk), is not the client's: the idle deadline then starts over, and the rate's clock stops (it runs
 * only while the body flows to its reader; bytes the client sent meanwhile count when they flow).
 */
export function watchBodyArrival(
  req: IncomingMessage,
  deadlines: BodyDeadlines,
  expire: (error: RequestAbortedError) => void,
): () => void {
  const { idleMs, totalMs, minBytesPerSecond, rateGraceMs } = deadlines;
  if ((idleMs === 0 && totalMs === 0 && minBytesPerSecond === 0) || !bodyStillArriving(req)) return () => undefined;
  let idleTimer: NodeJS.Timeout | undefined;
  let rateTimer: NodeJS.Timeout | undefined;
  let watching = true;
  let observing = false;
  // The rate's bookkeeping: body bytes that flowed to the reader, and the time it flowed (finished stretches, and
  // when the current one began).
  let bytes = 0;
  let flowedMs = 0;
  let flowingSince: number | undefined;
  const stop = () => {
    if (!watching) return;
    watching = false;
    clearTimeout(idleTimer);
    clearTimeout(totalTimer);
    clearTimeout(rateTimer);
    req.off('resume', onResume);
    req.off('pause', onPause);
    req.off('data', onData);
    req.off('end', stop);
    req.off('close', stop);
  };
  const fire = (message: string) => {
    stop();
    expire(new RequestAbortedError('body_timeout', message));
  };
  const armIdle = () => {
    if (idleMs === 0) return;
    clearTimeout(idleTimer);
    idleTimer = setTimeout(onIdle, idleMs);
    idleTimer.unref();
  };
  const onIdle = () => {
    if (req.complete) return stop();
    if (req.readableLength > 0 || req.readableFlowing === false) return armIdle();
    fire(`no body bytes arrived for ${idleMs} ms; the request body must keep arriving`);
  };
  const flowingMs = () => flowedMs + (flowingSince === undefined ? 0 : performance.now() - flowingSince);
  /** Flowing time at which the body, with no more bytes, falls below the rate (never before the grace). */
  const rateDueMs = () => Math.max(rateGraceMs, (bytes * 1000) / minBytesPerSecond);
  const armRate = () => {
    clearTimeout(rateTimer);
    if (minBytesPerSecond === 0 || flowingSince === undefined) return;
    rateTimer = setTimeout(onRateDue, Math.min(MAX_TIMER_MS, Math.max(1, rateDueMs() - flowingMs())));
    rateTimer.unref();
  };
  const onRateDue = () => {
    if (req.complete) return stop();
    // Held by its reader: the clock stops, and starts again (with this check) on 'resume'.
    if (req.readableFlowing !== true) return onPause();
    if (flowingSince === undefined) return;
    const elapsed = flowingMs();
    // Checked lazily: the bytes that came since the timer was set may have moved the due time on.
    if (elapsed < rateDueMs()) return armRate();
    const seconds = elapsed / 1000;
    fire(
      `the request body arrived too slowly: ${bytes} bytes in ${seconds.toFixed(1)} s, ` +
        `below limits.minBodyBytesPerSecond (${minBytesPerSecond} bytes/s)`,
    );
  };
  const onData = (chunk: Buffer | string) => {
    bytes += typeof chunk === 'string' ? Buffer.byteLength(chunk) : chunk.length;
    armIdle();
  };
  const onPause = () => {
    if (flowingSince !== undefined) flowedMs += performance.now() - flowingSince;
    flowingSince = undefined;
    clearTimeout(rateTimer);
  };
  const onResume = () => {
    // 'resume' is emitted a tick after resume(): a pause() in between leaves the body paused.
    if (req.readableFlowing !== true) return;
    if (!observing) {
      observing = true;
      // The reader's own listener came first and the stream already flows, so this one only observes.
      req.on('data', onData);
    }
    flowingSince ??= performance.now();
    armRate();
  };
  const totalTimer =
    totalMs > 0
      ? setTimeout(() => {
          if (req.complete) return stop();
          fire(`the request body did not arrive within ${totalMs} ms`);
        }, totalMs)
      : undefined;
  totalTimer?.unref();
  armIdle();
  // Every pause and resume, after the first flow too: the rate's clock runs only while the body flows.
  req.on('resume', onResume);
  req.on('pause', onPause);
  if (req.readableFlowing === true) onResume();
  req.once('end', stop);
  req.once('close', stop);
  return stop;
}
