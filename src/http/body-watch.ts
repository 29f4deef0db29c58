// Deadlines on a request body's arrival, so a client that trickles (or stops sending) its body cannot hold a
// request slot for long: a longest gap between chunks and a longest time for the whole body.
import type { IncomingMessage } from 'node:http';
import { RequestAbortedError } from './http-error.js';

export interface BodyDeadlines {
  /** Longest gap between two chunks, in ms; 0 = none. */
  idleMs: number;
  /** Longest time for the whole body from when the watch starts, in ms; 0 = none. */
  totalMs: number;
}

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
 * Calls `expire` with a `body_timeout` RequestAbortedError when the body of `req` stops arriving for `idleMs`, or
 * has not fully arrived `totalMs` after this call. Returns the function that stops watching (also stopped when
 * the body has arrived, and after `expire`).
 *
 * It reads nothing itself: a 'data' listener is added only once the body's reader has made the request flow, so
 * no chunk is taken from that reader. A gap while bytes wait unread, or while the reader itself paused the body
 * (a slow disk), is not the client's: the idle deadline then starts over.
 */
export function watchBodyArrival(
  req: IncomingMessage,
  deadlines: BodyDeadlines,
  expire: (error: RequestAbortedError) => void,
): () => void {
  const { idleMs, totalMs } = deadlines;
  if ((idleMs === 0 && totalMs === 0) || !bodyStillArriving(req)) return () => undefined;
  let idleTimer: NodeJS.Timeout | undefined;
  let watching = true;
  const stop = () => {
    if (!watching) return;
    watching = false;
    clearTimeout(idleTimer);
    clearTimeout(totalTimer);
    req.off('resume', onResume);
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
  const onData = () => armIdle();
  const onResume = () => {
    req.off('resume', onResume);
    // The reader's own listener came first and the stream already flows, so this one only observes.
    req.on('data', onData);
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
  if (req.readableFlowing === true) onResume();
  else req.on('resume', onResume);
  req.once('end', stop);
  req.once('close', stop);
  return stop;
}
