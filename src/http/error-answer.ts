// The answer to a request that failed before its response began: JSON written by the handler, or the HttpError
// handed to the host's error middleware, once the client can take it.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { HttpError } from './http-error.js';
import { sendError } from './respond.js';
import { discardUnreadBody } from './unread-body.js';

export interface ErrorAnswerOptions {
  /** The host's error middleware (`errors: 'next'` and a `next` given), else undefined: the handler writes it. */
  handOff: ((error: HttpError) => void) | undefined;
  /** The handler aborted the request itself (timeout, shutdown, a stalled body): answer without waiting on it. */
  abortedByHandler: boolean;
  /** Most bytes of an unread body read and dropped before the answer; past it the connection is closed. */
  drainLimit: number;
}

export function answerError(
  req: IncomingMessage,
  res: ServerResponse,
  error: HttpError,
  { handOff, abortedByHandler, drainLimit }: ErrorAnswerOptions,
): void {
  if (res.destroyed) return;
  const respond = () => {
    if (res.destroyed || res.headersSent) return;
    // Express's final handler waits for an unfinished body before answering; one that stalled never ends.
    if (handOff && req.complete) handOff(error);
    else sendError(res, error);
  };
  if (abortedByHandler) {
    // The body may be what stalled (for body_timeout it is): answer now, and let Node close the connection
    // after the answer rather than wait for the rest.
    if (!req.complete) res.setHeader('Connection', 'close');
    respond();
    return;
  }
  // Answering while the client still sends can deadlock both sides' buffers: take the rest first.
  void discardUnreadBody(req, res, drainLimit).then(respond);
}
