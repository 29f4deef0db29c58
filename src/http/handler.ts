// createSpeechHandler(): the /v1 speech API as one `(req, res, next)` function for Express 4/5, Connect or a bare
// http server. It owns four paths; everything else goes to `next()` untouched (its body unread).
import type { IncomingMessage, ServerResponse } from 'node:http';
import { authenticator } from './auth.js';
import { HttpError, RequestAbortedError, toHttpError } from './http-error.js';
import { type ResolvedHandlerOptions, resolveHandlerOptions, type SpeechHandlerOptions } from './options.js';
import { bytesOut, type RequestLogEntry, requestIdOf } from './request-log.js';
import { sendError } from './respond.js';
import type { Route } from './routes/context.js';
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
  const resolved = resolveHandlerOptions(options);
  const authenticate = authenticator(resolved);
  let inFlight = 0;

  return (req, res, next) => {
    const path = routePath(req.url);
    const methods = ROUTES[path];
    if (!methods) {
      if (next) next();
      else handleOwned(req, res, undefined, () => Promise.reject(notFound(path)));
      return;
    }
    const method = req.method === 'HEAD' && methods.GET ? 'GET' : (req.method ?? '');
    const route = methods[method];
    if (!route) {
      const allow = allowedMethods(methods).join(', ');
      const error = new HttpError(
        405,
        'method_not_allowed',
        `${req.method} is not allowed on ${path}; allowed: ${allow}`,
        {
          headers: { Allow: allow },
        },
      );
      handleOwned(req, res, next, () => Promise.reject(error));
      return;
    }
    if (inFlight >= resolved.maxConcurrentRequests) {
      const error = new HttpError(
        429,
        'too_many_requests',
        `the server is handling its limit of ${resolved.maxConcurrentRequests} requests; retry later`,
        { headers: { 'Retry-After': String(resolved.retryAfterSeconds) } },
      );
      handleOwned(req, res, next, () => Promise.reject(error));
      return;
    }
    inFlight++;
    let counted = true;
    const release = () => {
      if (counted) inFlight--;
      counted = false;
    };
    res.once('close', release);
    handleOwned(req, res, next, async (ctx) => {
      await authenticate(req);
      await route(ctx);
    });
  };

  /** Runs one request the handler owns: id, timeout, disconnect, error response, log record. */
  function handleOwned(
    req: IncomingMessage,
    res: ServerResponse,
    next: NextFunction | undefined,
    run: (ctx: Parameters<Route>[0]) => Promise<void>,
  ): void {
    const started = performance.now();
    const time = new Date().toISOString();
    const requestId = requestIdOf(req);
    res.setHeader('X-Request-Id', requestId);
    const controller = new AbortController();
    const timer =
      resolved.requestTimeoutMs > 0
        ? setTimeout(() => controller.abort(new RequestAbortedError('timeout')), resolved.requestTimeoutMs)
        : undefined;
    timer?.unref();
    let errorCode: string | undefined;
    res.once('close', () => {
      clearTimeout(timer);
      const clientClosed = !res.writableFinished;
      // The work stops when nobody is left to answer.
      if (clientClosed) controller.abort(new RequestAbortedError('client_closed'));
      report(resolved, {
        time,
        request_id: requestId,
        method: req.method ?? '',
        path: routePath(req.url),
        status: clientClosed && !res.headersSent ? 499 : res.statusCode,
        duration_ms: Math.round((performance.now() - started) * 1000) / 1000,
        bytes_out: bytesOut(res),
        ...(errorCode === undefined ? {} : { error_code: errorCode }),
        ...(clientClosed ? { client_closed: true } : {}),
      });
    });
    run({ req, res, options: resolved, requestId, signal: controller.signal }).then(
      () => clearTimeout(timer),
      (error: unknown) => {
        clearTimeout(timer);
        // When the handler aborted the work, the abort is the story, not whatever the aborted call threw.
        const reason: unknown = controller.signal.reason;
        const aborted = reason instanceof RequestAbortedError ? reason : undefined;
        const httpError = toHttpError(aborted ?? error, resolved.retryAfterSeconds);
        httpError.requestId = requestId;
        errorCode = httpError.code;
        if (res.destroyed || aborted?.reason === 'client_closed') return;
        if (res.headersSent) {
          // Mid-stream: the only honest signal left is to cut the response short.
          res.destroy();
          return;
        }
        if (next && resolved.errors === 'next') next(httpError);
        else sendError(res, httpError);
      },
    );
  }
}

function report(options: ResolvedHandlerOptions, entry: RequestLogEntry): void {
  if (!options.onRequest) return;
  try {
    options.onRequest(entry);
  } catch {
    // A logger that throws must not take the request (or the server) down with it.
  }
}
