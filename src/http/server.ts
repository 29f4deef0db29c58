// The standalone server behind `voxmill serve`: the handler on a bare http server, health and readiness probes,
// JSON-lines logs, and a graceful shutdown that finishes in-flight requests.
import { readFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createTlsServer, type Server as TlsServer } from 'node:https';
import { type AddressInfo, Server as NetServer } from 'node:net';
import type { Duplex } from 'node:stream';
import { setTimeout as delay } from 'node:timers/promises';
import { createSecureContext } from 'node:tls';
import { InvalidOptionTypeError, InvalidOptionValueError } from '../errors.js';
import { createSpeechMetrics, type SpeechMetrics } from '../metrics/speech-metrics.js';
import type { Speech } from '../speech.js';
import { booleanOption, integerOption, objectOption, rejectUnknownKeys, stringOption } from '../util/validate.js';
import { buildSpeechHandler } from './handler.js';
import { HttpError } from './http-error.js';
import { createOpsHandler, getOrHead, OPS_PATHS, type OpsHandlerOptions } from './ops-handler.js';
import type { SpeechHandlerOptions } from './options.js';
import type { RequestLogEntry } from './request-log.js';
import { callLogger, requestIdOf } from './request-log.js';
import { sendError } from './respond.js';
import { routePath } from './routes/table.js';

/** Options of {@link createSpeechServer}: the handler's, with the full engine, plus the server's own. */
export interface SpeechServerOptions extends Omit<SpeechHandlerOptions, 'speech' | 'onRequest' | 'metrics'> {
  speech: Speech;
  /** Receives one JSON-serialisable record per event (`listening`, `request`, `shutdown`, ...). Default: none. */
  log?: (record: Record<string, unknown>) => void;
  /** Longest wait for in-flight requests on shutdown before their connections are cut, in ms. Default 30000. */
  shutdownTimeoutMs?: number;
  /**
   * Time a client has to send a request's headers, in ms; past it Node answers a bare 408 and closes the
   * connection (checked every second, so it fires within a second of it). 0 = no limit. Default 10000. Node's
   * whole-request receive deadline (`server.requestTimeout`) follows from it: this plus `limits.bodyTimeoutMs`
   * plus 5 s, so the handler's own JSON 408 `body_timeout` comes first; none when `limits.bodyTimeoutMs` is 0.
   */
  headersTimeoutMs?: number;
  /** Serves the browser demo (demo/index.html) at `GET /` and `/demo`, without authentication. Default true. */
  demo?: boolean;
  /**
   * `GET /metrics` in Prometheus' format: the metrics to serve and count requests into (`createSpeechMetrics()`),
   * or false for none. Default: metrics of this server and its engine.
   */
  metrics?: SpeechMetrics | false;
  /** Who may read `/metrics` (see {@link OpsHandlerOptions.metricsAuth}). Default false: anyone. */
  metricsAuth?: OpsHandlerOptions['metricsAuth'];
  /**
   * Serve HTTPS (and the realtime WebSocket as `wss:`, which OpenAI's Node SDK always dials): the certificate chain
   * and its private key, PEM text as Node's `tls.createSecureContext` takes them. Default: plain HTTP.
   */
  tls?: SpeechServerTls;
}

/** The certificate of an HTTPS {@link SpeechServer}. */
export interface SpeechServerTls {
  /** PEM certificate chain (the server's certificate first). */
  cert: string | Buffer;
  /** PEM private key of the certificate. */
  key: string | Buffer;
  /** Passphrase of an encrypted key. */
  passphrase?: string;
}

const TLS_KEYS = ['cert', 'key', 'passphrase'] as const;

function pemOption(param: string, value: unknown): string | Buffer {
  if ((typeof value !== 'string' && !Buffer.isBuffer(value)) || value.length === 0) {
    throw new InvalidOptionTypeError(param, 'PEM text (a non-empty string or Buffer)', value);
  }
  return value;
}

/** Checks `tls` (undefined: plain HTTP). */
function tlsOption(value: unknown): SpeechServerTls | undefined {
  if (value === undefined) return undefined;
  const raw = objectOption('tls', value);
  rejectUnknownKeys('tls', raw, TLS_KEYS);
  const tls: SpeechServerTls = { cert: pemOption('tls.cert', raw.cert), key: pemOption('tls.key', raw.key) };
  const passphrase = stringOption('tls.passphrase', raw.passphrase);
  if (passphrase !== undefined) tls.passphrase = passphrase;
  // Checked before anything else is built (metrics watching the engine, the handler): a certificate or key Node
  // cannot use is a typed error naming `tls` and OpenSSL's reason.
  try {
    createSecureContext(tls);
  } catch (error) {
    throw new InvalidOptionValueError(
      'tls',
      `a PEM certificate and its private key that Node's TLS accepts (${(error as Error).message})`,
      '[certificate]',
    );
  }
  return tls;
}

