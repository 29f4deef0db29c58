// createSpeechHandler(): the /v1 speech API as one `(req, res, next)` function for Express 4/5, Connect or a bare
// http server. It owns four paths; everything else goes to `next()` untouched (its body unread).
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { authenticator } from './auth.js';
import { bodyStillArriving, watchBodyArrival } from './body-watch.js';
import { HttpError, RequestAbortedError, toHttpError } from './http-error.js';
import { resolveHandlerOptions, type SpeechHandlerOptions } from './options.js';
import { bytesOut, callLogger, requestIdOf } from './request-log.js';
import { sendError } from './respond.js';
import type { Route, RouteContext } from './routes/context.js';
import { openApiRoute } from './routes/openapi.js';
import { speechRoute } from './routes/speech.js';
import { transcriptionsRoute } from './routes/transcriptions.js';
import { listVoicesRoute } from './routes/voices.js';

/** Express's `next`: called with nothing to pass the request on, or with an error. */
export type NextFunction = (error?: unknown) => void;

/** The handler: `app.use(handler)`, `app.use('/speech', handler)` or `http.createServer(handler)`. */
export type SpeechHandler = (req: IncomingMessage, res: ServerResponse, next?: NextFunction) => void;

const ROUTES: Record<string, Record<string, Route>> = {
  '/v1/voices': { GET: listVoicesRoute },
  '/v1/transcriptions': { POST: transcriptionsRoute },
  '/v1/speech': { POST: speechRoute },
  '/v1/openapi.json': { GET: openApiRoute },
};

/** The methods a path answers; GET paths answer HEAD too. */
function allowedMethods(methods: Record<string, Route>): string[] {
  const names = Object.keys(methods);
  return names.includes('GET') ? [...names, 'HEAD'] : names;
}

/** The route path of a request URL relative to the mount point: no query, one trailing slash ignored. */
function routePath(url: string | undefined): string {
  const path = (url ?? '/').split('?', 1)[0] as string;
  return path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path;
}

function notFound(path: string): HttpError {
  return new HttpError(404, 'not_found', `no route ${path}; this API serves ${Object.keys(ROUTES).join(', ')}`);
}

/**
 * Creates the handler of the speech API (`../spec/speech-api.md`): GET /v1/voices, POST /v1/transcriptions,
 * POST /v1/speech and GET /v1/openapi.json, each behind bearer authentication.
 * @example
 * const speech = createSpeech();
 * app.use(createSpeechHandler({ speech, auth: process.env.API_KEYS.split(',') }));
 * @throws InvalidOptionTypeError / InvalidOptionValueError naming the option, e.g. when `auth` is missing.
 */
export function createSpeechHandler(options: SpeechHandlerOptions): SpeechHandler {
  return buildSpeechHandler(options).handler;
}

/** The handler plus what a server around it needs to shut down: stop every request, and know when all ended. */
export interface SpeechHandlerControl {
  handler: SpeechHandler;
  /** The resolved `limits.bodyTimeoutMs`, which the server's own receive deadline must leave room for. */
  readonly bodyTimeoutMs: number;
  /** Requests in progress. */
  readonly active: number;
  /**
   * Aborts every request in progress as the server shuts down: their work is cancelled, those not yet answered get
   * 503 `shutting_down`, streams are cut.
   */
  abortAll(): void;
  /** Resolves when no request is in progress, or after `timeoutMs`. */
  idle(timeoutMs: number): Promise<void>;
}

