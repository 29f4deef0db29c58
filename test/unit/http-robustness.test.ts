// The handler against hostile and unlucky clients: bodies cut short, pipelined requests on a dying connection,
// stalled bodies, slow authorizers, huge bodies after an error, broken loggers, streams that die without audio.
// A crash here would be an uncaught exception in the test process, which vitest reports as a failure.
import { Agent, createServer, request as httpRequest, type Server } from 'node:http';
import { type AddressInfo, connect } from 'node:net';
import { Readable } from 'node:stream';
import express from 'express';
import request from 'supertest';
import { afterEach, describe, expect, it, vi } from 'vitest';
// Waits for the handler's work and bounds on how soon it answers grow with this machine's slowdown; the short
// requestTimeoutMs set to fire stays as set.
import { scaledMs } from '../../scripts/lib/machine-speed.mjs';
import { createSpeechHandler, InvalidOptionValueError, type SpeechHandlerOptions } from '../../src/index.js';
import { AUDIO_HEADS, FakeSpeechEngine, fakeSpeechStream } from '../helpers/fake-speech-engine.js';
import { documented } from '../helpers/openapi.js';

const KEY = 'sk-robust';
const servers: Server[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

async function listen(server: Server): Promise<string> {
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

async function bare(options: Partial<SpeechHandlerOptions> = {}) {
  const engine = new FakeSpeechEngine();
  const url = await listen(createServer(createSpeechHandler({ speech: engine, auth: [KEY], ...options })));
  return { engine, url, agent: request(url) };
}

/** A valid speech request with the key. */
function speakRequest(agent: ReturnType<typeof request>): request.Test {
  return agent
    .post('/v1/speech')
    .set('Authorization', `Bearer ${KEY}`)
    .send({ model: 'svc-tts-1', voice: 'v', input: 'x' });
}

/** Sends raw bytes, resolves to the raw response text once the server closes or a full response arrived. */
function raw(url: string, bytes: Buffer, waitMs = scaledMs(2000)): Promise<string> {
  const { port } = new URL(url);
  return new Promise((resolve) => {
    const socket = connect(Number(port), '127.0.0.1');
    let text = '';
    socket.on('data', (chunk) => {
      text += chunk;
    });
    socket.on('error', () => undefined);
    socket.on('close', () => resolve(text));
    setTimeout(() => {
      socket.destroy();
    }, waitMs);
    socket.end(bytes);
  });
}

describe('bodies cut short', () => {
  it('answers a multipart body that ends inside the file with 400, at every cut', async () => {
    const { url, engine } = await bare();
    const head =
      '--b\r\nContent-Disposition: form-data; name="model"\r\n\r\nsvc-stt-1\r\n' +
      '--b\r\nContent-Disposition: form-data; name="file"; filename="a.wav"\r\n\r\n';
    const full = Buffer.concat([Buffer.from(head), AUDIO_HEADS.wav, Buffer.from('\r\n--b--\r\n')]);
    for (let cut = head.length - 20; cut < full.length - 1; cut += 7) {
      const body = full.subarray(0, cut);
      const response = await raw(
        url,
        Buffer.concat([
          Buffer.from(
            'POST /v1/transcriptions HTTP/1.1\r\nHost: x\r\nConnection: close\r\n' +
              `Authorization: Bearer ${KEY}\r\nContent-Type: multipart/form-data; boundary=b\r\n` +
              `Content-Length: ${body.length}\r\n\r\n`,
          ),
          body,
        ]),
      );
      expect(response, `cut at ${cut}`).toMatch(/^HTTP\/1\.1 400 /);
      expect(response).toContain('"invalid_multipart"');
    }
    expect(engine.transcribeCalls).toHaveLength(0);
  });

  it('answers a file sent as a text field with 400 naming file', async () => {
    const { agent } = await bare();
    const res = await documented(
      agent
        .post('/v1/transcriptions')
        .set('Authorization', `Bearer ${KEY}`)
        .field('model', 'svc-stt-1')
        .field('file', 'not a file'),
    );
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: 'invalid_type', param: 'file' });
  });
});

