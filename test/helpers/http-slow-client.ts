// A raw-socket HTTP client for slow and hostile clients: it sends a request head and part of a body, trickles the
// rest (or never sends it), and reports the one response it got and when the server closed the connection.
import { connect } from 'node:net';
import type { Response } from 'supertest';
import { expectDocumented } from './openapi.js';

export interface SlowExchange {
  /** 0 when no complete response head arrived. */
  status: number;
  headers: Record<string, string>;
  body: string;
  /** Milliseconds from connecting to the end of the response head; undefined when none came. */
  answeredMs: number | undefined;
  /** Milliseconds from connecting to the server's close; undefined when the connection was still open at `maxMs`. */
  closedMs: number | undefined;
  /** Trickled chunks the client wrote before the connection closed. */
  trickled: number;
}

export interface SlowRequest {
  /** The request line and headers, without the blank line (which is added unless `headUnfinished`). */
  head: string;
  /** Send no blank line after `head`: the headers are still arriving (they may go on in `trickle`). */
  headUnfinished?: boolean;
  /** Sent right after the head. */
  body?: string | Buffer;
  /**
   * Sent every `everyMs` after that, at most `times` times (chunked framing is the caller's); a function gives the
   * n-th piece (0-based).
   */
  trickle?: { chunk: string | Buffer | ((n: number) => string | Buffer); everyMs: number; times: number };
  /** How long to wait for the server to close before giving up (the connection is then destroyed). */
  maxMs: number;
  /** Local address to connect from (127.0.0.2, ... are separate clients to the server). */
  localAddress?: string;
}

/** A chunked-encoding frame of `data`. */
export function chunk(data: string): string {
  return `${Buffer.byteLength(data).toString(16)}\r\n${data}\r\n`;
}

export function slowRequest(url: string, request: SlowRequest): Promise<SlowExchange> {
  const { port, hostname } = new URL(url);
  const started = performance.now();
  return new Promise((resolve) => {
    const socket = connect({
      port: Number(port),
      host: hostname,
      ...(request.localAddress ? { localAddress: request.localAddress } : {}),
    });
    let received = Buffer.alloc(0);
    let answeredMs: number | undefined;
    let trickled = 0;
    let ticker: NodeJS.Timeout | undefined;
    socket.on('data', (data: Buffer) => {
      received = Buffer.concat([received, data]);
      if (answeredMs === undefined && received.includes('\r\n\r\n')) answeredMs = performance.now() - started;
    });
    // Writes after the server closed fail with EPIPE or ECONNRESET: that is the point of these clients.
    socket.on('error', () => undefined);
    const giveUp = setTimeout(() => finish(undefined), request.maxMs);
    socket.on('close', () => finish(performance.now() - started));
    function finish(closedMs: number | undefined): void {
      clearTimeout(giveUp);
      clearInterval(ticker);
      socket.destroy();
      resolve({ ...parseResponse(received), answeredMs, closedMs, trickled });
    }
    // Head and body in one write, as clients send a small request: one segment.
    const head = request.headUnfinished ? request.head : `${request.head}\r\n\r\n`;
    socket.write(Buffer.concat([Buffer.from(head, 'latin1'), Buffer.from(request.body ?? '')]));
    const { trickle } = request;
    if (trickle) {
      ticker = setInterval(() => {
        if (trickled >= trickle.times || socket.destroyed) return void clearInterval(ticker);
        const piece = typeof trickle.chunk === 'function' ? trickle.chunk(trickled) : trickle.chunk;
        trickled++;
        socket.write(piece);
      }, trickle.everyMs);
    }
  });
}

function parseResponse(bytes: Buffer): Pick<SlowExchange, 'status' | 'headers' | 'body'> {
  const text = bytes.toString('utf8');
  const end = text.indexOf('\r\n\r\n');
  if (end < 0) return { status: 0, headers: {}, body: '' };
  const [statusLine = '', ...lines] = text.slice(0, end).split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  return { status: Number(statusLine.split(' ')[1]), headers, body: text.slice(end + 4) };
}

/** Checks a raw response against openapi.json, as the supertest-based tests check theirs. */
export function expectRawDocumented(exchange: SlowExchange, method: string, path: string): void {
  const isJson = (exchange.headers['content-type'] ?? '').startsWith('application/json');
  const body: unknown = isJson ? JSON.parse(exchange.body) : exchange.body;
  expectDocumented({ status: exchange.status, headers: exchange.headers, body } as unknown as Response, method, path);
}