/** @internal createSpeechHandler(), with the controls createSpeechServer() uses. */
export function buildSpeechHandler(options: SpeechHandlerOptions): SpeechHandlerControl {
  const resolved = resolveHandlerOptions(options);
  const running = new Set<AbortController>();
  const idleWaiters = new Set<() => void>();
  const requestEnded = () => {
    if (running.size > 0) return;
    for (const wake of [...idleWaiters]) wake();
  };
  const authenticate = authenticator(resolved);
  let inFlight = 0;
  // Requests in progress per client (API key digest, token digest or address); absent means none.
  const perClient = new Map<string, number>();
  // Bodies left unread by an error are drained up to what a request could legitimately carry; past that the
  // connection is cut rather than read for nothing.
  const drainLimit = Math.max(resolved.maxFileBytes, resolved.maxJsonBytes);

  const handler: SpeechHandler = (req, res, next) => {
    const path = routePath(req.url);
    const methods = Object.hasOwn(ROUTES, path) ? ROUTES[path] : undefined;
    if (!methods) {
      if (next) next();
      else handleOwned(req, res, undefined, path, async () => Promise.reject(notFound(path)));
      return;
    }
    const method = req.method === 'HEAD' && methods.GET ? 'GET' : (req.method ?? '');
    const route = Object.hasOwn(methods, method) ? methods[method] : undefined;
    if (!route) {
      const allow = allowedMethods(methods).join(', ');
      const message = `${req.method} is not allowed on ${path}; allowed: ${allow}`;
      const error = new HttpError(405, 'method_not_allowed', message, { headers: { Allow: allow } });
      handleOwned(req, res, next, path, async () => Promise.reject(error));
      return;
    }
    handleOwned(req, res, next, path, async (ctx, { onEnd, watchBody }) => {
      const client = await authenticate(req);
      // A request answered meanwhile (timeout, client gone) takes no slot and runs no route.
      ctx.signal.throwIfAborted();
      // Only authenticated requests take a slot, so a flood without a key cannot lock clients with one out.
      const retryAfter = { 'Retry-After': String(resolved.retryAfterSeconds) };
      if (inFlight >= resolved.maxConcurrentRequests) {
        throw new HttpError(
          429,
          'too_many_requests',
          `the server is handling its limit of ${resolved.maxConcurrentRequests} requests; retry later`,
          { headers: retryAfter },
        );
      }
      // Nor can one client, however slow its bodies, hold every slot.
      const ownRequests = perClient.get(client) ?? 0;
      if (ownRequests >= resolved.maxConcurrentRequestsPerClient) {
        throw new HttpError(
          429,
          'client_request_limit',
          `this client already has ${ownRequests} requests in progress, its limit; retry when one has ended`,
          { headers: retryAfter },
        );
      }
      inFlight++;
      perClient.set(client, ownRequests + 1);
      onEnd(() => {
        inFlight--;
        const left = (perClient.get(client) ?? 1) - 1;
        if (left > 0) perClient.set(client, left);
        else perClient.delete(client);
      });
      if (method === 'POST') {
        watchBody();
      } else if (bodyStillArriving(req)) {
        // A GET never reads its body; Node would read all of it after the answer to keep the connection.
        res.setHeader('Connection', 'close');
      }
      await route(ctx);
    });
  };

  const control: SpeechHandlerControl = {
    handler,
    bodyTimeoutMs: resolved.bodyTimeoutMs,
    get active() {
      return running.size;
    },
    abortAll() {
      for (const controller of [...running]) controller.abort(new RequestAbortedError('shutdown'));
    },
    idle(timeoutMs) {
      if (running.size === 0) return Promise.resolve();
      return new Promise((resolve) => {
        const wake = () => {
          clearTimeout(timer);
          idleWaiters.delete(wake);
          resolve();
        };
        const timer = setTimeout(wake, timeoutMs);
        idleWaiters.add(wake);
      });
    },
  };
  return control;

  /**
   * Runs one request the handler owns: its id, timeout and disconnect, the error response, the log record. The
   * request ends when its response closes or its socket does (a pipelined request queued behind another never
   * sees its response close when the connection dies).
   */
  function handleOwned(
    req: IncomingMessage,
    res: ServerResponse,
    next: NextFunction | undefined,
    path: string,
    run: (ctx: RouteContext, control: OwnedRequestControl) => Promise<void>,
  ): void {
    const started = performance.now();
    const time = new Date().toISOString();
    const requestId = requestIdOf(req);
    res.setHeader('X-Request-Id', requestId);
    const controller = new AbortController();
    running.add(controller);
    const { signal } = controller;
    const timer =
      resolved.requestTimeoutMs > 0
        ? setTimeout(() => controller.abort(new RequestAbortedError('timeout')), resolved.requestTimeoutMs)
        : undefined;
    timer?.unref();
    const cleanups: (() => void)[] = [];
    let stopBodyWatch: () => void = () => undefined;
    let ended = false;
    let cutByServer = false;
    let errorCode: string | undefined;
    const socket = req.socket as Socket | null;
    const end = () => {
      if (ended) return;
      ended = true;
      clearTimeout(timer);
      res.off('close', end);
      stopWatchingSocket();
      stopBodyWatch();
      const unfinished = !res.writableFinished;
      // Aborted by the handler itself (timeout, shutdown): a cut that follows is the server's, not the client's.
      const ownAbort: unknown = signal.aborted ? signal.reason : undefined;
      const cutByUs = cutByServer || (ownAbort instanceof RequestAbortedError && ownAbort.reason !== 'client_closed');
      if (cutByUs && errorCode === undefined) errorCode = toHttpError(ownAbort, resolved.retryAfterSeconds).code;
      // The work stops when nobody is left to answer.
      if (unfinished && !signal.aborted) controller.abort(new RequestAbortedError('client_closed'));
      for (const cleanup of cleanups) cleanup();
      running.delete(controller);
      const clientClosed = unfinished && !cutByUs;
      callLogger(resolved.onRequest, {
        time,
        request_id: requestId,
        method: req.method ?? '',
        path,
        status: clientClosed && !res.headersSent ? 499 : res.statusCode,
        duration_ms: Math.round((performance.now() - started) * 1000) / 1000,
        bytes_out: bytesOut(res),
        ...(errorCode === undefined ? {} : { error_code: errorCode }),
        ...(clientClosed ? { client_closed: true } : {}),
      });
      requestEnded();
    };
    res.once('close', end);
    const stopWatchingSocket = socket ? onSocketClose(socket, end) : () => undefined;

    // The answer comes when the work settles or the signal aborts, whichever is first: a timeout must answer even
    // while the work waits on something that does not watch the signal (a stalled body, the host's authorize()).
    const aborted = new Promise<never>((_resolve, reject) => {
      const onAbort = () => reject(signal.reason);
      if (signal.aborted) onAbort();
      else signal.addEventListener('abort', onAbort, { once: true });
      cleanups.push(() => signal.removeEventListener('abort', onAbort));
    });
    const work = run(
      { req, res, options: resolved, requestId, signal },
      {
        onEnd: (cleanup) => {
          if (ended) cleanup();
          else cleanups.push(cleanup);
        },
        watchBody: () => {
          if (ended || signal.aborted) return;
          stopBodyWatch = watchBodyArrival(
            req,
            {
              idleMs: resolved.bodyIdleTimeoutMs,
              totalMs: resolved.bodyTimeoutMs,
              minBytesPerSecond: resolved.minBodyBytesPerSecond,
              rateGraceMs: resolved.bodyRateGraceMs,
            },
            (error) => controller.abort(error),
          );
        },
      },
    );
    // Whichever loses the race settles unobserved.
    aborted.catch(() => undefined);
    work.catch(() => undefined);
    Promise.race([work, aborted]).then(
      () => stopBodyWatch(),
      (error: unknown) => {
        // Decided: a body deadline passing from here on (while a rest is drained) must not answer a second time.
        stopBodyWatch();
        // When the handler aborted the work, the abort is the story, not whatever the aborted call threw.
        const reason: unknown = signal.reason;
        const abortedBy = reason instanceof RequestAbortedError ? reason : undefined;
        const httpError = toHttpError(abortedBy ?? error, resolved.retryAfterSeconds);
        httpError.requestId = requestId;
        errorCode = httpError.code;
        if (abortedBy?.reason === 'client_closed') return;
        if (res.headersSent) {
          // Mid-stream: the only honest signal left is to cut the response short (pipeline() may have already).
          cutByServer = true;
          res.destroy();
          return;
        }
        if (res.destroyed) return;
        const respond = () => {
          if (res.destroyed || res.headersSent) return;
          // Express's final handler waits for an unfinished body before answering; one that stalled never ends.
          if (next && resolved.errors === 'next' && req.complete) next(httpError);
          else sendError(res, httpError);
        };
        if (abortedBy) {
          // The body may be what stalled (for body_timeout it is): answer now, and let Node close the connection
          // after the answer rather than wait for the rest.
          if (!req.complete) res.setHeader('Connection', 'close');
          respond();
          return;
        }
        // Answering while the client still sends can deadlock both sides' buffers: take the rest first.
        void discardUnreadBody(req, res, drainLimit).then(respond);
      },
    );
  }
}

