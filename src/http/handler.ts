// createSpeechHandler(): the /v1 speech API as one `(req, res, next)` function for Express 4/5, Connect or a bare
// http server. It owns four paths; everything else goes to `next()` untouched (its body unread).
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { availableParallelism } from 'node:os';
import type { Duplex } from 'node:stream';
import type { JobQueue } from '../jobs/types.js';
import { requestSlots } from './admission.js';
import { authenticator } from './auth.js';
import { bodyStillArriving } from './body-watch.js';
import type { HttpError } from './http-error.js';
import { InFlightRequests } from './in-flight.js';
import { type ResolvedHandlerOptions, resolveHandlerOptions, type SpeechHandlerOptions } from './options.js';
import { handleOwnedRequest, type OwnedRequestScope, type OwnedWork } from './owned-request.js';
import { chargeJobs, chargingEngine, type RateLimiter, rateLimiterFor } from './rate-limits.js';
import { realtimeEndpoint, type UpgradeHandler } from './realtime/realtime-upgrade.js';
import type { Route } from './routes/context.js';
import { matchRoute, notFound, routeTemplate } from './routes/table.js';

/** Express's `next`: called with nothing to pass the request on, or with an error. */
export type NextFunction = (error?: unknown) => void;

/**
 * The handler: `app.use(handler)`, `app.use('/speech', handler)` or `http.createServer(handler)`; and the realtime
 * WebSocket endpoint, which needs the server itself: `handler.attach(server)`.
 */
export interface SpeechHandler {
  (req: IncomingMessage, res: ServerResponse, next?: NextFunction): void;
  /**
   * Node's `upgrade` listener for `/v1/realtime` (any path ending so, e.g. `/speech/v1/realtime`): returns true when
   * it took the request, false (leaving the socket alone) for any other path. For a server with its own upgrade
   * listeners, which answer the other paths; otherwise use `attach`, which refuses them.
   */
  upgrade: UpgradeHandler;
  /**
   * Serves `/v1/realtime` on `server` (`app.listen()`'s server with Express): adds an `upgrade` listener. Other
   * upgrade requests are left to the server's other `upgrade` listeners, or answered 404 when it has none.
   */
  attach(server: Server): void;
}

/**
 * Creates the handler of the /v1 speech API: GET /v1/voices, POST /v1/transcriptions, POST /v1/speech and
 * GET /v1/openapi.json (the API's OpenAPI 3.1 document, also shipped as the package's openapi.json), each behind
 * bearer authentication.
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
  /** Realtime sessions open now. */
  readonly realtimeSessions: number;
  /** Ends every realtime session (`shutting_down`, close 1001). */
  closeRealtime(): void;
  /** The queue behind /v1/jobs, when the handler serves jobs. */
  readonly jobs: JobQueue | undefined;
}