/** A running (or ready to run) standalone server. */
export interface SpeechServer {
  /** The Node server: `https.Server` with `tls`, else `http.Server`. */
  readonly server: Server | TlsServer;
  /** `https` with `tls`, else `http`. */
  readonly protocol: 'http' | 'https';
  /** Starts listening; resolves to the address (port 0 picks a free port). */
  listen(port: number, host: string): Promise<AddressInfo>;
  /**
   * Stops accepting connections and lets in-flight requests finish. Past `shutdownTimeoutMs` it cancels what is
   * still running (unanswered requests get 503 `shutting_down`, streams are cut, whisper stops at its next
   * checkpoint) and closes the connections. Then closes the engine. Resolves true when everything finished in
   * time, false when work had to be cancelled. Idempotent.
   */
  shutdown(): Promise<boolean>;
  /** Cancels every request in progress now: their work stops at its next checkpoint. */
  abortAll(): void;
  /**
   * Stops now (a second signal): no new connections, every request in progress cancelled and answered 503
   * `shutting_down` (a stream already started is cut), and for a second any request arriving on a kept-alive
   * connection answered the same; then every connection closed. Does not close the engine; the caller exits.
   */
  forceStop(): Promise<void>;
}

/** How long answers to cancelled requests get to go out before their connections are closed. */
const CANCEL_GRACE_MS = 1000;
/** How long shutdown waits for cut requests to finish their bookkeeping (log records) before closing the engine. */
const SETTLE_MS = 2000;
export const DEFAULT_HEADERS_TIMEOUT_MS = 10_000;
/** Room past headers and body deadlines before Node's receive deadline: authentication, the check interval. */
const RECEIVE_SLACK_MS = 5000;

/** The demo page: demo/index.html at the package root (from dist/http/ or src/http/), read once, when first asked. */
const DEMO_PAGE = new URL('../../demo/index.html', import.meta.url);
let demoPage: Promise<Buffer> | undefined;
/** The page's inline script and style, fetches and WebSockets to its own server, its audio worklet from a blob. */
const DEMO_HEADERS = {
  'Content-Type': 'text/html; charset=utf-8',
  'Content-Security-Policy':
    "default-src 'none'; script-src 'self' 'unsafe-inline' blob:; style-src 'unsafe-inline'; " +
    "connect-src 'self' ws: wss:; media-src blob:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  'Cache-Control': 'no-store',
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
};

/**
 * Node's receive deadlines for the server. Node checks them on an interval (30 s by default, which let slow headers
 * run to 81 s under a 60 s limit); the interval here is a tenth of the headers deadline, at most a second.
 */
function receiveDeadlines(headersTimeoutMs: number, bodyTimeoutMs: number) {
  const requestTimeout = bodyTimeoutMs > 0 ? headersTimeoutMs + bodyTimeoutMs + RECEIVE_SLACK_MS : 0;
  const shortest = headersTimeoutMs > 0 ? headersTimeoutMs : requestTimeout;
  const connectionsCheckingInterval = shortest > 0 ? Math.min(1000, Math.max(50, Math.floor(shortest / 10))) : 30_000;
  return { headersTimeout: headersTimeoutMs, requestTimeout, connectionsCheckingInterval };
}

/**
 * Creates the standalone server: `/healthz` (liveness), `/readyz` (readiness: 503 while nothing is installed, while
 * the job queue's Redis does not answer or while shutting down), `/metrics` (Prometheus) and the browser demo at `/` (unless `demo: false`) without authentication, the /v1 API behind
 * it, and JSON 404s for everything else.
 */
