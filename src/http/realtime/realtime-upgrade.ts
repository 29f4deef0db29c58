// The `/v1/realtime` WebSocket endpoint: the HTTP upgrade authenticated like every /v1 request (the bearer header, or
// for browsers, which cannot set headers, the subprotocol `openai-insecure-api-key.<key>` that OpenAI's clients use,
// or `voxmill-api-key-base64url.<key as base64url>` for a key with characters a subprotocol cannot carry),
// then one RealtimeSession per socket, up to `realtime.maxSessions`.
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type * as Ws from 'ws';
import type { WebSocket } from 'ws';
import type { RealtimeRefusalReason, SpeechMetrics } from '../../metrics/speech-metrics.js';
import { lazyModule } from '../../util/lazy-module.js';
import { HttpError, toHttpError } from '../http-error.js';
import type { ResolvedOpenAiOptions } from '../openai/openai-options.js';
import type { RateLimiter } from '../rate-limits.js';
import type { SessionDialect } from './realtime-config.js';
import { RealtimeLoad } from './realtime-load.js';
import type { ResolvedRealtimeOptions } from './realtime-options.js';
import { type RealtimeEngine, RealtimeSession } from './realtime-session.js';

// ws loads when the realtime endpoint is mounted, not with the library (about 17 ms to import).
const ws = lazyModule<typeof Ws>('ws');

/** Node's `upgrade` event handler: answers the realtime path and returns true, or returns false for any other. */
export type UpgradeHandler = (req: IncomingMessage, socket: Duplex, head: Buffer) => boolean;

export interface RealtimeEndpoint {
  upgrade: UpgradeHandler;
  /** Sessions open now. */
  readonly sessions: number;
  /** Ends every session (an `error` event `shutting_down`, then close 1001), and turns away those still connecting. */
  closeAll(): void;
}

/** The subprotocol a browser must offer (with its key in a second one); the server answers with it. */
const PROTOCOL = 'realtime';
const KEY_PROTOCOL = 'openai-insecure-api-key.';
/**
 * The same key base64url-encoded: a subprotocol is an HTTP token, which cannot carry a key's `/` or `=` (common in
 * generated, base64 keys); base64url's alphabet fits (voxmill's own, used by its demo page).
 */
const ENCODED_KEY_PROTOCOL = 'voxmill-api-key-base64url.';
const BETA_PROTOCOL = 'openai-beta.realtime-v1';
const PATH_SUFFIX = '/v1/realtime';

export interface RealtimeEndpointParts {
  engine: Partial<RealtimeEngine>;
  limits: ResolvedRealtimeOptions;
  openai: ResolvedOpenAiOptions;
  /**
   * The handler's authentication, resolving to the client's identity; `token` is the subprotocol's key when the
   * request has no header.
   */
  authenticate: (req: IncomingMessage, token?: string) => Promise<string>;
  /** The engine's CPU threads: the capacity estimate before any final is measured. */
  cpuThreads: number;
  /** Per-client rate limits: a session takes a request token and needs audio left; its finals are charged. */
  limiter?: RateLimiter | undefined;
  metrics?: Pick<SpeechMetrics, 'watchRealtime' | 'observeRealtimeRefusal'> | undefined;
  /** `Retry-After` of a refusal, in seconds. */
  retryAfterSeconds: number;
}

/** Upgrade sockets some realtime endpoint took: two handlers attached to one server never both answer one. */
const claimed = new WeakSet<Duplex>();

/** Whether a request URL's path ends in /v1/realtime (any mount prefix); false for a URL that does not parse. */
function isRealtimePath(url: string | undefined): boolean {
  const path = (url ?? '/').split('?', 1)[0] as string;
  return (path.endsWith('/') ? path.slice(0, -1) : path).endsWith(PATH_SUFFIX);
}

