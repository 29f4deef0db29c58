// The `/v1/realtime` WebSocket endpoint: the HTTP upgrade authenticated like every /v1 request (the bearer header, or
// for browsers, which cannot set headers, the subprotocol `openai-insecure-api-key.<key>` that OpenAI's clients use),
// then one RealtimeSession per socket, up to `realtime.maxSessions`.
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer } from 'ws';
import { toHttpError } from '../http-error.js';
import type { ResolvedOpenAiOptions } from '../openai/openai-options.js';
import type { SessionDialect } from './realtime-config.js';
import type { ResolvedRealtimeOptions } from './realtime-options.js';
import { type RealtimeEngine, RealtimeSession } from './realtime-session.js';

/** Node's `upgrade` event handler: answers the realtime path and returns true, or returns false for any other. */
export type UpgradeHandler = (req: IncomingMessage, socket: Duplex, head: Buffer) => boolean;

export interface RealtimeEndpoint {
  upgrade: UpgradeHandler;
  /** Sessions open now. */
  readonly sessions: number;
  /** Ends every session (an `error` event `shutting_down`, then close 1001). */
  closeAll(): void;
}

/** The subprotocol a browser must offer (with its key in a second one); the server answers with it. */
const PROTOCOL = 'realtime';
const KEY_PROTOCOL = 'openai-insecure-api-key.';
const BETA_PROTOCOL = 'openai-beta.realtime-v1';
const PATH_SUFFIX = '/v1/realtime';

export interface RealtimeEndpointParts {
  engine: Partial<RealtimeEngine>;
  limits: ResolvedRealtimeOptions;
  openai: ResolvedOpenAiOptions;
  /** The handler's authentication; `token` is the subprotocol's key when the request has no header. */
  authenticate: (req: IncomingMessage, token?: string) => Promise<string>;
}

function offeredProtocols(req: IncomingMessage): string[] {
  const header = req.headers['sec-websocket-protocol'];
  return typeof header === 'string' ? header.split(',').map((p) => p.trim()) : [];
}

export function realtimeEndpoint(parts: RealtimeEndpointParts): RealtimeEndpoint {
  const { limits, engine } = parts;
  const sessions = new Set<RealtimeSession>();
  let opened = 0;
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

  const upgrade: UpgradeHandler = (req, socket, head) => {
    const path = new URL(req.url ?? '/', 'http://localhost').pathname.replace(/\/$/, '');
    if (!path.endsWith(PATH_SUFFIX)) return false;
    // Until ws owns the socket, a reset must not become an uncaught 'error'.
    socket.on('error', () => socket.destroy());
    const protocols = offeredProtocols(req);
    const keyProtocol = protocols.find((p) => p.startsWith(KEY_PROTOCOL));
    const token = req.headers.authorization === undefined ? keyProtocol?.slice(KEY_PROTOCOL.length) : undefined;
    const dialect: SessionDialect =
      req.headers['openai-beta'] === 'realtime=v1' || protocols.includes(BETA_PROTOCOL) ? 'beta' : 'ga';
    parts.authenticate(req, token).then(
      () => {
        if (socket.destroyed) return;
        server.handleUpgrade(req, socket, head, (ws) => {
          const refusal =
            typeof engine.createTranscriber !== 'function' || typeof engine.createLiveSpeech !== 'function'
              ? { type: 'server_error', code: 'realtime_unavailable', message: 'this engine has no live transcription' }
              : sessions.size >= limits.maxSessions
                ? {
                    type: 'rate_limit_error',
                    code: 'too_many_sessions',
                    message: `the server has its limit of ${limits.maxSessions} realtime sessions open; try again later`,
                  }
                : undefined;
          if (refusal) {
            // Told over the socket: a browser cannot read an HTTP refusal of an upgrade.
            ws.send(
              JSON.stringify({
                event_id: 'event_1',
                type: 'error',
                error: { ...refusal, param: null, event_id: null },
              }),
            );
            ws.close(1013, refusal.code);
            return;
          }
          const session = new RealtimeSession({
            socket: ws,
            engine: engine as RealtimeEngine,
            limits,
            openai: parts.openai,
            dialect,
            id: `sess_${(++opened).toString(36)}_${Date.now().toString(36)}`,
          });
          sessions.add(session);
          ws.once('close', () => sessions.delete(session));
        });
      },
      (error: unknown) => {
        if (!socket.destroyed) refuse(socket, error);
      },
    );
    return true;
  };

  return {
    upgrade,
    get sessions() {
      return sessions.size;
    },
    closeAll() {
      for (const session of sessions) session.close('shutting_down', 'the server is shutting down');
    },
  };
}
