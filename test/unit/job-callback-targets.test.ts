// Where job callbacks may go (server-side request forgery): https only unless allowed; hosts resolving to loopback,
// private or other refused addresses refused when the job is queued and again at each delivery; the connection made to
// the address that was checked (a name that re-resolves elsewhere gains nothing); redirects not followed;
// `callbackHosts` letting chosen hosts through. Every listener is on loopback, and the lookups that name other
// addresses are this test's own functions: nothing here connects off this machine.
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import request from 'supertest';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { scaledMs } from '../../scripts/lib/machine-speed.mjs';
import {
  CallbackUrlRefusedError,
  createJobQueue,
  createSpeechHandler,
  InvalidOptionValueError,
  type JobQueue,
} from '../../src/index.js';
import type { CallbackLookup } from '../../src/jobs/callback-target.js';
import type { JobQueueOptions } from '../../src/jobs/options.js';
import { FakeSpeechEngine } from '../helpers/fake-speech-engine.js';
import { makeSelfSigned } from '../helpers/self-signed.js';

const secret = 'a-callback-secret-of-some-length';

/** A receiver on one loopback address that records every request it gets. */
interface Receiver {
  server: Server;
  port: number;
  hits: { url: string; host: string | undefined }[];
}

async function receiver(host: string, answer = (_hits: number) => ({ status: 204, location: '' })): Promise<Receiver> {
  const hits: Receiver['hits'] = [];
  const server = createServer((req, res) => {
    hits.push({ url: req.url ?? '', host: req.headers.host });
    req.resume();
    req.on('end', () => {
      const { status, location } = answer(hits.length);
      res.statusCode = status;
      if (location) res.setHeader('location', location);
      res.end();
    });
  });
  server.listen(0, host);
  await once(server, 'listening');
  return { server, port: (server.address() as AddressInfo).port, hits };
}

let v4: Receiver;
let v4b: Receiver; // 127.0.0.3: where a rebinding or a redirect would try to send the callback
let v6: Receiver | undefined;
let queues: JobQueue[] = [];

beforeAll(async () => {
  v4 = await receiver('127.0.0.1');
  v4b = await receiver('127.0.0.3');
  v6 = await receiver('::1').catch(() => undefined); // a machine without IPv6 loopback skips those spellings
});
afterAll(() => {
  for (const r of [v4, v4b, v6]) r?.server.close();
});
afterEach(async () => {
  await Promise.all(queues.map((queue) => queue.close()));
  queues = [];
});

function queueWith(options: Partial<JobQueueOptions> & { callbacks?: JobQueueOptions['callbacks'] } = {}): JobQueue {
  const queue = createJobQueue({
    speech: new FakeSpeechEngine(),
    progressIntervalMs: 0,
    ...options,
    callbacks: { secret, backoffMs: 10, attempts: 2, timeoutMs: 2000, ...options.callbacks },
  });
  queues.push(queue);
  return queue;
}

const enqueue = (queue: JobQueue, callbackUrl: string) =>
  queue.enqueue({ audio: Buffer.alloc(64, 1), options: { model: 'svc-stt-1' }, callbackUrl });

/** A lookup that answers from `answers` in turn (the last one again once they run out) and counts its calls. */
function scriptedLookup(...answers: string[][]): CallbackLookup & { calls: string[] } {
  const calls: string[] = [];
  const lookup = async (hostname: string) => {
    calls.push(hostname);
    const addresses = answers[Math.min(calls.length, answers.length) - 1] ?? [];
    return addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
  };
  return Object.assign(lookup, { calls });
}