/** The key a browser sent as a subprotocol, plain or base64url-encoded; undefined when it sent none. */
function protocolKey(protocols: readonly string[]): string | undefined {
  const plain = protocols.find((p) => p.startsWith(KEY_PROTOCOL));
  if (plain !== undefined) return plain.slice(KEY_PROTOCOL.length);
  const encoded = protocols.find((p) => p.startsWith(ENCODED_KEY_PROTOCOL));
  return encoded === undefined
    ? undefined
    : Buffer.from(encoded.slice(ENCODED_KEY_PROTOCOL.length), 'base64url').toString('utf8');
}

function offeredProtocols(req: IncomingMessage): string[] {
  const header = req.headers['sec-websocket-protocol'];
  return typeof header === 'string' ? header.split(',').map((p) => p.trim()) : [];
}

export function realtimeEndpoint(parts: RealtimeEndpointParts): RealtimeEndpoint {
  const { limits, engine, limiter, metrics } = parts;
  const sessions = new Set<RealtimeSession>();
  const load = new RealtimeLoad(limits, parts.cpuThreads);
  /** Upgrades admitted by capacity whose socket is not open yet: they count against it too. */
  let admitting = 0;
  metrics?.watchRealtime({
    sessions: () => sessions.size,
    capacity: () => (limits.admitByCapacity ? load.capacity().sessions : limits.maxSessions),
  });
  /** Why one more session cannot be served now (capacity or latency), with its metrics reason; undefined if it can. */
  const overCapacity = (): { reason: RealtimeRefusalReason; message: string } | undefined => {
    if (!limits.admitByCapacity) return undefined;
    const message = load.refusal(sessions.size + admitting);
    if (message === undefined) return undefined;
    return { reason: message.includes('maxFinalLatencyMs') ? 'latency' : 'capacity', message };
  };
  /** Sessions open per client identity (its key's digest, or its address without auth). */
  const perClient = new Map<string, number>();
  let opened = 0;
  /** After closeAll(): upgrades still authenticating are turned away. */
  let closing = false;
  const { WebSocketServer } = ws();
  const server = new WebSocketServer({
    noServer: true,
    clientTracking: false,
    perMessageDeflate: false,
    maxPayload: limits.maxMessageBytes,
    // Never echo the key protocol: answer `realtime` when offered, else none.
    handleProtocols: (protocols) => (protocols.has(PROTOCOL) ? PROTOCOL : false),
  });

  const refuse = (socket: Duplex, error: unknown) => {
    const http = toHttpError(error, 1);
    const body = JSON.stringify(http.toJSON());
    const headers = Object.entries({ ...http.headers, 'Content-Type': 'application/json', Connection: 'close' })
      .map(([name, value]) => `${name}: ${value}\r\n`)
      .join('');
    socket.end(
      `HTTP/1.1 ${http.status} ${http.status === 401 ? 'Unauthorized' : 'Error'}\r\n${headers}` +
        `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    );
  };

  /** Tells a client over the socket why it cannot have a session (a browser cannot read an HTTP refusal). */
  const turnAway = (ws: WebSocket, type: string, code: string, message: string, closeCode: number) => {
    ws.on('error', () => undefined);
    ws.send(
      JSON.stringify({
        event_id: 'event_1',
        type: 'error',
        error: { type, code, message, param: null, event_id: null },
      }),
    );
    ws.close(closeCode, code);
  };

  const open = (ws: WebSocket, client: string, dialect: SessionDialect, admitted: boolean) => {
    if (closing) return turnAway(ws, 'unavailable_error', 'shutting_down', 'the server is shutting down', 1001);
    if (typeof engine.createTranscriber !== 'function' || typeof engine.createLiveSpeech !== 'function') {
      return turnAway(ws, 'server_error', 'realtime_unavailable', 'this engine has no live transcription', 1011);
    }
    if (sessions.size >= limits.maxSessions) {
      metrics?.observeRealtimeRefusal('max_sessions');
      const message = `the server has its limit of ${limits.maxSessions} realtime sessions open; try again later`;
      return turnAway(ws, 'rate_limit_error', 'too_many_sessions', message, 1013);
    }
    const own = perClient.get(client) ?? 0;
    if (own >= limits.maxSessionsPerClient) {
      metrics?.observeRealtimeRefusal('client_sessions');
      const message = `this client has its limit of ${limits.maxSessionsPerClient} realtime sessions open`;
      return turnAway(ws, 'rate_limit_error', 'client_session_limit', message, 1013);
    }
    // Refusing with an event: the socket is open, the client reads why (an upgrade refusal was checked before).
    const busy = admitted ? undefined : overCapacity();
    if (busy) {
      metrics?.observeRealtimeRefusal(busy.reason);
      return turnAway(ws, 'unavailable_error', 'server_busy', busy.message, 1013);
    }
    const session = new RealtimeSession({
      socket: ws,
      engine: engine as RealtimeEngine,
      limits,
      openai: parts.openai,
      dialect,
      id: `sess_${(++opened).toString(36)}_${Date.now().toString(36)}`,
      onFinal: (seconds, latencyMs) => {
        if (latencyMs !== undefined) load.record(latencyMs, seconds * 1000);
        if (limiter) void limiter.chargeAudio(client, seconds).catch(() => undefined);
      },
    });
    sessions.add(session);
    perClient.set(client, own + 1);
    ws.once('close', () => {
      sessions.delete(session);
      const left = (perClient.get(client) ?? 1) - 1;
      if (left > 0) perClient.set(client, left);
      else perClient.delete(client);
    });
  };

  const upgrade: UpgradeHandler = (req, socket, head) => {
    // Another handler on the same server may have taken it already.
    if (claimed.has(socket) || !isRealtimePath(req.url)) return false;
    claimed.add(socket);
    // Until ws owns the socket, a reset must not become an uncaught 'error'.
    socket.on('error', () => socket.destroy());
    const protocols = offeredProtocols(req);
    const token = req.headers.authorization === undefined ? protocolKey(protocols) : undefined;
    const dialect: SessionDialect =
      req.headers['openai-beta'] === 'realtime=v1' || protocols.includes(BETA_PROTOCOL) ? 'beta' : 'ga';
    parts
      .authenticate(req, token)
      .then(async (client) => {
        // A session is a request (one token) doing work on audio (some must be left).
        await limiter?.admit(client, true).catch((error: unknown) => {
          if (error instanceof HttpError && error.status === 429) metrics?.observeRealtimeRefusal('rate_limited');
          throw error;
        });
        return client;
      })
      .then(
        (client) => {
          if (socket.destroyed) return;
          let admitted = false;
          if (limits.refuseWith === 'upgrade') {
            const busy = overCapacity();
            if (busy) {
              metrics?.observeRealtimeRefusal(busy.reason);
              refuse(
                socket,
                new HttpError(503, 'server_busy', busy.message, {
                  headers: { 'Retry-After': String(Math.max(1, parts.retryAfterSeconds)) },
                }),
              );
              return;
            }
            admitting++;
            admitted = true;
          }
          // The hold ends once, however the upgrade ends: the session opened, or ws refused the handshake (a bad
          // version or key, a socket already half closed) without calling back, or it threw.
          let held = admitted;
          const release = () => {
            if (held) admitting--;
            held = false;
          };
          socket.once('close', release);
          try {
            server.handleUpgrade(req, socket, head, (ws) => {
              release();
              open(ws, client, dialect, admitted);
            });
          } catch (error) {
            release();
            throw error;
          }
        },
        (error: unknown) => {
          if (!socket.destroyed) refuse(socket, error);
        },
      )
      .catch(() => socket.destroy());
    return true;
  };

  return {
    upgrade,
    get sessions() {
      return sessions.size;
    },
    closeAll() {
      closing = true;
      for (const session of sessions) session.close('shutting_down', 'the server is shutting down');
    },
  };
}
