// Server-Sent Events responses (OpenAI's `stream: true`): `data:` lines of JSON, a comment line as heartbeat so
// proxies and clients keep an idle stream open, and backpressure from the socket.
import type { ServerResponse } from 'node:http';
import { countBytesOut } from './request-log.js';

/** A comment line every this many ms while nothing else is sent. */
export const SSE_HEARTBEAT_MS = 15_000;

export interface EventStream {
  /** Sends one event as `data: <json>`; resolves once the socket has taken it (or the stream has closed). */
  send(event: unknown): Promise<void>;
  /** Ends the response (stops the heartbeat). Safe to call more than once. */
  end(): void;
}

/** Starts a `text/event-stream` response with status 200; the X-Request-Id header is already set. */
export function startEventStream(res: ServerResponse, heartbeatMs = SSE_HEARTBEAT_MS): EventStream {
  res.statusCode = 200;
  res.setHeader('Content-Type', 'text/event-stream; charset=utf-8');
  res.setHeader('Cache-Control', 'no-store');
  // Tells nginx not to buffer the stream.
  res.setHeader('X-Accel-Buffering', 'no');
  res.flushHeaders();
  const write = (text: string): Promise<void> => {
    if (res.writableEnded || res.destroyed) return Promise.resolve();
    countBytesOut(res, Buffer.byteLength(text));
    if (res.write(text)) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        res.off('drain', done);
        res.off('close', done);
        resolve();
      };
      res.once('drain', done);
      res.once('close', done);
    });
  };
  // A client that is not reading gets no more pings piled up behind the unsent ones.
  const heartbeat = setInterval(() => {
    if (!res.writableNeedDrain) void write(': ping\n\n');
  }, heartbeatMs);
  heartbeat.unref();
  res.once('close', () => clearInterval(heartbeat));
  return {
    send: (event) => write(`data: ${JSON.stringify(event)}\n\n`),
    end: () => {
      clearInterval(heartbeat);
      if (!res.writableEnded) res.end();
    },
  };
}