describe('connections', () => {
  it('frees the slots of pipelined requests when their connection dies', async () => {
    const engine = new FakeSpeechEngine();
    const app = express();
    app.get('/slow', (_req, res) => {
      setTimeout(() => res.end('slow'), 300);
    });
    app.use(createSpeechHandler({ speech: engine, auth: [KEY], limits: { maxConcurrentRequests: 2 } }));
    const url = await listen(createServer(app));
    const get = (path: string) => `GET ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${KEY}\r\n\r\n`;
    const warnings: Error[] = [];
    const onWarning = (warning: Error) => warnings.push(warning);
    process.on('warning', onWarning);
    try {
      // Requests queued behind a slow one, then the client leaves before any is answered.
      await raw(url, Buffer.from(get('/slow') + get('/v1/voices').repeat(20)), 50);
      await new Promise((resolve) => setTimeout(resolve, scaledMs(400)));
      const after = await documented(request(url).get('/v1/voices').set('Authorization', `Bearer ${KEY}`));
      expect(after.status).toBe(200);
      // However many are pipelined, one 'close' listener per connection.
      expect(warnings.filter((w) => w.name === 'MaxListenersExceededWarning')).toEqual([]);
    } finally {
      process.off('warning', onWarning);
    }
  });

  it('does not let requests without a key take the slots of those with one', async () => {
    const { url, engine } = await bare({ limits: { maxConcurrentRequests: 1 } });
    let release: () => void = () => undefined;
    engine.onSynthesize = () =>
      new Promise((resolve) => {
        release = () => resolve(fakeSpeechStream([Buffer.from('ID3x')]));
      });
    const slow = documented(speakRequest(request(url)));
    await vi.waitFor(() => expect(engine.synthesizeCalls).toHaveLength(1), { timeout: scaledMs(1000) });
    const anonymous = await documented(request(url).get('/v1/voices'));
    expect(anonymous.status).toBe(401);
    release();
    expect((await slow).status).toBe(200);
  });

  it('drains a large unread body after an error and keeps the connection', async () => {
    const { url } = await bare({ limits: { maxJsonBytes: 1024 } });
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const post = (body: Buffer) =>
        new Promise<{ status: number; reused: boolean }>((resolve, reject) => {
          const req = httpRequest(`${url}/v1/speech`, {
            method: 'POST',
            agent,
            headers: {
              Authorization: `Bearer ${KEY}`,
              'Content-Type': 'application/json',
              'Transfer-Encoding': 'chunked',
            },
          });
          req.on('response', (res) => {
            res.resume();
            res.on('end', () => resolve({ status: res.statusCode ?? 0, reused: req.reusedSocket }));
          });
          req.on('error', reject);
          const chunk = Buffer.alloc(64 * 1024, 0x20);
          let sent = 0;
          const pump = () => {
            while (sent < body.length) {
              sent += chunk.length;
              if (!req.write(chunk)) return void req.once('drain', pump);
            }
            req.end();
          };
          pump();
        });
      const first = await post(Buffer.alloc(8 * 1024 * 1024));
      expect(first.status).toBe(413);
      const second = await post(Buffer.alloc(128 * 1024));
      expect(second).toEqual({ status: 413, reused: true });
    } finally {
      agent.destroy();
    }
  });

  it('cuts the connection when the unread rest is larger than any request may be', async () => {
    const { url } = await bare({ limits: { maxJsonBytes: 1024, maxFileBytes: 64 * 1024 } });
    const closed = await new Promise<number>((resolve) => {
      const started = performance.now();
      const req = httpRequest(`${url}/v1/speech`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${KEY}`, 'Content-Type': 'application/json', 'Transfer-Encoding': 'chunked' },
      });
      req.on('error', () => resolve(performance.now() - started));
      req.on('close', () => resolve(performance.now() - started));
      req.on('response', (res) => res.resume());
      const chunk = Buffer.alloc(64 * 1024, 0x20);
      const pump = () => {
        while (req.write(chunk)) {
          // keep writing until the socket pushes back or dies
        }
        if (!req.destroyed) req.once('drain', pump);
      };
      pump();
    });
    expect(closed).toBeLessThan(scaledMs(3000));
  });
});

describe('timeouts', () => {
  it('answers 503 when the JSON body stalls past requestTimeoutMs', async () => {
    const { url } = await bare({ limits: { requestTimeoutMs: 200 } });
    const status = await new Promise<number>((resolve, reject) => {
      const req = httpRequest(`${url}/v1/speech`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${KEY}`, 'Content-Type': 'application/json', 'Content-Length': '100' },
      });
      req.on('response', (res) => resolve(res.statusCode ?? 0));
      req.on('error', reject);
      req.write('{"model":');
    });
    expect(status).toBe(503);
  });

  it("answers a stalled body's timeout itself even with errors: 'next' (Express's final handler would wait)", async () => {
    const app = express();
    app.use(
      createSpeechHandler({
        speech: new FakeSpeechEngine(),
        auth: [KEY],
        errors: 'next',
        limits: { requestTimeoutMs: 200 },
      }),
    );
    const url = await listen(createServer(app));
    const response = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = httpRequest(`${url}/v1/speech`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${KEY}`, 'Content-Type': 'application/json', 'Content-Length': '100' },
      });
      req.on('response', (res) => {
        let body = '';
        res.on('data', (chunk) => {
          body += chunk;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      });
      req.on('error', reject);
      req.write('{');
    });
    expect(response.status).toBe(503);
    expect(JSON.parse(response.body).error.code).toBe('request_timeout');
  });

  it('answers 503 when authorize() takes longer than requestTimeoutMs', async () => {
    const engine = new FakeSpeechEngine();
    const url = await listen(
      createServer(
        createSpeechHandler({
          speech: engine,
          // Scaled with the bound below, so that the answer still comes before authorize() ends.
          auth: () => new Promise((resolve) => setTimeout(() => resolve(true), scaledMs(2000))),
          limits: { requestTimeoutMs: 200 },
        }),
      ),
    );
    const started = performance.now();
    const res = await documented(request(url).get('/v1/voices').set('Authorization', 'Bearer slow'));
    expect(res.status).toBe(503);
    expect(res.body.error.code).toBe('request_timeout');
    expect(res.headers['retry-after']).toBe('1');
    expect(performance.now() - started).toBeLessThan(scaledMs(1500));
  });
});

describe('streams and hosts', () => {
  it('answers a synthesis stream that closes without audio or error with 500, promptly', async () => {
    const { agent, engine } = await bare({ limits: { requestTimeoutMs: scaledMs(60_000) } });
    engine.onSynthesize = async () => {
      const stream = new Readable({ read() {} });
      setTimeout(() => stream.destroy(), 20);
      return fakeSpeechStream(stream);
    };
    const res = await documented(speakRequest(agent));
    expect(res.status).toBe(500);
    expect(res.body.error.code).toBe('synthesis_failed');
  });

  it('survives a client that leaves, or a timeout, before the first audio of an engine-style stream', async () => {
    for (const mode of ['client leaves', 'timeout'] as const) {
      const { url, engine } = await bare({ limits: { requestTimeoutMs: mode === 'timeout' ? 150 : scaledMs(60_000) } });
      const destroyed: unknown[] = [];
      // Like the real engine: Readable.from() of a generator that waits on the worker, destroyed with the signal's
      // reason when it aborts (after the route's own listeners may have gone), and started at once.
      engine.onSynthesize = async (options) => {
        let stopped = false;
        const stream = Readable.from(
          (async function* () {
            while (!stopped) await new Promise((resolve) => setTimeout(resolve, 20));
            yield Buffer.alloc(0);
          })(),
          { objectMode: false },
        );
        options.signal?.addEventListener(
          'abort',
          () => {
            stopped = true;
            stream.destroy(options.signal?.reason as Error);
          },
          { once: true },
        );
        stream.once('close', () => destroyed.push(stream.errored));
        stream.read(0);
        return fakeSpeechStream(stream);
      };
      const status = await new Promise<number>((resolve) => {
        const req = httpRequest(`${url}/v1/speech`, {
          method: 'POST',
          headers: { Authorization: `Bearer ${KEY}`, 'Content-Type': 'application/json' },
        });
        req.on('response', (res) => resolve(res.statusCode ?? 0));
        req.on('error', () => resolve(0));
        req.end(JSON.stringify({ model: 'svc-tts-1', voice: 'v', input: 'x' }));
        if (mode === 'client leaves') setTimeout(() => req.destroy(), 100);
      });
      expect(status, mode).toBe(mode === 'timeout' ? 503 : 0);
      // The stream's error comes after the route stopped listening; it must not be thrown.
      await vi.waitFor(() => expect(destroyed).toHaveLength(1), { timeout: scaledMs(1000) });
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  });

  it('destroys the synthesis when the response cannot be started', async () => {
    const { agent, engine } = await bare();
    let stream: Readable | undefined;
    engine.onSynthesize = async () => {
      stream = new Readable({ read() {} });
      stream.push(Buffer.from('ID3x'));
      // A header value Node refuses: setting it throws inside the route.
      return Object.assign(fakeSpeechStream(stream), { variant: 'voice\u0100' });
    };
    const res = await documented(speakRequest(agent));
    expect(res.status).toBe(500);
    expect(stream?.destroyed).toBe(true);
  });

  it("keeps the host's own headers (CORS) on error responses", async () => {
    const app = express();
    app.use((_req, res, next) => {
      res.set('Access-Control-Allow-Origin', '*');
      next();
    });
    app.use(createSpeechHandler({ speech: new FakeSpeechEngine(), auth: [KEY] }));
    const url = await listen(createServer(app));
    const res = await documented(request(url).get('/v1/voices'));
    expect(res.status).toBe(401);
    expect(res.headers['access-control-allow-origin']).toBe('*');
  });

  it('answers HEAD and OPTIONS on POST routes with 405, and Object.prototype names as unknown fields', async () => {
    const { agent } = await bare();
    for (const method of ['head', 'options'] as const) {
      const res = await documented(agent[method]('/v1/speech').set('Authorization', `Bearer ${KEY}`));
      expect(res.status, method).toBe(405);
      expect(res.headers.allow).toBe('POST');
    }
    for (const field of ['constructor', 'toString', 'hasOwnProperty']) {
      const res = await documented(
        agent
          .post('/v1/speech')
          .set('Authorization', `Bearer ${KEY}`)
          .set('Content-Type', 'application/json')
          .send(`{"model":"svc-tts-1","voice":"v","input":"x","${field}":1}`),
      );
      expect(res.body.error, field).toMatchObject({ code: 'unknown_parameter', param: field });
    }
  });

  it('survives a logger that throws or rejects', async () => {
    for (const onRequest of [
      () => {
        throw new Error('sync logger failure');
      },
      async () => {
        throw new Error('async logger failure');
      },
    ]) {
      const { agent } = await bare({ onRequest });
      expect((await documented(agent.get('/v1/voices').set('Authorization', `Bearer ${KEY}`))).status).toBe(200);
      expect((await documented(agent.get('/v1/voices'))).status).toBe(401);
    }
  });

  it('refuses API keys a Bearer header cannot carry, without echoing them', () => {
    const speech = new FakeSpeechEngine();
    for (const key of ['sk:live:abc', 'p@ss', 'abc==def', 'has space']) {
      let error: unknown;
      try {
        createSpeechHandler({ speech, auth: ['fine-key', key] });
      } catch (caught) {
        error = caught;
      }
      expect(error, key).toBeInstanceOf(InvalidOptionValueError);
      expect((error as Error).message).toMatch(/^auth\[1\] must be an API key a Bearer token can carry/);
      expect((error as Error).message).not.toContain(key);
    }
    expect(() => createSpeechHandler({ speech, auth: ['abc.DEF_ghi-~+/=='] })).not.toThrow();
  });
});
