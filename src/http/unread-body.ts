// The rest of a request body that an error left unread, before the error is answered.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { bodyStillArriving } from './body-watch.js';

/** How long an unread body may take to arrive once an error has been decided, before the connection is given up. */
const DRAIN_TIMEOUT_MS = 5000;

/**
 * Reads and drops what is left of a request body an error left partly read, so the answer can follow and the
 * connection carry the next request. When more than `limit` bytes remain, or the rest does not arrive in time, it
 * stops waiting and marks the response `Connection: close`: Node then closes the connection after the answer. A
 * body not read at all (401, 429, 415, a 413 by Content-Length) gets `Connection: close` at once: Node would
 * otherwise read it to its end after the answer, however long, for a client that was refused.
 */
export function discardUnreadBody(req: IncomingMessage, res: ServerResponse, limit: number): Promise<void> {
  if (req.complete || req.destroyed) return Promise.resolve();
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limit) {
    res.setHeader('Connection', 'close');
    return Promise.resolve();
  }
  if (!req.readableDidRead) {
    if (bodyStillArriving(req)) res.setHeader('Connection', 'close');
    return Promise.resolve();
  }
  return new Promise((resolve) => {
    let drained = 0;
    const done = () => {
      clearTimeout(timer);
      req.off('data', onData);
      req.off('end', done);
      req.off('close', done);
      resolve();
    };
    const giveUp = () => {
      res.setHeader('Connection', 'close');
      done();
    };
    const onData = (chunk: Buffer) => {
      drained += chunk.length;
      if (drained > limit) giveUp();
    };
    const timer = setTimeout(giveUp, DRAIN_TIMEOUT_MS);
    req.on('data', onData);
    req.once('end', done);
    req.once('close', done);
    req.on('error', () => undefined);
    req.resume();
  });
}