/** @internal createSpeechHandler(), with the controls createSpeechServer() uses. */
export function buildSpeechHandler(options: SpeechHandlerOptions): SpeechHandlerControl {
  const resolved = withMetrics(resolveHandlerOptions(options));
  const inFlight = new InFlightRequests();
  if (resolved.metrics) {
    resolved.metrics.watchInFlight(() => inFlight.size);
    if (resolved.jobs) resolved.metrics.watchJobs(resolved.jobs);
  }
  const scope: OwnedRequestScope = {
    options: resolved,
    inFlight,
    // Bodies left unread by an error are drained up to what a request could legitimately carry; past that the
    // connection is cut rather than read for nothing.
    drainLimit: Math.max(resolved.maxFileBytes, resolved.maxJsonBytes),
  };
  const authenticate = authenticator(resolved);
  const takeSlot = requestSlots(resolved);
  const limiter = rateLimiterFor(resolved);
  // Jobs run here charge their owner's audio when they complete (a `voxmill worker` elsewhere charges its own).
  if (limiter && resolved.jobs) chargeJobs(resolved.jobs, limiter);

  const realtime = realtimeEndpoint({
    engine: resolved.speech,
    limits: resolved.realtime,
    openai: resolved.openai,
    authenticate,
    cpuThreads: engineCpuThreads(resolved.speech),
    limiter,
    metrics: resolved.metrics,
    retryAfterSeconds: resolved.retryAfterSeconds,
  });
  const handle = (req: IncomingMessage, res: ServerResponse, next?: NextFunction) => {
    const match = matchRoute(req);
    if (match.kind === 'not_ours' && next) {
      next();
      return;
    }
    const handOff = next && resolved.errors === 'next' ? next : undefined;
    const work =
      match.kind === 'route'
        ? guardedRoute(match.route, match.method, authenticate, takeSlot, limiter)
        : refusal(match.kind === 'not_ours' ? notFound(match.path) : match.error);
    handleOwnedRequest(scope, req, res, handOff, match.path, work);
  };
  const attached = new WeakSet<Server>();
  const handler: SpeechHandler = Object.assign(handle, {
    upgrade: realtime.upgrade,
    attach(server: Server) {
      // Once per server: a second attach would answer every upgrade twice.
      if (attached.has(server)) return;
      attached.add(server);
      server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
        if (realtime.upgrade(req, socket, head) || server.listenerCount('upgrade') > 1) return;
        socket.on('error', () => socket.destroy());
        socket.end('HTTP/1.1 404 Not Found\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
      });
    },
  });

  return {
    handler,
    bodyTimeoutMs: resolved.bodyTimeoutMs,
    get active() {
      return inFlight.size;
    },
    abortAll: () => inFlight.abortAll(),
    get realtimeSessions() {
      return realtime.sessions;
    },
    closeRealtime: () => realtime.closeAll(),
    jobs: resolved.jobs,
    idle: (timeoutMs) => inFlight.idle(timeoutMs),
  };
}

/** The options with the host's `onRequest` and the metrics' request count both fed by each request's record. */
function withMetrics(resolved: ResolvedHandlerOptions): ResolvedHandlerOptions {
  const { metrics, onRequest } = resolved;
  if (!metrics) return resolved;
  return {
    ...resolved,
    onRequest: (entry) => {
      metrics.observeRequest({
        route: routeTemplate(entry.path),
        method: entry.method,
        status: entry.status,
        seconds: entry.duration_ms / 1000,
      });
      onRequest?.(entry);
    },
  };
}

/** The engine's CPU budget in threads (a stand-in engine without one: this machine's cores). */
function engineCpuThreads(engine: object): number {
  const cpu = (engine as { cpu?: { cpuThreads?: unknown } }).cpu;
  return typeof cpu?.cpuThreads === 'number' ? cpu.cpuThreads : availableParallelism();
}

/** A request the handler answers with `error` alone: no authentication, no body read. */
function refusal(error: HttpError): OwnedWork {
  return async () => Promise.reject(error);
}

/**
 * A route behind the steps every routed request takes first: authentication, then a request slot (only
 * authenticated requests take one, so a flood without a key cannot lock clients with one out), then the body
 * deadlines.
 */
function guardedRoute(
  route: Route,
  method: string,
  authenticate: (req: IncomingMessage) => Promise<string>,
  takeSlot: (client: string) => () => void,
  limiter: RateLimiter | undefined,
): OwnedWork {
  return async (ctx, { onEnd, watchBody }) => {
    const client = await authenticate(ctx.req);
    // A request answered meanwhile (timeout, client gone) takes no slot and runs no route.
    ctx.signal.throwIfAborted();
    ctx.client = client;
    onEnd(takeSlot(client));
    if (limiter) {
      // Every POST route works on audio (transcribes, translates, synthesizes or queues a job).
      const fields = await limiter.admit(client, method === 'POST');
      for (const [name, value] of Object.entries(fields)) ctx.res.setHeader(name, value);
      if (limiter.limitsAudio) {
        const charge = (seconds: number) => void limiter.chargeAudio(client, seconds).catch(() => undefined);
        ctx.options = { ...ctx.options, speech: chargingEngine(ctx.options.speech, charge) };
      }
    }
    if (method === 'POST') {
      watchBody();
    } else if (bodyStillArriving(ctx.req)) {
      // A GET never reads its body; Node would read all of it after the answer to keep the connection.
      ctx.res.setHeader('Connection', 'close');
    }
    await route(ctx);
  };
}
