// The operator's endpoints beside the API: liveness (`/healthz`), readiness (`/readyz`: models or voices to serve,
// Redis reachable when jobs use it, not draining) and Prometheus metrics (`/metrics`). The standalone server mounts
// them at its root; a host app that mounts only the speech handler mounts these with createOpsHandler().
import type { IncomingMessage, ServerResponse } from 'node:http';
import { InvalidOptionTypeError } from '../errors.js';
import type { JobQueue } from '../jobs/types.js';
import type { SpeechMetrics } from '../metrics/speech-metrics.js';
import type { Speech } from '../speech.js';
import { type ApiKey, type AuthorizeFunction, authenticator } from './auth.js';
import { bodyStillArriving } from './body-watch.js';
import type { NextFunction } from './handler.js';
import { HttpError, toHttpError } from './http-error.js';
import { apiKeyEntries } from './options.js';
import { requestIdOf } from './request-log.js';
import { sendError, sendJson } from './respond.js';
import { routePath } from './routes/table.js';

/** What readiness reads of the engine. */
export type ReadinessEngine = Pick<Speech, 'status' | 'listVoices' | 'ttsStatus'>;

/** Options of {@link createOpsHandler}. */
export interface OpsHandlerOptions {
  speech: ReadinessEngine;
  /** A job queue: `/readyz` fails while its store (Redis) does not answer. */
  jobs?: Pick<JobQueue, 'ping' | 'backend'>;
  /** Serves `GET /metrics` from these. Without them `/metrics` is not served. */
  metrics?: SpeechMetrics;
  /**
   * Who may read `/metrics`: `false` (anyone: scrapers on a private network; the default), API keys (sent as
   * `Authorization: Bearer <key>`, Prometheus' `authorization` setting), or an authorize(token, req) function.
   */
  metricsAuth?: readonly (string | ApiKey)[] | AuthorizeFunction | false;
  /** @internal The standalone server's draining state: `/readyz` answers 503 `draining` while true. */
  draining?: () => boolean;
}

/** The probes' and metrics' handler: `(req, res, next)`, answering `/healthz`, `/readyz` and `/metrics` only. */
export type OpsHandler = (req: IncomingMessage, res: ServerResponse, next?: NextFunction) => void;

/** The paths this handler answers. */
export const OPS_PATHS = new Set(['/healthz', '/readyz', '/metrics']);

async function readiness(options: OpsHandlerOptions): Promise<{ ready: boolean; body: object }> {
  if (options.draining?.()) return { ready: false, body: { status: 'draining' } };
  const { speech, jobs } = options;
  const stt = speech.status().map(({ id, installed, loaded, active, pending, info }) => ({
    id,
    installed,
    loaded,
    // The device a loaded model runs on (`CPU`, `CUDA0`, ...): a GPU build that found no GPU shows `CPU` here.
    device: loaded ? (info?.device ?? null) : null,
    active,
    pending,
  }));
  const voices = (await speech.listVoices()).length;
  let queue: { backend: string; ok: boolean; error?: string } | undefined;
  if (jobs) {
    try {
      await jobs.ping();
      queue = { backend: jobs.backend, ok: true };
    } catch (error) {
      queue = { backend: jobs.backend, ok: false, error: (error as Error).message };
    }
  }
  // Ready when at least one of the API's operations can be served, and the job store answers.
  const servable = stt.some((model) => model.installed) || voices > 0;
  const ready = servable && queue?.ok !== false;
  const status = ready ? 'ready' : !servable ? 'no_models' : 'queue_unavailable';
  return { ready, body: { status, stt, voices, tts: speech.ttsStatus(), ...(queue ? { jobs: queue } : {}) } };
}

/** Whether the request is a GET or HEAD; else it is answered 405. Probes read no body. */
export function getOrHead(req: IncomingMessage, res: ServerResponse, path: string, requestId: string): boolean {
  res.setHeader('X-Request-Id', requestId);
  // Node would read a body to its end after the answer to keep the connection.
  if (bodyStillArriving(req)) res.setHeader('Connection', 'close');
  if (req.method === 'GET' || req.method === 'HEAD') return true;
  const error = new HttpError(
    405,
    'method_not_allowed',
    `${req.method} is not allowed on ${path}; allowed: GET, HEAD`,
    {
      headers: { Allow: 'GET, HEAD' },
    },
  );
  error.requestId = requestId;
  sendError(res, error);
  return false;
}

/**
 * Creates the handler of `/healthz`, `/readyz` and `/metrics` for a host app that mounts the speech handler itself.
 * Other paths go to `next()` (or get 404 without one).
 * @example
 * const metrics = createSpeechMetrics();
 * metrics.watchEngine(speech);
 * app.use(createOpsHandler({ speech, metrics }));
 * app.use(createSpeechHandler({ speech, auth: keys, metrics }));
 */
export function createOpsHandler(options: OpsHandlerOptions): OpsHandler {
  const metricsAuth = options.metricsAuth ?? false;
  if (metricsAuth !== false && typeof metricsAuth !== 'function' && !Array.isArray(metricsAuth)) {
    throw new InvalidOptionTypeError(
      'metricsAuth',
      'false, an array of API keys or an authorize function',
      metricsAuth,
    );
  }
  const authenticate = authenticator(
    metricsAuth === false
      ? { keys: undefined, authorize: undefined }
      : typeof metricsAuth === 'function'
        ? { keys: undefined, authorize: metricsAuth }
        : { keys: apiKeyEntries('metricsAuth', metricsAuth), authorize: undefined },
  );
  const fail = (res: ServerResponse, requestId: string, cause: unknown, code: string) => {
    const error =
      cause instanceof HttpError ? cause : new HttpError(503, code, `${(cause as Error).message}`, { cause });
    error.requestId = requestId;
    sendError(res, error);
  };
  return (req, res, next) => {
    const path = routePath(req.url);
    if (!OPS_PATHS.has(path) || (path === '/metrics' && !options.metrics)) {
      if (next) next();
      else sendError(res, new HttpError(404, 'not_found', `no route ${path}`));
      return;
    }
    const requestId = requestIdOf(req);
    if (!getOrHead(req, res, path, requestId)) return;
    if (path === '/healthz') {
      sendJson(res, 200, { status: 'ok' });
    } else if (path === '/readyz') {
      readiness(options).then(
        ({ ready, body }) => sendJson(res, ready ? 200 : 503, body),
        (cause: unknown) => fail(res, requestId, cause, 'not_ready'),
      );
    } else {
      const metrics = options.metrics as SpeechMetrics;
      authenticate(req)
        .then(() => metrics.render())
        .then(
          (text) => {
            res.writeHead(200, { 'Content-Type': metrics.contentType, 'Cache-Control': 'no-store' });
            res.end(req.method === 'HEAD' ? undefined : text);
          },
          (cause: unknown) => fail(res, requestId, toHttpError(cause, 1), 'metrics_unavailable'),
        );
    }
  };
}