/** What handleOwned() offers the function that runs a request. */
interface OwnedRequestControl {
  /** Runs `cleanup` when the request ends (at once when it already has). */
  onEnd(cleanup: () => void): void;
  /**
   * Starts the body deadlines (`limits.bodyIdleTimeoutMs`, `limits.bodyTimeoutMs`, `limits.minBodyBytesPerSecond`):
   * past one, 408 and a close.
   */
  watchBody(): void;
}

/** The requests in progress on each connection; one 'close' listener per socket however many are pipelined. */
const socketWatchers = new WeakMap<Socket, Set<() => void>>();

/** Calls `onClose` when the socket closes; returns the function that stops watching. */
function onSocketClose(socket: Socket, onClose: () => void): () => void {
  let watchers = socketWatchers.get(socket);
  if (!watchers) {
    const set = new Set<() => void>();
    watchers = set;
    socketWatchers.set(socket, set);
    socket.once('close', () => {
      socketWatchers.delete(socket);
      for (const watcher of [...set]) watcher();
    });
  }
  watchers.add(onClose);
  return () => watchers.delete(onClose);
}

/** How long an unread body may take to arrive once an error has been decided, before the connection is given up. */
const DRAIN_TIMEOUT_MS = 5000;

/**
 * Reads and drops what is left of a request body an error left partly read, so the answer can follow and the
 * connection carry the next request. When more than `limit` bytes remain, or the rest does not arrive in time, it
 * stops waiting and marks the response `Connection: close`: Node then closes the connection after the answer. A
 * body not read at all (401, 429, 415, a 413 by Content-Length) gets `Connection: close` at once: Node would
 * otherwise read it to its end after the answer, however long, for a client that was refused.
 */
function discardUnreadBody(req: IncomingMessage, res: ServerResponse, limit: number): Promise<void> {
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