export function createSpeechServer(options: SpeechServerOptions): SpeechServer {
  const {
    speech,
    log,
    shutdownTimeoutMs: rawTimeout,
    headersTimeoutMs: rawHeaders,
    demo,
    metrics: rawMetrics,
    metricsAuth,
    tls: rawTls,
    ...handlerOptions
  } = options;
  const tls = tlsOption(rawTls);
  const serveDemo = booleanOption('demo', demo) ?? true;
  const shutdownTimeoutMs = integerOption('shutdownTimeoutMs', rawTimeout, 0, 2 ** 31 - 1) ?? 30_000;
  const headersTimeoutMs = integerOption('headersTimeoutMs', rawHeaders, 0, 2 ** 31 - 1) ?? DEFAULT_HEADERS_TIMEOUT_MS;
  const safeLog = (record: Record<string, unknown>) => callLogger(log, record);
  let metrics: SpeechMetrics | undefined;
  if (rawMetrics === undefined) {
    metrics = createSpeechMetrics();
    metrics.watchEngine(speech);
  } else if (rawMetrics !== false) {
    metrics = rawMetrics;
  }
  const control = buildSpeechHandler({
    ...handlerOptions,
    speech,
    ...(metrics ? { metrics } : {}),
    ...(log ? { onRequest: (entry: RequestLogEntry) => safeLog({ event: 'request', ...entry }) } : {}),
  });
  const { handler } = control;
  let draining = false;
  /** forceStop() was called: new requests are answered 503 at once. */
  let forced = false;
  const ops = createOpsHandler({
    speech,
    ...(control.jobs ? { jobs: control.jobs } : {}),
    ...(metrics ? { metrics } : {}),
    ...(metricsAuth === undefined ? {} : { metricsAuth }),
    draining: () => draining,
  });
  let shutdownPromise: Promise<boolean> | undefined;
  /** shutdown()'s closing of connections as they go idle (forceStop ends it: its grace keeps them for answers). */
  let sweeper: NodeJS.Timeout | undefined;

  const listener = (req: IncomingMessage, res: ServerResponse) => {
    // While draining, every response tells its client to reconnect elsewhere.
    if (draining) res.setHeader('Connection', 'close');
    // After forceStop, a request arriving on a kept-alive connection is answered, not cut with the connection.
    if (forced && !OPS_PATHS.has(routePath(req.url))) {
      const error = new HttpError(503, 'shutting_down', 'the server is shutting down; retry on another instance', {
        headers: { 'Retry-After': '1' },
      });
      error.requestId = requestIdOf(req);
      sendError(res, error);
      return;
    }
    const path = routePath(req.url);
    if (OPS_PATHS.has(path)) {
      ops(req, res);
      return;
    }
    if (serveDemo && (path === '/' || path === '/demo')) {
      page(req, res, path);
      return;
    }
    handler(req, res);
  };
  const deadlines = receiveDeadlines(headersTimeoutMs, control.bodyTimeoutMs);
  const server = tls ? createTlsServer({ ...deadlines, ...tls }, listener) : createServer(deadlines, listener);

  // The realtime endpoint: WebSocket upgrades to /v1/realtime; none while draining, 404 for any other path.
  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    if (!draining && handler.upgrade(req, socket, head)) return;
    socket.on('error', () => socket.destroy());
    socket.end(
      `HTTP/1.1 ${draining ? '503 Service Unavailable' : '404 Not Found'}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`,
    );
  });

  /** The browser demo: a static page with no secret in it (it asks for the key), so without authentication. */
  function page(req: IncomingMessage, res: ServerResponse, path: string): void {
    const requestId = requestIdOf(req);
    if (!getOrHead(req, res, path, requestId)) return;
    demoPage ??= readFile(DEMO_PAGE);
    demoPage.then(
      (html) => {
        res.writeHead(200, { ...DEMO_HEADERS, 'Content-Length': html.length });
        res.end(req.method === 'HEAD' ? undefined : html);
      },
      (cause: unknown) => {
        const error = new HttpError(500, 'demo_unavailable', `the demo page: ${(cause as Error).message}`, { cause });
        error.requestId = requestId;
        sendError(res, error);
      },
    );
  }

  return {
    server,
    protocol: tls ? 'https' : 'http',
    listen(port, host) {
      return new Promise((resolve, reject) => {
        server.once('error', reject);
        server.listen(port, host, () => {
          server.off('error', reject);
          // Errors after listen (EMFILE while accepting, ...) are reported, not thrown: the process serves on.
          server.on('error', (error: Error) =>
            safeLog({ level: 'error', event: 'server_error', message: error.message }),
          );
          resolve(server.address() as AddressInfo);
        });
      });
    },
    shutdown() {
      shutdownPromise ??= (async () => {
        draining = true;
        const closed = new Promise<void>((resolve) => server.close(() => resolve()));
        // Realtime sessions have no natural end to wait for: they are told the server is going away.
        control.closeRealtime();
        // Keep-alive connections become idle as their last response ends; close them as they do.
        server.closeIdleConnections();
        sweeper = setInterval(() => server.closeIdleConnections(), 50);
        let timer: NodeJS.Timeout | undefined;
        const inTime = await Promise.race([
          closed.then(() => true),
          new Promise<boolean>((resolve) => {
            timer = setTimeout(() => resolve(false), shutdownTimeoutMs);
          }),
        ]);
        clearTimeout(timer);
        if (!inTime) {
          // Past the grace period: cancel the work, let the 503s go out, then cut what is left.
          control.abortAll();
          await Promise.race([closed, delay(CANCEL_GRACE_MS)]);
          server.closeAllConnections();
          await closed;
        }
        clearInterval(sweeper);
        // Every request has ended (its work cancelled or done, its record logged) before the engine goes.
        await control.idle(SETTLE_MS);
        // Jobs running here finish (or are handed back) within the queue's drainTimeoutMs.
        await control.jobs?.close();
        await speech.close();
        return inTime;
      })();
      return shutdownPromise;
    },
    abortAll() {
      control.abortAll();
    },
    async forceStop() {
      draining = true;
      forced = true;
      // No new connections, but kept-alive ones stay open through the grace (http.Server.close would cut the idle
      // ones at once): a request that arrives on one is answered 503 shutting_down (its connection then closes)
      // instead of finding the connection reset.
      NetServer.prototype.close.call(server);
      clearInterval(sweeper);
      control.closeRealtime();
      control.abortAll();
      // The grace: the cancelled requests' answers go out, and late requests on kept-alive connections are answered.
      await delay(CANCEL_GRACE_MS);
      server.closeAllConnections();
      // http.Server's own close (not called above) also stops its connection-checking timer.
      server.close();
    },
  };
}