describe('callback URLs refused when the job is queued', () => {
  const loopbackSpellings = (port: number) => [
    `localhost:${port}`,
    `LOCALHOST:${port}`,
    `localhost.:${port}`,
    `127.0.0.1:${port}`,
    `127.1:${port}`,
    `127.0.1:${port}`,
    `0x7f.0.0.1:${port}`,
    `0x7f000001:${port}`,
    `2130706433:${port}`,
    `017700000001:${port}`,
    `0177.0.0.1:${port}`,
    `[::ffff:127.0.0.1]:${port}`,
    `[::ffff:7f00:1]:${port}`,
    `0.0.0.0:${port}`,
    `0:${port}`,
  ];

  it('refuses every spelling of loopback (IPv4), over https and over allowed http, and the receiver hears nothing', async () => {
    const queue = queueWith({ callbacks: { allowHttp: true } });
    for (const host of loopbackSpellings(v4.port)) {
      for (const scheme of ['https', 'http']) {
        const url = `${scheme}://${host}/hook`;
        const error = await enqueue(queue, url).catch((e: unknown) => e);
        expect(error, url).toBeInstanceOf(CallbackUrlRefusedError);
        expect((error as Error).message, url).toMatch(
          // glibc does not resolve localhost. (with its dot) at all: refused as a name without an address.
          /^callbackUrl must be .* ((loopback|unspecified) address|resolves \(localhost\.)/,
        );
      }
    }
    await delay(50);
    expect(v4.hits).toEqual([]);
    expect(await queue.list()).toEqual([]);
  });

  it('refuses the IPv6 spellings of loopback and unspecified', async () => {
    const queue = queueWith({ callbacks: { allowHttp: true } });
    const port = v6?.port ?? 9;
    for (const host of ['[::1]', '[0:0:0:0:0:0:0:1]', '[0000::0001]', '[::]', '[::ffff:0.0.0.0]']) {
      const error = await enqueue(queue, `http://${host}:${port}/hook`).catch((e: unknown) => e);
      expect(error, host).toBeInstanceOf(CallbackUrlRefusedError);
    }
    await delay(50);
    expect(v6?.hits ?? []).toEqual([]);
  });

  it('refuses names that resolve to a refused address, even one among public ones, naming both', async () => {
    const lookup = scriptedLookup(['93.184.215.14', '10.0.0.7']);
    const queue = queueWith({ callbacks: { lookup } });
    const error = await enqueue(queue, 'https://hooks.example.com/x').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CallbackUrlRefusedError);
    expect((error as Error).message).toContain('hooks.example.com (10.0.0.7) is a private address');
    for (const address of ['169.254.169.254', 'fd00:ec2::254', '::ffff:192.168.0.1', 'ff02::1', '100.100.100.200']) {
      const each = await enqueue(
        queueWith({ callbacks: { lookup: scriptedLookup([address]) } }),
        'https://metadata.example/',
      ).catch((e: unknown) => e);
      expect(each, address).toBeInstanceOf(CallbackUrlRefusedError);
    }
  });

  it('refuses plain http unless allowed, before any lookup; a name that does not resolve; credentials in the URL', async () => {
    const lookup = scriptedLookup(['93.184.215.14']);
    const queue = queueWith({ callbacks: { lookup } });
    await expect(enqueue(queue, 'http://hooks.example.com/x')).rejects.toThrow(/an https:\/\/ URL/);
    expect(lookup.calls).toEqual([]);
    const failing = queueWith({
      callbacks: {
        lookup: async () => {
          throw Object.assign(new Error('getaddrinfo ENOTFOUND nowhere.invalid'), { code: 'ENOTFOUND' });
        },
      },
    });
    await expect(enqueue(failing, 'https://nowhere.invalid/')).rejects.toThrow(
      /resolves \(nowhere\.invalid: getaddrinfo/,
    );
    const slow = queueWith({ callbacks: { timeoutMs: 100, lookup: () => new Promise(() => undefined) } });
    await expect(enqueue(slow, 'https://slow.example/')).rejects.toThrow(/no answer in 100 ms/);
    await expect(enqueue(queue, 'https://user:pw@hooks.example.com/')).rejects.toThrow(/without credentials/);
  });

  it('answers 400 invalid_callback_url over HTTP, naming callback_url and the address class', async () => {
    const jobs = queueWith();
    const app = createSpeechHandler({ speech: new FakeSpeechEngine(), jobs, auth: false });
    for (const url of [`https://127.0.0.1:${v4.port}/`, 'https://[::1]/', 'http://8.8.8.8/']) {
      const answer = await request(app)
        .post('/v1/jobs/transcriptions')
        .field('model', 'svc-stt-1')
        .field('callback_url', url)
        .attach('file', Buffer.from('RIFF....WAVEfmt '), 'a.wav');
      expect(answer.status, url).toBe(400);
      expect(answer.body.error, url).toMatchObject({ code: 'invalid_callback_url', param: 'callback_url' });
      expect(answer.body.error.message, url).toMatch(/^callback_url must be /);
    }
    expect(v4.hits).toEqual([]);
    const secretive = await request(app)
      .post('/v1/jobs/transcriptions')
      .field('model', 'svc-stt-1')
      .field('callback_url', 'https://hook-user:hunter2@hooks.example.com/x')
      .attach('file', Buffer.from('RIFF....WAVEfmt '), 'a.wav');
    expect(secretive.status).toBe(400);
    expect(secretive.body.error.message).toContain('without credentials');
    expect(JSON.stringify(secretive.body)).not.toContain('hunter2');
  });
});

describe('callbackHosts', () => {
  it('lets a listed name, wildcard or range through, over http too, and delivers to it', async () => {
    for (const entry of ['localhost', '127.0.0.1', '127.0.0.0/8', '::ffff:127.0.0.1/128']) {
      const hits = v4.hits.length;
      const queue = queueWith({ callbackHosts: [entry] });
      const host = entry === 'localhost' ? 'localhost' : '127.0.0.1';
      const lookup = entry === 'localhost' ? scriptedLookup(['127.0.0.1']) : undefined;
      const listed = lookup ? queueWith({ callbackHosts: [entry], callbacks: { lookup } }) : queue;
      const job = await enqueue(listed, `http://${host}:${v4.port}/hook`);
      await listed.wait(job.id);
      await expect.poll(() => v4.hits.length, { timeout: scaledMs(3000) }).toBe(hits + 1);
      expect(v4.hits.at(-1)?.host, entry).toBe(`${host}:${v4.port}`);
    }
    const wildcard = queueWith({
      callbackHosts: ['*.hooks.internal'],
      callbacks: { lookup: scriptedLookup(['127.0.0.1']) },
    });
    const hits = v4.hits.length;
    const job = await enqueue(wildcard, `http://a.b.hooks.internal:${v4.port}/w`);
    await wildcard.wait(job.id);
    await expect.poll(() => v4.hits.length, { timeout: scaledMs(3000) }).toBe(hits + 1);
    expect(v4.hits.at(-1)).toEqual({ url: '/w', host: `a.b.hooks.internal:${v4.port}` });
    // The wildcard covers subdomains only, and a listed range only its own addresses.
    await expect(enqueue(wildcard, `http://hooks.internal:${v4.port}/`)).rejects.toThrow(CallbackUrlRefusedError);
    const narrow = queueWith({ callbackHosts: ['127.0.0.1'] });
    await expect(enqueue(narrow, `https://127.0.0.3:${v4b.port}/`)).rejects.toThrow(/127\.0\.0\.3 is a loopback/);
  });

  it('names a bad entry by its index', () => {
    for (const bad of [['ok.example', 'not a host'], ['10.0.0.0/40'], ['*.'], [''], ['127.1']]) {
      expect(() => createJobQueue({ speech: new FakeSpeechEngine(), callbackHosts: bad }), String(bad)).toThrow(
        InvalidOptionValueError,
      );
      expect(() => createJobQueue({ speech: new FakeSpeechEngine(), callbackHosts: bad })).toThrow(
        /callbackHosts\[\d\]/,
      );
    }
    expect(() => createJobQueue({ speech: new FakeSpeechEngine(), callbackHosts: 'x' as never })).toThrow(
      /callbackHosts must be an array/,
    );
  });
});

describe('each delivery', () => {
  it('connects to the address it checked: a name re-resolving elsewhere is never looked up again for the connection', async () => {
    // Queued: 127.0.0.1 (listed). Delivery's check: 127.0.0.1 again. Any further lookup would answer 127.0.0.3,
    // where a second resolution by the HTTP client would land.
    const lookup = scriptedLookup(['127.0.0.1'], ['127.0.0.1'], ['127.0.0.3']);
    const queue = queueWith({ callbackHosts: ['127.0.0.1/32'], callbacks: { lookup, allowHttp: true } });
    const hits = v4.hits.length;
    const job = await enqueue(queue, `http://rebind.example:${v4.port}/hook`);
    await queue.wait(job.id);
    await expect.poll(() => v4.hits.length, { timeout: scaledMs(3000) }).toBe(hits + 1);
    expect(lookup.calls).toEqual(['rebind.example', 'rebind.example']);
    expect(v4b.hits).toEqual([]);
  });

  it('checks again at delivery: a name that now resolves to a refused address gets nothing', async () => {
    const lookup = scriptedLookup(['127.0.0.1'], ['127.0.0.3']);
    const queue = queueWith({ callbackHosts: ['127.0.0.1/32'], callbacks: { lookup, allowHttp: true } });
    const job = await enqueue(queue, `http://rebind.example:${v4b.port}/hook`);
    await queue.wait(job.id);
    // Both tries (attempts 2) look up, are refused, and never connect.
    await expect.poll(() => lookup.calls.length, { timeout: scaledMs(3000) }).toBe(3);
    await delay(50);
    expect(v4b.hits).toEqual([]);
  });

  it('does not follow redirects', async () => {
    const redirecting = await receiver('127.0.0.1', () => ({
      status: 307,
      location: `http://127.0.0.3:${v4b.port}/stolen`,
    }));
    try {
      const queue = queueWith({ callbackHosts: ['127.0.0.0/8'] });
      const job = await enqueue(queue, `http://127.0.0.1:${redirecting.port}/hook`);
      await queue.wait(job.id);
      await expect.poll(() => redirecting.hits.length, { timeout: scaledMs(3000) }).toBe(2);
      await delay(50);
      expect(v4b.hits).toEqual([]);
    } finally {
      redirecting.server.close();
    }
  });

  it('verifies the receiver certificate for the URL host name (SNI), through the pinned address', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'voxmill-callback-tls-'));
    try {
      const { certPath, keyPath } = await makeSelfSigned(dir);
      const names: string[] = [];
      let requests = 0;
      const server = createTlsServer(
        {
          cert: readFileSync(certPath),
          key: readFileSync(keyPath),
          SNICallback: (name, done) => {
            names.push(name);
            done(null);
          },
        },
        (_req, res) => {
          requests++;
          res.end();
        },
      );
      server.listen(0, '127.0.0.1');
      await once(server, 'listening');
      const { port } = server.address() as AddressInfo;
      const queue = queueWith({
        callbackHosts: ['hooks.internal'],
        callbacks: { lookup: scriptedLookup(['127.0.0.1']) },
      });
      const job = await enqueue(queue, `https://hooks.internal:${port}/hook`);
      await queue.wait(job.id);
      // The self-signed certificate is for localhost, not hooks.internal, and no CA trusts it: refused, twice.
      await expect.poll(() => names.length, { timeout: scaledMs(3000) }).toBe(2);
      expect(names).toEqual(['hooks.internal', 'hooks.internal']);
      expect(requests).toBe(0);
      server.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
