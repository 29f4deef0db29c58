// One request the handler owns, from arrival to its log record: its id and deadline, the cancelling of its work
// when nobody is left to answer, its error answer. It ends when its response closes or its socket does (a pipelined
// request queued behind another never sees its response close when the connection dies).
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { type BodyDeadlines, watchBodyArrival } from './body-watch.js';
import { answerError } from './error-answer.js';
import { type HttpError, RequestAbortedError, toHttpError } from './http-error.js';
import type { InFlightRequests } from './in-flight.js';
import type { ResolvedHandlerOptions } from './options.js';
import { bytesOut, callLogger, type RequestLogEntry, requestIdOf } from './request-log.js';
import type { RouteContext } from './routes/context.js';
import { onSocketClose } from './socket-close.js';

/** What an owned request offers the work that runs it. */
export interface OwnedRequestControl {
  /** Runs `cleanup` when the request ends (at once when it already has). */
  onEnd(cleanup: () => void): void;
  /**
   * Starts the body deadlines (`limits.bodyIdleTimeoutMs`, `limits.bodyTimeoutMs`, `limits.minBodyBytesPerSecond`):
   * past one, 408 and a close.
   */
  watchBody(): void;
}

/** The work of an owned request: a route behind its checks, or a refusal. */
export type OwnedWork = (ctx: RouteContext, control: OwnedRequestControl) => Promise<void>;

/** What the requests of one handler share. */
export interface OwnedRequestScope {
  readonly options: ResolvedHandlerOptions;
  readonly inFlight: InFlightRequests;
  /** Most bytes of an unread body drained before an error answer; past it the connection is closed instead. */
  readonly drainLimit: number;
}

/**
 * Runs `work` as a request the handler owns. A failure is answered (or, with `handOff`, given to the host's error
 * middleware) unless the client is gone or the response has begun, which is then cut short.
 */
export function handleOwnedRequest(
  scope: OwnedRequestScope,
  req: IncomingMessage,
  res: ServerResponse,
  handOff: ((error: HttpError) => void) | undefined,
  path: string,
  work: OwnedWork,
): void {
  const request = new OwnedRequest(scope, req, res, path);
  request.run(work).then(
    () => request.bodyDecided(),
    (error: unknown) => request.fail(error, handOff),
  );
}

function bodyDeadlines(options: ResolvedHandlerOptions): BodyDeadlines {
  return {
    idleMs: options.bodyIdleTimeoutMs,
    totalMs: options.bodyTimeoutMs,
    minBytesPerSecond: options.minBodyBytesPerSecond,
    rateGraceMs: options.bodyRateGraceMs,
  };
}

/** A promise that rejects with the signal's reason when it aborts, and the function that stops listening. */
function rejectionOnAbort(signal: AbortSignal): { aborted: Promise<never>; stop: () => void } {
  let stop: () => void = () => undefined;
  const aborted = new Promise<never>((_resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
    stop = () => signal.removeEventListener('abort', onAbort);
  });
  return { aborted, stop };
}

class OwnedRequest {
  readonly #scope: OwnedRequestScope;
  readonly #req: IncomingMessage;
  readonly #res: ServerResponse;
  readonly #path: string;
  readonly #started = performance.now();
  readonly #time = new Date().toISOString();
  readonly #requestId: string;
  readonly #controller = new AbortController();
  readonly #timer: NodeJS.Timeout | undefined;
  readonly #cleanups: (() => void)[] = [];
  readonly #stopWatchingSocket: () => void;
  #stopBodyWatch: () => void = () => undefined;
  #ended = false;
  /** The handler cut a response that had begun (a failure mid-stream). */
  #cutByServer = false;
  #errorCode: string | undefined;

