// Realtime sessions admitted by capacity: on an engine of one CPU thread (capacity one session until finals are
// measured) a second session is refused at the upgrade with 503, Retry-After and the reason, or (refuseWith: 'event')
// with a `server_busy` error event and close 1013; once the first closes a new one is taken; refusals show in
// /metrics by reason, with the sessions open and the capacity. Per-client rate limits apply to sessions too (429 at
// the upgrade with the RateLimit fields). Random-weight tiny.en: plumbing, not speed (bench/realtime.mjs measures).
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import { type AddressInfo, connect as connectTcp } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { buildSpeechHandler } from '../../src/http/handler.js';
import type { SpeechHandlerOptions } from '../../src/http/options.js';
import { createSpeech, createSpeechMetrics, type Speech } from '../../src/index.js';
import { fixture, sharedModel } from '../helpers/paths.js';

const KEY = 'sk-admission';
let speech: Speech;
const servers: Server[] = [];

beforeAll(() => {
  speech = createSpeech({
    vadModel: sharedModel('whisper/ggml-silero-v6.2.0.bin'),
    models: { 'svc-stt-1': fixture('models/ggml-tiny.en-random.bin') },
    cpuThreads: 1,
    threads: 1,
  });
});
afterAll(async () => {
  for (const server of servers) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
  await speech.close();
});

async function serve(options: Partial<SpeechHandlerOptions> = {}) {
  const metrics = createSpeechMetrics({ processMetrics: false });
  const control = buildSpeechHandler({ speech, auth: [KEY], metrics, ...options });
  const server = createServer(control.handler);
  control.handler.attach(server);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  servers.push(server);
  return { url: `ws://127.0.0.1:${(server.address() as AddressInfo).port}/v1/realtime`, metrics };
}

/** Opens a session: resolves with the socket once its first event came, or with the HTTP refusal. */
function connect(
  url: string,
): Promise<
  | { socket: WebSocket; first: { type: string; error?: { code: string; message: string } } }
  | { status: number; headers: Record<string, string | string[] | undefined>; body: string }
> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(url, { headers: { Authorization: `Bearer ${KEY}` } });
    socket.once('message', (data) => resolve({ socket, first: JSON.parse(String(data)) }));
    socket.once('unexpected-response', (_req, res) => {
      let body = '';
      res.on('data', (chunk: Buffer) => {
        body += chunk;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    socket.once('error', (error) => {
      if (!/Unexpected server response/.test(error.message)) reject(error);
    });
  });
}

describe('realtime admission by capacity', () => {
  it('refuses a session past capacity at the upgrade with 503 and Retry-After, and takes one once there is room', async () => {
    const { url, metrics } = await serve({ limits: { retryAfterSeconds: 3 } });
    const first = await connect(url);
    expect('socket' in first && first.first.type).toBe('session.created');
    const second = await connect(url);
    expect('status' in second && second.status).toBe(503);
    if (!('status' in second)) return;
    expect(second.headers['retry-after']).toBe('3');
    expect(JSON.parse(second.body).error).toMatchObject({
      code: 'server_busy',
      message: expect.stringMatching(/takes 1 realtime sessions until it has measured its capacity/),
    });
    const text = await metrics.render();
    expect(text).toMatch(/voxmill_realtime_refusals_total\{reason="capacity"\} 1/);
    expect(text).toMatch(/voxmill_realtime_sessions\{state="open"\} 1/);
    expect(text).toMatch(/voxmill_realtime_sessions\{state="capacity"\} 1/);
    expect(text).toMatch(/voxmill_realtime_interims_shed_total 0/);
    if (!('socket' in first)) return;
    first.socket.close();
    await once(first.socket, 'close');
    await expect
      .poll(async () => {
        const again = await connect(url);
        if ('socket' in again) again.socket.close();
        return 'socket' in again;
      })
      .toBe(true);
  });

  it('gives back the place of an upgrade ws refuses (a bad version, a socket half closed before the handshake)', async () => {
    const { url } = await serve();
    const { port } = new URL(url);
    for (let i = 0; i < 3; i++) {
      const socket = connectTcp(Number(port), '127.0.0.1');
      socket.resume();
      await once(socket, 'connect');
      socket.end(
        'GET /v1/realtime HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n' +
          `Authorization: Bearer ${KEY}\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n` +
          `Sec-WebSocket-Version: ${i === 0 ? 7 : 13}\r\n\r\n`,
      );
      await once(socket, 'close');
    }
    // Had those held their place, open + admitting would be past the capacity of one.
    await expect
      .poll(async () => {
        const session = await connect(url);
        if ('socket' in session) session.socket.close();
        return 'socket' in session;
      })
      .toBe(true);
  });

  it("refuses with a server_busy error event and close 1013 when refuseWith is 'event'", async () => {
    const { url, metrics } = await serve({ realtime: { refuseWith: 'event' } });
    const first = await connect(url);
    const second = await connect(url);
    expect('socket' in second && second.first).toMatchObject({ type: 'error', error: { code: 'server_busy' } });
    if ('socket' in second) {
      const [code] = (await once(second.socket, 'close')) as [number];
      expect(code).toBe(1013);
    }
    expect(await metrics.render()).toMatch(/voxmill_realtime_refusals_total\{reason="capacity"\} 1/);
    if ('socket' in first) first.socket.close();
  });

  it('takes every session up to maxSessions with admitByCapacity off', async () => {
    const { url } = await serve({ realtime: { admitByCapacity: false, maxSessions: 3, maxSessionsPerClient: 3 } });
    const sessions = await Promise.all([connect(url), connect(url), connect(url)]);
    expect(sessions.map((s) => 'socket' in s && s.first.type)).toEqual([
      'session.created',
      'session.created',
      'session.created',
    ]);
    for (const s of sessions) if ('socket' in s) s.socket.close();
  });

  it('applies per-client rate limits to sessions: 429 at the upgrade with the RateLimit fields', async () => {
    const { url, metrics } = await serve({
      realtime: { admitByCapacity: false },
      limits: { requestsPerMinute: 1 },
    });
    const first = await connect(url);
    expect('socket' in first).toBe(true);
    const second = await connect(url);
    expect('status' in second && second.status).toBe(429);
    if ('status' in second) {
      expect(second.headers.ratelimit).toBe('"requests";r=0;t=60');
      expect(Number(second.headers['retry-after'])).toBeGreaterThan(0);
      expect(JSON.parse(second.body).error.code).toBe('rate_limited');
    }
    expect(await metrics.render()).toMatch(/voxmill_realtime_refusals_total\{reason="rate_limited"\} 1/);
    if ('socket' in first) first.socket.close();
  });
});
