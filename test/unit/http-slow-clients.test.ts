// Slow and hostile clients must not lock others out: body deadlines (408 body_timeout and a closed connection),
// the per-client request cap (429 client_request_limit), refused requests whose bodies keep coming (answered, then
// the connection closed), and the standalone server's headers deadline. Deadlines are short here so each test
// takes a second or two.
import { Agent, createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import request from 'supertest';
import { afterEach, describe, expect, it, vi } from 'vitest';
// How long a client waits for the server, and bounds on how soon it answers or closes, grow with this machine's
// slowdown; the deadlines under test (and lower bounds on them) stay as set.
import { scaledMs } from '../../scripts/lib/machine-speed.mjs';
import { parseServeConfig } from '../../src/cli/serve-config.js';
import { watchBodyArrival } from '../../src/http/body-watch.js';
import {
  createSpeechHandler,
  createSpeechServer,
  InvalidOptionTypeError,
  InvalidOptionValueError,
  type Speech,
  type SpeechHandlerOptions,
  type SpeechServer,
} from '../../src/index.js';
import { AUDIO_HEADS, FakeSpeechEngine, fakeSpeechStream } from '../helpers/fake-speech-engine.js';
import { chunk, expectRawDocumented, type SlowExchange, slowRequest } from '../helpers/http-slow-client.js';
import { documented } from '../helpers/openapi.js';

const KEY = 'sk-slow';
const OTHER_KEY = 'sk-other';
const servers: Server[] = [];
const speechServers: SpeechServer[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
  for (const { server } of speechServers.splice(0)) {
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
  const handler = createSpeechHandler({ speech: engine, auth: [KEY, OTHER_KEY], ...options });
  const url = await listen(createServer(handler));
  return { engine, url };
}

function speechHead(extra: string[], key = KEY): string {
  return ['POST /v1/speech HTTP/1.1', 'Host: x', `Authorization: Bearer ${key}`, 'Content-Type: application/json']
    .concat(extra)
    .join('\r\n');
}

const SPEECH_JSON = JSON.stringify({ model: 'svc-tts-1', voice: 'v', input: 'x' });

function errorCode(exchange: SlowExchange): string | undefined {
  return exchange.body ? (JSON.parse(exchange.body) as { error?: { code?: string } }).error?.code : undefined;
}

describe('body deadlines', () => {
  it('answers 408 body_timeout and closes when a declared body stops arriving (Content-Length 1000, 20 sent)', async () => {
    const { url, engine } = await bare({ limits: { bodyIdleTimeoutMs: 300 } });
    const exchange = await slowRequest(url, {
      head: speechHead(['Content-Length: 1000']),
      body: '{"model":"svc-tts-1"',
      maxMs: scaledMs(3000),
    });
    expect(exchange.status).toBe(408);
    expect(errorCode(exchange)).toBe('body_timeout');
    expect(exchange.headers.connection).toBe('close');
    expectRawDocumented(exchange, 'POST', '/v1/speech');
    expect(exchange.answeredMs).toBeGreaterThanOrEqual(250);
    expect(exchange.answeredMs).toBeLessThan(scaledMs(1500));
    expect(exchange.closedMs).toBeLessThan(scaledMs(1500));
    expect(engine.synthesizeCalls).toHaveLength(0);
  });

  it('answers 408 when a multipart upload stops arriving mid-file', async () => {
    const { url, engine } = await bare({ limits: { bodyIdleTimeoutMs: 300 } });
    const form =
      '--b\r\nContent-Disposition: form-data; name="model"\r\n\r\nsvc-stt-1\r\n' +
      '--b\r\nContent-Disposition: form-data; name="file"; filename="a.wav"\r\n\r\n';
    const exchange = await slowRequest(url, {
      head: [
        'POST /v1/transcriptions HTTP/1.1',
        'Host: x',
        `Authorization: Bearer ${KEY}`,
        'Content-Type: multipart/form-data; boundary=b',
        'Transfer-Encoding: chunked',
      ].join('\r\n'),
      body: chunk(form + AUDIO_HEADS.wav.toString('latin1')),
      maxMs: scaledMs(3000),
    });
    expect(exchange.status).toBe(408);
    expect(errorCode(exchange)).toBe('body_timeout');
    expectRawDocumented(exchange, 'POST', '/v1/transcriptions');
    expect(exchange.closedMs).toBeLessThan(scaledMs(1500));
    expect(engine.transcribeCalls).toHaveLength(0);
  });

  it('answers 408 when a trickling body passes bodyTimeoutMs, though no gap passes bodyIdleTimeoutMs', async () => {
    const { url } = await bare({ limits: { bodyIdleTimeoutMs: 300, bodyTimeoutMs: 600 } });
    const exchange = await slowRequest(url, {
      head: speechHead(['Transfer-Encoding: chunked']),
      body: chunk('{"model":"svc-tts-1",'),
      trickle: { chunk: chunk(' '), everyMs: 50, times: 200 },
      maxMs: scaledMs(3000),
    });
    expect(exchange.status).toBe(408);
    expect(JSON.parse(exchange.body).error.message).toContain('did not arrive within 600 ms');
    expect(exchange.answeredMs).toBeGreaterThanOrEqual(550);
    expect(exchange.closedMs).toBeLessThan(scaledMs(1500));
  });

  it('lets a body that arrives in slow but steady chunks through', async () => {
    const { url, engine } = await bare({ limits: { bodyIdleTimeoutMs: 300, bodyTimeoutMs: scaledMs(5000) } });
    // The request's JSON in 8-byte chunks 100 ms apart (about a second in all), then the last chunk.
    const frames = [...(SPEECH_JSON.match(/.{1,8}/g) ?? []).map(chunk), '0\r\n\r\n'];
    const exchange = await slowRequest(url, {
      head: speechHead(['Transfer-Encoding: chunked', 'Connection: close']),
      trickle: { chunk: (n) => frames[n] ?? '', everyMs: 100, times: frames.length },
      maxMs: scaledMs(5000),
    });
    expect(exchange.status).toBe(200);
    expect(exchange.trickled).toBe(frames.length);
    expect(engine.synthesizeCalls).toHaveLength(1);
  });

  it('holds no deadline with both set to 0, and rejects invalid values naming the limit', async () => {
    const engine = new FakeSpeechEngine();
    for (const [key, value] of [
      ['bodyIdleTimeoutMs', -1],
      ['bodyTimeoutMs', 1.5],
      ['maxConcurrentRequestsPerClient', 0],
    ] as const) {
      expect(() => createSpeechHandler({ speech: engine, auth: [KEY], limits: { [key]: value } })).toThrow(
        new RegExp(`limits\\.${key}`),
      );
    }
    expect(() =>
      createSpeechHandler({ speech: engine, auth: [KEY], limits: { bodyTimeoutMs: '5' as unknown as number } }),
    ).toThrow(InvalidOptionTypeError);
    const { url } = await bare({ limits: { bodyIdleTimeoutMs: 0, bodyTimeoutMs: 0, requestTimeoutMs: 0 } });
    const exchange = await slowRequest(url, {
      head: speechHead(['Content-Length: 1000']),
      body: '{',
      maxMs: 700,
    });
    expect(exchange.status).toBe(0);
    expect(exchange.closedMs).toBeUndefined();
  });
});

describe('minimum body rate', () => {
  // A speech body trickled one byte every 50 ms (20 bytes/s), never long enough apart for the idle deadline.
  const trickleHead = speechHead(['Transfer-Encoding: chunked']);
  const trickle = { chunk: chunk(' '), everyMs: 50, times: 200 };

  it('answers 408 body_timeout and closes when a trickle stays below minBodyBytesPerSecond past the grace', async () => {
    const { url, engine } = await bare({
      limits: { bodyIdleTimeoutMs: 300, minBodyBytesPerSecond: 100, bodyRateGraceMs: 600 },
    });
    const exchange = await slowRequest(url, { head: trickleHead, body: chunk('{'), trickle, maxMs: scaledMs(4000) });
    expect(exchange.status).toBe(408);
    expect(errorCode(exchange)).toBe('body_timeout');
    const { message } = JSON.parse(exchange.body).error as { message: string };
    expect(message).toContain('arrived too slowly');
    expect(message).toContain('limits.minBodyBytesPerSecond (100 bytes/s)');
    expect(exchange.headers.connection).toBe('close');
    expectRawDocumented(exchange, 'POST', '/v1/speech');
    // Cut at the grace (600 ms; 60 bytes were due and about 12 came), not at the 60 s bodyTimeoutMs.
    expect(exchange.answeredMs).toBeGreaterThanOrEqual(550);
    expect(exchange.answeredMs).toBeLessThan(scaledMs(1500));
    expect(exchange.closedMs).toBeLessThan(scaledMs(2000));
    expect(engine.synthesizeCalls).toHaveLength(0);
  });

  it('judges the average past the grace: a body that starts fast and then trickles is cut once it falls below', async () => {
    const { url } = await bare({
      limits: { bodyIdleTimeoutMs: 300, minBodyBytesPerSecond: 100, bodyRateGraceMs: 300 },
    });
    // 150 bytes at once cover 1.5 s at 100 bytes/s; the trickle adds 20 bytes/s, so the average falls below the
    // minimum at about 1.9 s (150 + 20 t = 100 t), long after the grace.
    const exchange = await slowRequest(url, {
      head: trickleHead,
      body: chunk(`{${' '.repeat(149)}`),
      trickle,
      maxMs: scaledMs(5000),
    });
    expect([exchange.status, errorCode(exchange), exchange.headers.connection]).toEqual([408, 'body_timeout', 'close']);
    expect(exchange.answeredMs).toBeGreaterThanOrEqual(1450);
    expect(exchange.answeredMs).toBeLessThan(scaledMs(3000));
  });

  it('lets a steady body at four times the rate through, past the grace', async () => {
    const { url, engine } = await bare({
      limits: { bodyIdleTimeoutMs: 300, minBodyBytesPerSecond: 20, bodyRateGraceMs: 300 },
    });
    // The request's JSON padded to 150 bytes, in 8-byte chunks every 100 ms (80 bytes/s): about 2 s in all.
    const json = SPEECH_JSON.replace(/}$/, `${' '.repeat(150 - SPEECH_JSON.length)}}`);
    const frames = [...(json.match(/.{1,8}/gs) ?? []).map(chunk), '0\r\n\r\n'];
    const exchange = await slowRequest(url, {
      head: speechHead(['Transfer-Encoding: chunked', 'Connection: close']),
      body: frames[0],
      trickle: { chunk: (n) => frames[n + 1] ?? '', everyMs: 100, times: frames.length - 1 },
      maxMs: scaledMs(5000),
    });
    expect(exchange.status).toBe(200);
    expect(exchange.trickled).toBe(frames.length - 1);
    expect(exchange.answeredMs).toBeGreaterThanOrEqual(1500);
    expect(engine.synthesizeCalls).toHaveLength(1);
  });

  it('does not count time the reader holds the body back (a slow disk) against the client', async () => {
    // A reader that pauses the body for 1.5 s after its first chunk, as a slow disk would make it.
    const expired: string[] = [];
    const url = await listen(
      createServer((req, res) => {
        watchBodyArrival(req, { idleMs: 0, totalMs: 0, minBytesPerSecond: 200, rateGraceMs: 200 }, (error) => {
          expired.push(error.message);
          res.writeHead(408, { Connection: 'close' }).end();
        });
        let size = 0;
        req.on('data', (data: Buffer) => {
          if (size === 0) {
            req.pause();
            setTimeout(() => req.resume(), 1500);
          }
          size += data.length;
        });
        req.on('end', () => {
          res.writeHead(200, { Connection: 'close', 'Content-Length': String(size).length }).end(String(size));
        });
      }),
    );
    // 100 bytes with the head, then 20 bytes every 100 ms: 200 bytes/s while the client sends, and all of it is
    // sent by 1.1 s. Were the pause counted, 100 bytes in the first 0.5 s (200 bytes/s due) would be cut.
    const exchange = await slowRequest(url, {
      head: ['POST /upload HTTP/1.1', 'Host: x', 'Content-Length: 300'].join('\r\n'),
      body: 'x'.repeat(100),
      trickle: { chunk: 'x'.repeat(20), everyMs: 100, times: 10 },
      maxMs: scaledMs(4000),
    });
    expect(expired).toEqual([]);
    expect([exchange.status, exchange.body]).toEqual([200, '300']);
    expect(exchange.answeredMs).toBeGreaterThanOrEqual(1400);
  });

  it('holds no rate with minBodyBytesPerSecond 0, and rejects invalid values naming the limit', async () => {
    const engine = new FakeSpeechEngine();
    for (const [key, value] of [
      ['minBodyBytesPerSecond', -1],
      ['minBodyBytesPerSecond', Number.NaN],
      ['bodyRateGraceMs', 0],
      ['bodyRateGraceMs', 1.5],
    ] as const) {
      expect(() => createSpeechHandler({ speech: engine, auth: [KEY], limits: { [key]: value } })).toThrow(
        new RegExp(`limits\\.${key}`),
      );
    }
    expect(() =>
      createSpeechHandler({
        speech: engine,
        auth: [KEY],
        limits: { minBodyBytesPerSecond: '1024' as unknown as number },
      }),
    ).toThrow(InvalidOptionTypeError);
    const { url } = await bare({ limits: { bodyIdleTimeoutMs: 300, minBodyBytesPerSecond: 0, bodyRateGraceMs: 200 } });
    const exchange = await slowRequest(url, { head: trickleHead, body: chunk('{'), trickle, maxMs: 1200 });
    // Still trickling when the client gave up: no answer, no close.
    expect(exchange.status).toBe(0);
    expect(exchange.closedMs).toBeUndefined();
    expect(exchange.trickled).toBeGreaterThan(15);
  });
});

describe('per-client request cap', () => {
  it('answers 429 client_request_limit past maxConcurrentRequestsPerClient, keyed by API key', async () => {
    const { url, engine } = await bare({ limits: { maxConcurrentRequestsPerClient: 2, retryAfterSeconds: 3 } });
    const releases: (() => void)[] = [];
    engine.onSynthesize = () =>
      new Promise((resolve) => {
        releases.push(() => resolve(fakeSpeechStream([Buffer.from('ID3x')])));
      });
    const speak = (key: string) =>
      documented(request(url).post('/v1/speech').set('Authorization', `Bearer ${key}`).send(JSON.parse(SPEECH_JSON)));
    const held = [speak(KEY), speak(KEY)];
    await vi.waitFor(() => expect(engine.synthesizeCalls).toHaveLength(2), { timeout: scaledMs(1000) });
    const over = await speak(KEY);
    expect(over.status).toBe(429);
    expect(over.headers['retry-after']).toBe('3');
    expect(over.body.error).toMatchObject({ type: 'rate_limit_error', code: 'client_request_limit' });
    // Another key is another client.
    const other = await documented(request(url).get('/v1/voices').set('Authorization', `Bearer ${OTHER_KEY}`));
    expect(other.status).toBe(200);
    for (const release of releases) release();
    expect((await Promise.all(held)).map((res) => res.status)).toEqual([200, 200]);
    expect((await documented(request(url).get('/v1/voices').set('Authorization', `Bearer ${KEY}`))).status).toBe(200);
  });

  it('keys by address without auth, and frees a slot when its connection dies', async () => {
    const { url, engine } = await bare({ auth: false, limits: { maxConcurrentRequestsPerClient: 1 } });
    const voices = ['GET /v1/voices HTTP/1.1', 'Host: x', 'Connection: close'].join('\r\n');
    // A body that never finishes holds the one slot of 127.0.0.1 until the client gives up.
    const holder = slowRequest(url, { head: speechHead(['Content-Length: 100']), body: '{', maxMs: 400 });
    await new Promise((resolve) => setTimeout(resolve, 100));
    const sameAddress = await slowRequest(url, { head: voices, maxMs: scaledMs(2000) });
    expect(sameAddress.status).toBe(429);
    expect(errorCode(sameAddress)).toBe('client_request_limit');
    const otherAddress = await slowRequest(url, { head: voices, maxMs: scaledMs(2000), localAddress: '127.0.0.2' });
    expect(otherAddress.status).toBe(200);
    expect((await holder).closedMs).toBeUndefined();
    await vi.waitFor(
      async () => expect((await slowRequest(url, { head: voices, maxMs: scaledMs(2000) })).status).toBe(200),
      { timeout: scaledMs(1000) },
    );
    expect(engine.synthesizeCalls).toHaveLength(0);
  });

  it('keeps normal clients answered while 64 slow clients trickle their bodies, and cuts the slow ones', async () => {
    const { url } = await bare({ limits: { bodyIdleTimeoutMs: 500, bodyTimeoutMs: 1200 } });
    const started = performance.now();
    const slow = Array.from({ length: 64 }, () =>
      slowRequest(url, {
        head: speechHead(['Transfer-Encoding: chunked']),
        body: chunk('{'),
        trickle: { chunk: chunk(' '), everyMs: 200, times: 100 },
        maxMs: scaledMs(5000),
      }),
    );
    // Normal clients, with their own key, while the slow ones are connected and trickling.
    const normal: number[] = [];
    while (performance.now() - started < 1000) {
      const [voices, speech] = await Promise.all([
        documented(request(url).get('/v1/voices').set('Authorization', `Bearer ${OTHER_KEY}`)),
        documented(
          request(url).post('/v1/speech').set('Authorization', `Bearer ${OTHER_KEY}`).send(JSON.parse(SPEECH_JSON)),
        ),
      ]);
      normal.push(voices.status, speech.status);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const results = await Promise.all(slow);
    expect(normal.length).toBeGreaterThan(4);
    expect(new Set(normal)).toEqual(new Set([200]));
    const statuses = results.map((result) => `${result.status} ${errorCode(result)}`);
    // The default per-client share of 64 slots is 8: those are cut by the body deadline, the rest refused at once.
    expect(statuses.filter((s) => s === '408 body_timeout')).toHaveLength(8);
    expect(statuses.filter((s) => s === '429 client_request_limit')).toHaveLength(56);
    for (const result of results) {
      expect(result.headers.connection).toBe('close');
      expect(result.closedMs).toBeDefined();
      if (result.status === 408) expect(result.closedMs).toBeLessThan(scaledMs(2500));
      else expect(result.closedMs).toBeLessThan(scaledMs(1000));
    }
  });
});

describe('refused requests with bodies still arriving', () => {
  it('answers 401 and closes the connection promptly while an endless chunked body keeps coming', async () => {
    const { url } = await bare();
    const exchange = await slowRequest(url, {
      head: [
        'POST /v1/speech HTTP/1.1',
        'Host: x',
        'Content-Type: application/json',
        'Transfer-Encoding: chunked',
      ].join('\r\n'),
      body: chunk('{"model":'),
      trickle: { chunk: chunk('x'.repeat(1024)), everyMs: 10, times: 100_000 },
      maxMs: scaledMs(3000),
    });
    expect(exchange.status).toBe(401);
    expect(exchange.headers.connection).toBe('close');
    expectRawDocumented(exchange, 'POST', '/v1/speech');
    expect(exchange.closedMs).toBeLessThan(scaledMs(1000));
  });

  it('closes after 415, 413 by Content-Length and a GET whose body keeps coming; keeps it after a complete body', async () => {
    const { url } = await bare({ limits: { maxJsonBytes: 1024 } });
    const trickle = { chunk: chunk('x'), everyMs: 20, times: 1000 };
    const wrongType = await slowRequest(url, {
      head: ['POST /v1/speech HTTP/1.1', 'Host: x', `Authorization: Bearer ${KEY}`, 'Content-Type: text/plain']
        .concat('Transfer-Encoding: chunked')
        .join('\r\n'),
      body: chunk('hello'),
      trickle,
      maxMs: scaledMs(3000),
    });
    expect([wrongType.status, wrongType.headers.connection]).toEqual([415, 'close']);
    expect(wrongType.closedMs).toBeLessThan(scaledMs(1000));
    const tooLarge = await slowRequest(url, {
      head: speechHead(['Content-Length: 100000']),
      body: '{',
      maxMs: scaledMs(3000),
    });
    expect([tooLarge.status, tooLarge.headers.connection]).toEqual([413, 'close']);
    expect(tooLarge.closedMs).toBeLessThan(scaledMs(1000));
    const getWithBody = await slowRequest(url, {
      head: ['GET /v1/voices HTTP/1.1', 'Host: x', `Authorization: Bearer ${KEY}`, 'Transfer-Encoding: chunked'].join(
        '\r\n',
      ),
      trickle,
      maxMs: scaledMs(3000),
    });
    expect([getWithBody.status, getWithBody.headers.connection]).toEqual([200, 'close']);
    expect(getWithBody.closedMs).toBeLessThan(scaledMs(1000));
    // A refused body that had fully arrived costs nothing to skip: the connection stays for the next request.
    const complete = await slowRequest(url, {
      head: ['POST /v1/speech HTTP/1.1', 'Host: x', `Authorization: Bearer ${KEY}`, 'Content-Type: text/plain']
        .concat('Content-Length: 5')
        .join('\r\n'),
      body: 'hello',
      maxMs: 500,
    });
    expect(complete.status).toBe(415);
    expect(complete.headers.connection).not.toBe('close');
    expect(complete.closedMs).toBeUndefined();
  });
});

describe('createSpeechServer receive deadlines', () => {
  /** The fake engine is all the /v1 routes need; the probes are not called here. */
  async function serve(options: { headersTimeoutMs?: number; limits?: SpeechHandlerOptions['limits'] } = {}) {
    const served = createSpeechServer({
      speech: new FakeSpeechEngine() as unknown as Speech,
      auth: [KEY],
      ...options,
    });
    speechServers.push(served);
    const address = await served.listen(0, '127.0.0.1');
    return { served, url: `http://127.0.0.1:${address.port}` };
  }

  it('defaults to a 10 s headers deadline, and a receive deadline past the body deadline', async () => {
    const { served } = await serve();
    expect(served.server.headersTimeout).toBe(10_000);
    expect(served.server.requestTimeout).toBe(10_000 + 60_000 + 5000);
    const custom = await serve({ headersTimeoutMs: 2000, limits: { bodyTimeoutMs: 0 } });
    expect([custom.served.server.headersTimeout, custom.served.server.requestTimeout]).toEqual([2000, 0]);
    expect(() => createSpeechServer({ speech: {} as Speech, auth: [KEY], headersTimeoutMs: -5 })).toThrow(
      InvalidOptionValueError,
    );
  });

  it('cuts a client that sends its headers slowly soon after headersTimeoutMs', async () => {
    const { url } = await serve({ headersTimeoutMs: 500 });
    const exchange = await slowRequest(url, {
      head: 'GET /v1/voices HTTP/1.1\r\nHost: x\r\n',
      headUnfinished: true,
      trickle: { chunk: 'X-Slow: y\r\n', everyMs: 100, times: 100 },
      maxMs: scaledMs(4000),
    });
    expect(exchange.status).toBe(408);
    expect(exchange.closedMs).toBeGreaterThanOrEqual(450);
    expect(exchange.closedMs).toBeLessThan(scaledMs(1500));
  });

  it('takes headersTimeoutMs from the serve config, and names a bad value', () => {
    expect(parseServeConfig({ http: { headersTimeoutMs: 5000 } }).http).toEqual({ headersTimeoutMs: 5000 });
    expect(() => parseServeConfig({ http: { headerTimeoutMs: 5000 } })).toThrow(/http\.headerTimeoutMs/);
  });
});

describe('createSpeechServer forceStop', () => {
  it('answers a request arriving on a kept-alive connection in its grace 503 shutting_down instead of a reset', async () => {
    const served = createSpeechServer({ speech: new FakeSpeechEngine() as unknown as Speech, auth: [KEY] });
    speechServers.push(served);
    const { port } = await served.listen(0, '127.0.0.1');
    // One connection, kept alive between the two requests.
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const get = () =>
      new Promise<{ status: number; body: string; connection: string | undefined }>((resolve, reject) => {
        const headers = { Authorization: `Bearer ${KEY}` };
        httpRequest({ host: '127.0.0.1', port, path: '/v1/voices', agent, headers }, (res) => {
          let body = '';
          res.on('data', (chunk: Buffer) => {
            body += chunk;
          });
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body, connection: res.headers.connection }));
        })
          .on('error', reject)
          .end();
      });
    try {
      expect((await get()).status).toBe(200);
      const stopped = served.forceStop();
      await new Promise((resolve) => setTimeout(resolve, 100));
      const late = await get();
      expect(late).toMatchObject({ status: 503, connection: 'close' });
      expect(JSON.parse(late.body).error.code).toBe('shutting_down');
      await stopped;
      // Then nothing more is accepted.
      await expect(get()).rejects.toThrow(/ECONNREFUSED|ECONNRESET|socket hang up/u);
    } finally {
      agent.destroy();
    }
  });
});