  constructor(scope: OwnedRequestScope, req: IncomingMessage, res: ServerResponse, path: string) {
    this.#scope = scope;
    this.#req = req;
    this.#res = res;
    this.#path = path;
    this.#requestId = requestIdOf(req);
    res.setHeader('X-Request-Id', this.#requestId);
    scope.inFlight.add(this.#controller);
    const { requestTimeoutMs } = scope.options;
    this.#timer =
      requestTimeoutMs > 0
        ? setTimeout(() => this.#controller.abort(new RequestAbortedError('timeout')), requestTimeoutMs)
        : undefined;
    this.#timer?.unref();
    res.once('close', this.#end);
    const socket = req.socket as Socket | null;
    this.#stopWatchingSocket = socket ? onSocketClose(socket, this.#end) : () => undefined;
  }

  /**
   * Runs the work. The answer comes when the work settles or the signal aborts, whichever is first: a timeout must
   * answer even while the work waits on something that does not watch the signal (a stalled body, the host's
   * authorize()).
   */
  run(work: OwnedWork): Promise<void> {
    const { signal } = this.#controller;
    const { aborted, stop } = rejectionOnAbort(signal);
    this.#cleanups.push(stop);
    // `client` is filled in by authentication, before any route runs.
    const done = work(
      { req: this.#req, res: this.#res, options: this.#scope.options, requestId: this.#requestId, signal, client: '' },
      { onEnd: (cleanup) => this.#onEnd(cleanup), watchBody: () => this.#watchBody() },
    );
    // Whichever loses the race settles unobserved.
    aborted.catch(() => undefined);
    done.catch(() => undefined);
    return Promise.race([done, aborted]);
  }

  /** The work is done with the body: its deadlines no longer apply. */
  bodyDecided(): void {
    this.#stopBodyWatch();
  }

  fail(error: unknown, handOff: ((error: HttpError) => void) | undefined): void {
    // Decided: a body deadline passing from here on (while a rest is drained) must not answer a second time.
    this.#stopBodyWatch();
    // When the handler aborted the work, the abort is the story, not whatever the aborted call threw.
    const reason: unknown = this.#controller.signal.reason;
    const abortedBy = reason instanceof RequestAbortedError ? reason : undefined;
    const httpError = toHttpError(abortedBy ?? error, this.#scope.options.retryAfterSeconds);
    httpError.requestId = this.#requestId;
    this.#errorCode = httpError.code;
    if (abortedBy?.reason === 'client_closed') return;
    if (this.#res.headersSent) {
      // Mid-stream: the only honest signal left is to cut the response short (pipeline() may have already).
      this.#cutByServer = true;
      this.#res.destroy();
      return;
    }
    answerError(this.#req, this.#res, httpError, {
      handOff,
      abortedByHandler: abortedBy !== undefined,
      drainLimit: this.#scope.drainLimit,
    });
  }

  #onEnd(cleanup: () => void): void {
    if (this.#ended) cleanup();
    else this.#cleanups.push(cleanup);
  }

  #watchBody(): void {
    if (this.#ended || this.#controller.signal.aborted) return;
    this.#stopBodyWatch = watchBodyArrival(this.#req, bodyDeadlines(this.#scope.options), (error) =>
      this.#controller.abort(error),
    );
  }

  /** Ends the request, once: stops its deadlines, cancels work nobody is left to answer, writes the log record. */
  readonly #end = (): void => {
    if (this.#ended) return;
    this.#ended = true;
    clearTimeout(this.#timer);
    this.#res.off('close', this.#end);
    this.#stopWatchingSocket();
    this.#stopBodyWatch();
    const { signal } = this.#controller;
    const unfinished = !this.#res.writableFinished;
    // Aborted by the handler itself (timeout, shutdown): a cut that follows is the server's, not the client's.
    const ownAbort: unknown = signal.aborted ? signal.reason : undefined;
    const cutByUs =
      this.#cutByServer || (ownAbort instanceof RequestAbortedError && ownAbort.reason !== 'client_closed');
    if (cutByUs && this.#errorCode === undefined) {
      this.#errorCode = toHttpError(ownAbort, this.#scope.options.retryAfterSeconds).code;
    }
    // The work stops when nobody is left to answer.
    if (unfinished && !signal.aborted) this.#controller.abort(new RequestAbortedError('client_closed'));
    for (const cleanup of this.#cleanups) cleanup();
    this.#scope.inFlight.delete(this.#controller);
    callLogger(this.#scope.options.onRequest, this.#logEntry(unfinished && !cutByUs));
  };

  #logEntry(clientClosed: boolean): RequestLogEntry {
    const res = this.#res;
    return {
      time: this.#time,
      request_id: this.#requestId,
      method: this.#req.method ?? '',
      path: this.#path,
      status: clientClosed && !res.headersSent ? 499 : res.statusCode,
      duration_ms: Math.round((performance.now() - this.#started) * 1000) / 1000,
      bytes_out: bytesOut(res),
      ...(this.#errorCode === undefined ? {} : { error_code: this.#errorCode }),
      ...(clientClosed ? { client_closed: true } : {}),
    };
  }
}
