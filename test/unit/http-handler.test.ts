// The handler in each host, against an engine that records calls (no addon, no model): routes, fall-through,
// auth, request ids, form and JSON parsing, limits, error mapping. Every response is checked against openapi.json.
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import express from 'express';
import request from 'supertest';
import { afterEach, describe, expect, it, vi } from 'vitest';
// Waits for the handler's work grow with this machine's slowdown; requestTimeoutMs, its own timer, does not.
import { scaledMs } from '../../scripts/lib/machine-speed.mjs';
import {
  AudioDecodeError,
  AudioTooLongError,
  createSpeechHandler,
  HttpError,
  InvalidOptionTypeError,
  InvalidOptionValueError,
  ModelNotFoundError,
  QueueFullError,
  type RequestLogEntry,
  type SpeechHandlerOptions,
  SynthesisError,
  VoiceNotFoundError,
} from '../../src/index.js';
import { AUDIO_HEADS, FakeSpeechEngine, fakeSpeechStream } from '../helpers/fake-speech-engine.js';
import { HOST_KINDS, type HostKind, makeHost, type TestHost } from '../helpers/http-apps.js';
import { documented } from '../helpers/openapi.js';

const KEY = 'sk-test-1';
const auth = (test: request.Test) => test.set('Authorization', `Bearer ${KEY}`);

const open: TestHost[] = [];
async function start(kind: HostKind, options: Partial<SpeechHandlerOptions> = {}) {
  const engine = new FakeSpeechEngine();
  const host = makeHost(kind, { speech: engine, auth: [KEY], ...options });
  await new Promise<void>((resolve) => host.server.listen(0, '127.0.0.1', resolve));
  open.push(host);
  const url = `http://127.0.0.1:${(host.server.address() as AddressInfo).port}`;
  const agent = request(url);
  const path = (p: string) => `${host.mount}${p}`;
  const check = (test: request.Test) => documented(test, host.mount);
  return { host, engine, agent, url, path, check };
}
afterEach(async () => {
  for (const host of open.splice(0)) {
    host.server.closeAllConnections();
    await new Promise((resolve) => host.server.close(resolve));
  }
});

describe.each(HOST_KINDS)('in %s', (kind) => {
  it('serves the voices, the OpenAPI document, transcriptions and speech', async () => {
    const { agent, path, check, engine } = await start(kind);
    const voices = await check(auth(agent.get(path('/v1/voices'))));
    expect(voices.status).toBe(200);
    expect(voices.body.data[0].id).toBe('en_US-fake');

    const doc = await check(auth(agent.get(path('/v1/openapi.json'))));
    expect(doc.body.openapi).toBe('3.1.0');

    const transcription = await check(
      auth(agent.post(path('/v1/transcriptions')))
        .field('model', 'svc-stt-1-flash')
        .attach('file', AUDIO_HEADS.wav, 'a.wav'),
    );
    expect(transcription.status).toBe(200);
    expect(transcription.body).toEqual({
      text: 'hello',
      language: 'en',
      duration: 1,
      segments: [{ id: 0, start: 0, end: 1, text: 'hello' }],
    });
    expect(engine.transcribeCalls[0]?.input).toEqual(AUDIO_HEADS.wav);
    // The handler's per-request audio limit (2 hours by default) reaches the engine as the decoding limit.
    expect(engine.transcribeCalls[0]?.options).toMatchObject({
      model: 'svc-stt-1-flash',
      timestamps: 'segment',
      maxDurationSeconds: 7200,
    });

    const speech = await check(
      auth(agent.post(path('/v1/speech'))).send({ model: 'svc-tts-1', voice: 'en_US-fake', input: 'Hi.' }),
    );
    expect(speech.status).toBe(200);
    expect(speech.headers['content-type']).toBe('audio/mpeg');
    expect(speech.headers['transfer-encoding']).toBe('chunked');
    expect(speech.headers['x-request-id']).toMatch(/^req_[0-9a-f]{32}$/);
    expect(Buffer.from(speech.body).toString()).toBe('ID3fakeaudio');
    expect(engine.synthesizeCalls[0]).toMatchObject({ model: 'svc-tts-1', voice: 'en_US-fake', input: 'Hi.' });
  });

  it('answers a known path with the wrong method with 405 and Allow', async () => {
    const { agent, path, check } = await start(kind);
    const del = await check(auth(agent.delete(path('/v1/voices'))));
    expect(del.status).toBe(405);
    expect(del.headers.allow).toBe('GET, HEAD');
    const get = await check(auth(agent.get(path('/v1/speech'))));
    expect(get.status).toBe(405);
    expect(get.headers.allow).toBe('POST');
    expect(get.body.error.code).toBe('method_not_allowed');
    const head = await check(auth(agent.head(path('/v1/voices'))));
    expect(head.status).toBe(200);
  });

  it('leaves paths it does not own to the host', async () => {
    const { agent, path, check } = await start(kind);
    if (kind === 'bare http') {
      const missing = await check(auth(agent.get('/v1/embeddings')));
      expect(missing.status).toBe(404);
      expect(missing.body.error.code).toBe('not_found');
      return;
    }
    const own = await agent.get('/v1/embeddings');
    expect(own.body).toEqual({ host: 'own route' });
    expect(own.headers['x-request-id']).toBeUndefined();
    const unknown = await agent.get(path('/v1/nothing'));
    expect(unknown.status).toBe(404);
    expect(unknown.body).toEqual({ host: 'not found' });
    // The host's own route still gets its body: the handler never read it.
    const echo = await agent.post('/echo').set('Content-Type', 'text/plain').send('untouched body');
    expect(echo.body).toEqual({ received: 'untouched body' });
  });

  it('puts X-Request-Id on every response, echoing a well-formed one', async () => {
    const { agent, path, check } = await start(kind);
    const ok = await check(auth(agent.get(path('/v1/voices'))).set('X-Request-Id', 'client-42.a:b'));
    expect(ok.headers['x-request-id']).toBe('client-42.a:b');
    const denied = await check(agent.get(path('/v1/voices')).set('X-Request-Id', 'client-43'));
    expect(denied.headers['x-request-id']).toBe('client-43');
    expect(denied.body.error.request_id).toBe('client-43');
    const stream = await check(
      auth(agent.post(path('/v1/speech')))
        .set('X-Request-Id', 'client-44')
        .send({ model: 'svc-tts-1', voice: 'en_US-fake', input: 'Hi.' }),
    );
    expect(stream.headers['x-request-id']).toBe('client-44');
    for (const bad of ['has space', '-leading-dash', 'x'.repeat(129), 'a%C3%A9', 'a/b']) {
      const res = await check(auth(agent.get(path('/v1/voices'))).set('X-Request-Id', bad));
      expect(res.headers['x-request-id'], bad).toMatch(/^req_[0-9a-f]{32}$/);
    }
    const a = await check(auth(agent.get(path('/v1/voices'))));
    const b = await check(auth(agent.get(path('/v1/voices'))));
    expect(a.headers['x-request-id']).not.toBe(b.headers['x-request-id']);
  });
});

describe('authentication', () => {
  it('answers 401 with a Bearer challenge for a missing, malformed or wrong key, on every route', async () => {
    const { agent, check, engine } = await start('express5');
    for (const [method, route] of [
      ['get', '/v1/voices'],
      ['get', '/v1/openapi.json'],
      ['post', '/v1/speech'],
      ['post', '/v1/transcriptions'],
    ] as const) {
      const res = await check(agent[method](route));
      expect(res.status).toBe(401);
      expect(res.headers['www-authenticate']).toBe('Bearer realm="voxmill"');
      expect(res.body.error).toMatchObject({ type: 'authentication_error', code: 'missing_api_key', param: null });
    }
    const wrong = await check(agent.get('/v1/voices').set('Authorization', 'Bearer sk-test-2'));
    expect(wrong.body.error.code).toBe('invalid_api_key');
    expect(wrong.headers['www-authenticate']).toContain('error="invalid_token"');
    for (const header of ['Basic c2stdGVzdC0xOg==', 'Bearer', `Bearer ${KEY} extra`, KEY]) {
      const res = await check(agent.get('/v1/voices').set('Authorization', header));
      expect(res.status, header).toBe(401);
      expect(res.body.error.code).toBe('invalid_authorization_header');
    }
    expect(engine.synthesizeCalls).toHaveLength(0);
  });

  it('accepts any configured key, with the scheme in any case', async () => {
    const { agent, check } = await start('express5', { auth: ['first', KEY] });
    expect((await check(agent.get('/v1/voices').set('Authorization', `bearer ${KEY}`))).status).toBe(200);
    expect((await check(agent.get('/v1/voices').set('Authorization', 'Bearer first'))).status).toBe(200);
    expect((await check(agent.get('/v1/voices').set('Authorization', 'Bearer firs'))).status).toBe(401);
  });

  it('asks an authorize function, which gets the token and the request', async () => {
    const seen: string[] = [];
    const { agent, check } = await start('express5', {
      auth: async (token, req) => {
        seen.push(`${token} ${req.headers['x-tenant']}`);
        if (token === 'boom') throw new Error('auth backend down');
        return token === 'good';
      },
    });
    expect(
      (await check(agent.get('/v1/voices').set('Authorization', 'Bearer good').set('X-Tenant', 't1'))).status,
    ).toBe(200);
    expect((await check(agent.get('/v1/voices').set('Authorization', 'Bearer bad'))).status).toBe(401);
    const failed = await check(agent.get('/v1/voices').set('Authorization', 'Bearer boom'));
    expect(failed.status).toBe(500);
    expect(failed.body.error.message).not.toContain('auth backend down');
    expect(seen).toEqual(['good t1', 'bad undefined', 'boom undefined']);
  });

  it('serves without a key only when auth is explicitly false', async () => {
    const { agent, check } = await start('express5', { auth: false });
    expect((await check(agent.get('/v1/voices'))).status).toBe(200);
    const speech = new FakeSpeechEngine();
    expect(() => createSpeechHandler({ speech } as unknown as SpeechHandlerOptions)).toThrow(InvalidOptionTypeError);
    expect(() => createSpeechHandler({ speech } as unknown as SpeechHandlerOptions)).toThrow(/^auth must be/);
    expect(() => createSpeechHandler({ speech, auth: [] })).toThrow(InvalidOptionValueError);
    expect(() => createSpeechHandler({ speech, auth: ['has space'] })).toThrow(/auth\[0\]/);
    expect(() => createSpeechHandler({ speech, auth: true } as unknown as SpeechHandlerOptions)).toThrow(/auth/);
  });

  it('answers an upload without a key with 401, never passing it to the engine', async () => {
    const { agent, check, engine } = await start('express5');
    const res = await check(
      agent.post('/v1/transcriptions').field('model', 'svc-stt-1').attach('file', Buffer.alloc(2_000_000), 'a.wav'),
    );
    expect(res.status).toBe(401);
    expect(engine.transcribeCalls).toHaveLength(0);
  });
});

describe('errors', () => {
  it("passes HttpErrors to the host's error middleware with errors: 'next'", async () => {
    const { agent, host } = await start('express5', { errors: 'next' });
    const res = await auth(agent.post('/v1/speech')).send({ model: 'svc-tts-1', voice: 'v' });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ host: 'error handler', error: { code: 'missing_parameter', param: 'input' } });
    expect(host.hostErrors[0]).toBeInstanceOf(HttpError);
    expect((host.hostErrors[0] as HttpError).status).toBe(400);
    expect(res.headers['x-request-id']).toBe((host.hostErrors[0] as HttpError).requestId);
    const denied = await agent.get('/v1/voices');
    expect(denied.status).toBe(401);
    expect(denied.headers['www-authenticate']).toBe('Bearer realm="voxmill"');
    expect(denied.body.error.code).toBe('missing_api_key');
  });

  it("writes its errors itself without a next, even with errors: 'next'", async () => {
    const { agent, check } = await start('bare http', { errors: 'next' });
    const res = await check(auth(agent.post('/v1/speech')).send({ model: 'svc-tts-1', voice: 'v' }));
    expect(res.body.error.param).toBe('input');
  });

  it.each([
    [new QueueFullError('queue of model svc-tts-1 is full (16 waiting)'), 429, 'queue_full', null],
    [new VoiceNotFoundError('x', 'no installed voice has id "x"'), 400, 'voice_not_found', 'voice'],
    [new InvalidOptionValueError('sampleRate', 'one of 8000, 16000', 1), 400, 'invalid_value', 'sample_rate'],
    [new InvalidOptionValueError('input', 'at most 5000 characters', 'x'), 400, 'invalid_value', 'input'],
    [new ModelNotFoundError('voice x is not installed; npx voxmill models pull x'), 503, 'model_not_installed', null],
    [new SynthesisError('the worker died', { code: 'TTS_WORKER_DIED' }), 500, 'tts_worker_died', null],
    [new Error('secret internals'), 500, 'internal_error', null],
  ])('maps %s to %i', async (error, status, code, param) => {
    const { agent, check, engine } = await start('bare http');
    engine.onSynthesize = () => Promise.reject(error);
    const res = await check(auth(agent.post('/v1/speech')).send({ model: 'svc-tts-1', voice: 'v', input: 'x' }));
    expect(res.status).toBe(status);
    expect(res.body.error).toMatchObject({ code, param });
    expect(res.body.error.message).not.toContain('secret internals');
    if (status === 429) expect(res.headers['retry-after']).toBe('1');
    if (error instanceof InvalidOptionValueError) expect(res.body.error.message).toMatch(new RegExp(`^${param} must`));
  });

  it('answers a synthesis that fails before its first byte with JSON, and cuts one that fails later', async () => {
    const { agent, check, engine, url } = await start('bare http');
    engine.onSynthesize = async () => {
      const stream = new Readable({ read() {} });
      setImmediate(() => stream.destroy(new SynthesisError('phonemizer failed')));
      return fakeSpeechStream(stream);
    };
    const early = await check(auth(agent.post('/v1/speech')).send({ model: 'svc-tts-1', voice: 'v', input: 'x' }));
    expect(early.status).toBe(500);
    expect(early.body.error.code).toBe('synthesis_failed');

    engine.onSynthesize = async () => {
      const stream = new Readable({ read() {} });
      stream.push(Buffer.from('first'));
      setTimeout(() => stream.destroy(new SynthesisError('worker died')), 20);
      return fakeSpeechStream(stream);
    };
    const outcome = await new Promise<string>((resolve) => {
      const req = httpRequest(`${url}/v1/speech`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${KEY}`, 'Content-Type': 'application/json' },
      });
      req.on('response', (res) => {
        res.on('data', () => undefined);
        res.on('end', () => resolve(`complete ${res.statusCode}`));
        res.on('error', (error) => resolve(`cut ${res.statusCode} ${error.message}`));
      });
      req.on('error', (error) => resolve(`cut ${error.message}`));
      req.end(JSON.stringify({ model: 'svc-tts-1', voice: 'v', input: 'x' }));
    });
    expect(outcome).toMatch(/^cut 200/);
  });
});

describe('POST /v1/speech body', () => {
  const valid = { model: 'svc-tts-1', voice: 'en_US-fake', input: 'Hello.' };

  it('reads JSON itself when no body parser ran, and takes a parsed body when one did', async () => {
    for (const kind of ['bare http', 'express5'] as const) {
      const { agent, check, engine } = await start(kind);
      const res = await check(
        auth(agent.post('/v1/speech')).send({ ...valid, format: 'wav', speed: 1.5, sample_rate: 16000 }),
      );
      expect(res.status).toBe(200);
      expect(engine.synthesizeCalls[0]).toMatchObject({ format: 'wav', speed: 1.5, sampleRate: 16000 });
      expect(engine.synthesizeCalls[0]?.signal).toBeInstanceOf(AbortSignal);
    }
  });

  it.each([
    ['not JSON', 'text/plain', 'hello', 415, 'unsupported_media_type', null],
    ['invalid JSON', 'application/json', '{"model": ', 400, 'invalid_json', null],
    ['an empty body', 'application/json', '', 400, 'invalid_json', null],
    ['an array', 'application/json', '[]', 400, 'invalid_type', 'body'],
    [
      'an unknown field',
      'application/json',
      JSON.stringify({ ...valid, response_format: 'mp3' }),
      400,
      'unknown_parameter',
      'response_format',
    ],
    ['no model', 'application/json', JSON.stringify({ ...valid, model: undefined }), 400, 'missing_parameter', 'model'],
    ['no voice', 'application/json', JSON.stringify({ ...valid, voice: undefined }), 400, 'missing_parameter', 'voice'],
    ['no input', 'application/json', JSON.stringify({ ...valid, input: undefined }), 400, 'missing_parameter', 'input'],
    ['a null input', 'application/json', JSON.stringify({ ...valid, input: null }), 400, 'missing_parameter', 'input'],
    ['a numeric input', 'application/json', JSON.stringify({ ...valid, input: 5 }), 400, 'invalid_type', 'input'],
    [
      'an unknown model',
      'application/json',
      JSON.stringify({ ...valid, model: 'tts-1' }),
      400,
      'model_not_found',
      'model',
    ],
    [
      'an STT model',
      'application/json',
      JSON.stringify({ ...valid, model: 'svc-stt-1' }),
      400,
      'model_not_found',
      'model',
    ],
    ['a string speed', 'application/json', JSON.stringify({ ...valid, speed: '1.0' }), 400, 'invalid_type', 'speed'],
    [
      'a string sample_rate',
      'application/json',
      JSON.stringify({ ...valid, sample_rate: '16000' }),
      400,
      'invalid_type',
      'sample_rate',
    ],
    ['a numeric format', 'application/json', JSON.stringify({ ...valid, format: 3 }), 400, 'invalid_type', 'format'],
  ])('rejects %s', async (_name, type, body, status, code, param) => {
    const { agent, check, engine } = await start('bare http');
    const res = await check(auth(agent.post('/v1/speech')).set('Content-Type', type).send(body));
    expect(res.status).toBe(status);
    expect(res.body.error).toMatchObject({ code, param });
    expect(engine.synthesizeCalls).toHaveLength(0);
  });

  it('answers 413 for a body over maxJsonBytes, declared or streamed', async () => {
    const { agent, check, url } = await start('bare http', { limits: { maxJsonBytes: 1024 } });
    const big = JSON.stringify({ ...valid, input: 'x'.repeat(2000) });
    const declared = await check(auth(agent.post('/v1/speech')).set('Content-Type', 'application/json').send(big));
    expect(declared.status).toBe(413);
    expect(declared.body.error.code).toBe('body_too_large');
    const status = await new Promise<number>((resolve, reject) => {
      const req = httpRequest(`${url}/v1/speech`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${KEY}`, 'Content-Type': 'application/json', 'Transfer-Encoding': 'chunked' },
      });
      req.on('response', (res) => resolve(res.statusCode ?? 0));
      req.on('error', reject);
      req.write(big.slice(0, 600));
      req.end(big.slice(600));
    });
    expect(status).toBe(413);
  });
});

describe('POST /v1/transcriptions form', () => {
  const form = (agent: request.Agent | ReturnType<typeof request>, model = 'svc-stt-1') =>
    auth(agent.post('/v1/transcriptions')).field('model', model);

  it.each([
    ['no model', (t: request.Test) => t.attach('file', AUDIO_HEADS.wav, 'a.wav'), 400, 'missing_parameter', 'model'],
    ['no file', (t: request.Test) => t.field('model', 'svc-stt-1'), 400, 'missing_parameter', 'file'],
    [
      'two files',
      (t: request.Test) =>
        t.field('model', 'svc-stt-1').attach('file', AUDIO_HEADS.wav, 'a.wav').attach('file', AUDIO_HEADS.wav, 'b.wav'),
      400,
      'too_many_files',
      'file',
    ],
    [
      'a file in another field',
      (t: request.Test) => t.field('model', 'svc-stt-1').attach('audio', AUDIO_HEADS.wav, 'a.wav'),
      400,
      'unknown_parameter',
      'audio',
    ],
    [
      'an unknown field',
      (t: request.Test) =>
        t.field('model', 'svc-stt-1').field('temperature', '0').attach('file', AUDIO_HEADS.wav, 'a.wav'),
      400,
      'unknown_parameter',
      'temperature',
    ],
    [
      'a repeated field',
      (t: request.Test) => t.field('model', 'svc-stt-1').field('model', 'svc-stt-1').attach('file', AUDIO_HEADS.wav),
      400,
      'duplicate_parameter',
      'model',
    ],
    [
      'an unknown model',
      (t: request.Test) => t.field('model', 'whisper-1').attach('file', AUDIO_HEADS.wav, 'a.wav'),
      400,
      'model_not_found',
      'model',
    ],
    [
      'a bad timestamps',
      (t: request.Test) =>
        t.field('model', 'svc-stt-1').field('timestamps', 'words').attach('file', AUDIO_HEADS.wav, 'a'),
      400,
      'invalid_value',
      'timestamps',
    ],
    [
      'a bad diarize',
      (t: request.Test) => t.field('model', 'svc-stt-1').field('diarize', 'yes').attach('file', AUDIO_HEADS.wav, 'a'),
      400,
      'invalid_value',
      'diarize',
    ],
    [
      'a bad vad',
      (t: request.Test) => t.field('model', 'svc-stt-1').field('vad', 'on').attach('file', AUDIO_HEADS.wav, 'a'),
      400,
      'invalid_value',
      'vad',
    ],
    [
      'a bad annotations',
      (t: request.Test) =>
        t.field('model', 'svc-stt-1').field('annotations', 'hide').attach('file', AUDIO_HEADS.wav, 'a'),
      400,
      'invalid_value',
      'annotations',
    ],
    [
      'an over-long field',
      (t: request.Test) =>
        t.field('model', 'svc-stt-1').field('language', 'x'.repeat(2000)).attach('file', AUDIO_HEADS.wav),
      400,
      'invalid_value',
      'language',
    ],
    [
      'an empty file',
      (t: request.Test) => t.field('model', 'svc-stt-1').attach('file', Buffer.alloc(0), 'a.wav'),
      400,
      'audio_empty',
      'file',
    ],
    [
      'a text file named .wav',
      (t: request.Test) =>
        t.field('model', 'svc-stt-1').attach('file', Buffer.from('not audio at all, just text'), 'a.wav'),
      415,
      'unsupported_audio_format',
      'file',
    ],
  ])('rejects %s', async (_name, build, status, code, param) => {
    const { agent, check, engine } = await start('express5');
    const res = await check(build(auth(agent.post('/v1/transcriptions'))));
    expect(res.status).toBe(status);
    expect(res.body.error).toMatchObject({ code, param });
    expect(engine.transcribeCalls).toHaveLength(0);
  });

  it('rejects a body that is not multipart, or multipart without a boundary', async () => {
    const { agent, check } = await start('express5');
    const json = await check(auth(agent.post('/v1/transcriptions')).send({ model: 'svc-stt-1' }));
    expect(json.status).toBe(415);
    expect(json.body.error.code).toBe('unsupported_media_type');
    const broken = await check(
      auth(agent.post('/v1/transcriptions')).set('Content-Type', 'multipart/form-data').send('--x\r\n'),
    );
    expect(broken.status).toBe(400);
    expect(broken.body.error.code).toBe('invalid_multipart');
  });

  it("accepts the spec's formats and browser recordings (webm, ADTS aac) by their bytes, whatever the file name", async () => {
    const { agent, check, engine } = await start('express5');
    for (const format of ['wav', 'mp3', 'm4a', 'flac', 'ogg', 'webm', 'aac'] as const) {
      const res = await check(form(agent).attach('file', AUDIO_HEADS[format], 'upload.bin'));
      expect(res.status, format).toBe(200);
    }
    // The OpenAI route takes them as well: browser recordings go to either.
    for (const format of ['webm', 'aac'] as const) {
      const res = await check(
        auth(agent.post('/v1/audio/transcriptions'))
          .field('model', 'whisper-1')
          .attach('file', AUDIO_HEADS[format], `upload.${format}`),
      );
      expect(res.status, format).toBe(200);
    }
    expect(engine.transcribeCalls).toHaveLength(9);
    const narrowed = await start('express5', { audioFormats: ['wav', 'webm'] });
    expect((await narrowed.check(form(narrowed.agent).attach('file', AUDIO_HEADS.webm, 'a'))).status).toBe(200);
    const refused = await narrowed.check(form(narrowed.agent).attach('file', AUDIO_HEADS.ogg, 'a'));
    expect(refused.status).toBe(415);
    expect(refused.body.error.message).toBe(
      "the file is ogg audio; accepted formats: wav, webm (the handler's audioFormats option)",
    );
  });

  it('passes language, timestamps and diarize; empty optional fields count as absent', async () => {
    const { agent, check, engine } = await start('express5');
    for (const [value, expected] of [
      ['true', true],
      ['1', true],
      ['TRUE', true],
      ['false', false],
      ['0', false],
    ] as const) {
      const res = await check(form(agent).field('diarize', value).attach('file', AUDIO_HEADS.wav, 'a'));
      expect(res.status).toBe(200);
      expect(engine.transcribeCalls.at(-1)?.options.diarize).toBe(expected);
    }
    const words = await check(
      form(agent).field('language', 'de').field('timestamps', 'word').attach('file', AUDIO_HEADS.wav, 'a'),
    );
    expect(words.body.language).toBe('de');
    expect(words.body.words).toHaveLength(1);
    expect(engine.transcribeCalls.at(-1)?.options).toMatchObject({
      language: 'de',
      timestamps: 'word',
      diarize: false,
    });
    await check(form(agent).field('language', '').field('timestamps', '').attach('file', AUDIO_HEADS.wav, 'a'));
    const last = engine.transcribeCalls.at(-1)?.options;
    expect(last?.language).toBeUndefined();
    expect(last?.timestamps).toBe('segment');
  });

  it('passes the invented-text guards, and leaves the server defaults to fields not sent', async () => {
    const { agent, check, engine } = await start('express5');
    const res = await check(
      form(agent)
        .field('vad', 'false')
        .field('suppress_non_speech', '1')
        .field('condition_on_previous_text', 'FALSE')
        .field('repetition_guard', '0')
        .field('skip_guard', 'false')
        .field('annotations', 'keep')
        .attach('file', AUDIO_HEADS.wav, 'a'),
    );
    expect(res.status).toBe(200);
    expect(engine.transcribeCalls.at(-1)?.options).toMatchObject({
      vad: false,
      suppressNonSpeech: true,
      conditionOnPreviousText: false,
      repetitionGuard: false,
      skipGuard: false,
      annotations: 'keep',
    });
    await check(form(agent).attach('file', AUDIO_HEADS.wav, 'a'));
    const plain = engine.transcribeCalls.at(-1)?.options ?? {};
    for (const key of [
      'vad',
      'suppressNonSpeech',
      'conditionOnPreviousText',
      'repetitionGuard',
      'skipGuard',
      'annotations',
    ]) {
      expect(plain).not.toHaveProperty(key);
    }
  });

  it('takes files up to 25 MiB by default and answers 413 past that', async () => {
    const { agent, check, engine } = await start('bare http');
    const limit = 25 * 1024 * 1024;
    const exact = Buffer.concat([AUDIO_HEADS.wav, Buffer.alloc(limit - AUDIO_HEADS.wav.length)]);
    expect((await check(form(agent).attach('file', exact, 'a.wav'))).status).toBe(200);
    expect((engine.transcribeCalls[0]?.input as Buffer).length).toBe(limit);
    const over = await check(form(agent).attach('file', Buffer.concat([exact, Buffer.alloc(1)]), 'a.wav'));
    expect(over.status).toBe(413);
    expect(over.body.error.message).toContain(String(limit));
    expect(engine.transcribeCalls).toHaveLength(1);
  });

  it('answers 413 for a file over maxFileBytes without calling the engine', async () => {
    const { agent, check, engine } = await start('express5', { limits: { maxFileBytes: 100_000 } });
    const big = Buffer.concat([AUDIO_HEADS.wav, Buffer.alloc(300_000)]);
    const res = await check(form(agent).attach('file', big, 'a.wav'));
    expect(res.status).toBe(413);
    expect(res.body.error).toMatchObject({ code: 'file_too_large', param: 'file' });
    expect(engine.transcribeCalls).toHaveLength(0);
    const fits = await check(form(agent).attach('file', big.subarray(0, 100_000), 'a.wav'));
    expect(fits.status).toBe(200);
  });

  it.each([
    [new AudioDecodeError('Invalid data found when processing input'), 400, 'audio_decode_failed'],
    [new AudioDecodeError('no audio stream', { code: 'AUDIO_EMPTY' }), 400, 'audio_empty'],
    [new AudioDecodeError('not a recognised audio format', { code: 'AUDIO_UNSUPPORTED' }), 400, 'audio_decode_failed'],
    [new AudioTooLongError('audio longer than 10 s', 10), 413, 'audio_too_long'],
  ])("answers the decoder's %s with %i naming file", async (error, status, code) => {
    const { agent, check, engine } = await start('express5');
    engine.onTranscribe = () => Promise.reject(error);
    const res = await check(form(agent).attach('file', AUDIO_HEADS.wav, 'a'));
    expect(res.status).toBe(status);
    expect(res.body.error).toMatchObject({ code, param: 'file' });
    expect(res.body.error.message).toContain(error.message);
  });

  it('answers 503 naming the pull command when the model is not installed', async () => {
    const { agent, check, engine } = await start('express5');
    engine.onTranscribe = () =>
      Promise.reject(new ModelNotFoundError('model svc-stt-1 (base) is not installed; npx voxmill models pull base'));
    const res = await check(form(agent).attach('file', AUDIO_HEADS.wav, 'a'));
    expect(res.status).toBe(503);
    expect(res.body.error.code).toBe('model_not_installed');
    expect(res.body.error.message).toContain('voxmill models pull base');
  });

  it('keeps uploads in memory unless uploadDir is set, and leaves nothing in uploadDir however it ends', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'voxmill-uploads-'));
    try {
      const { agent, check, engine, url } = await start('express5', {
        uploadDir: dir,
        limits: { maxFileBytes: 100_000 },
      });
      const seen: string[] = [];
      engine.onTranscribe = async (input) => {
        seen.push(String(input), ...readdirSync(dir));
        return { text: '', language: 'en', duration: 0, segments: [] };
      };
      expect((await check(form(agent).attach('file', AUDIO_HEADS.flac, 'a'))).status).toBe(200);
      expect(seen[0]).toMatch(new RegExp(`^${dir}/voxmill-upload-`));
      expect(seen).toHaveLength(2);
      expect(
        (await check(form(agent).attach('file', Buffer.concat([AUDIO_HEADS.wav, Buffer.alloc(200_000)])))).status,
      ).toBe(413);
      expect((await check(form(agent).attach('file', Buffer.from('plain text, not audio')))).status).toBe(415);
      engine.onTranscribe = () => Promise.reject(new AudioDecodeError('corrupt'));
      expect((await check(form(agent).attach('file', AUDIO_HEADS.wav))).status).toBe(400);
      // A client that disappears mid-upload.
      await new Promise<void>((resolve) => {
        const req = httpRequest(`${url}/v1/transcriptions`, {
          method: 'POST',
          headers: { Authorization: `Bearer ${KEY}`, 'Content-Type': 'multipart/form-data; boundary=b' },
        });
        req.on('error', () => resolve());
        req.write('--b\r\nContent-Disposition: form-data; name="file"; filename="a"\r\n\r\n');
        req.write(AUDIO_HEADS.wav);
        // The upload is being spooled when the client goes.
        vi.waitFor(() => expect(readdirSync(dir)).toHaveLength(1), { timeout: scaledMs(1000) }).then(() => {
          req.destroy();
          resolve();
        });
      });
      // Removal follows the disconnect asynchronously (the write stream closes first).
      await vi.waitFor(() => expect(readdirSync(dir)).toEqual([]), { timeout: scaledMs(1000) });

      const memory = await start('express5');
      await memory.check(form(memory.agent).attach('file', AUDIO_HEADS.wav, 'a'));
      expect(Buffer.isBuffer(memory.engine.transcribeCalls[0]?.input)).toBe(true);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('limits and lifecycle', () => {
  it('sheds requests past maxConcurrentRequests with 429 and Retry-After', async () => {
    const { agent, check, engine } = await start('bare http', {
      limits: { maxConcurrentRequests: 1, retryAfterSeconds: 7 },
    });
    let release: () => void = () => undefined;
    engine.onTranscribe = () =>
      new Promise((resolve) => {
        release = () => resolve({ text: '', language: 'en', duration: 0, segments: [] });
      });
    const first = check(
      auth(agent.post('/v1/transcriptions')).field('model', 'svc-stt-1').attach('file', AUDIO_HEADS.wav, 'a'),
    );
    await vi.waitFor(() => expect(engine.transcribeCalls.length === 1).toBe(true), { timeout: scaledMs(1000) });
    const shed = await check(auth(agent.get('/v1/voices')));
    expect(shed.status).toBe(429);
    expect(shed.headers['retry-after']).toBe('7');
    expect(shed.body.error).toMatchObject({ type: 'rate_limit_error', code: 'too_many_requests' });
    release();
    expect((await first).status).toBe(200);
    expect((await check(auth(agent.get('/v1/voices')))).status).toBe(200);
  });

  it('answers 503 when requestTimeoutMs passes, and aborts the work', async () => {
    const { agent, check, engine } = await start('bare http', { limits: { requestTimeoutMs: 100 } });
    let aborted: unknown;
    engine.onTranscribe = (_input, options) =>
      new Promise((_resolve, reject) => {
        options.signal?.addEventListener('abort', () => {
          aborted = options.signal?.reason;
          reject(options.signal?.reason);
        });
      });
    const res = await check(
      auth(agent.post('/v1/transcriptions')).field('model', 'svc-stt-1').attach('file', AUDIO_HEADS.wav, 'a'),
    );
    expect(res.status).toBe(503);
    expect(res.body.error.code).toBe('request_timeout');
    expect(aborted).toBeDefined();
  });

  it('aborts the work when the client goes away, and logs every request once', async () => {
    const entries: RequestLogEntry[] = [];
    const { engine, url, agent, check } = await start('bare http', {
      onRequest: (entry) => {
        entries.push(entry);
        throw new Error('a broken logger must not matter');
      },
    });
    const aborted = new Promise<unknown>((resolve) => {
      engine.onSynthesize = (options) =>
        new Promise((_resolve, reject) => {
          options.signal?.addEventListener('abort', () => {
            resolve(options.signal?.reason);
            reject(options.signal?.reason);
          });
        });
    });
    const req = httpRequest(`${url}/v1/speech`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${KEY}`, 'Content-Type': 'application/json', 'X-Request-Id': 'gone-1' },
    });
    req.on('error', () => undefined);
    req.end(JSON.stringify({ model: 'svc-tts-1', voice: 'v', input: 'x' }));
    await vi.waitFor(() => expect(engine.synthesizeCalls.length === 1).toBe(true), { timeout: scaledMs(1000) });
    req.destroy();
    expect(await aborted).toBeDefined();
    await check(auth(agent.get('/v1/voices')).set('X-Request-Id', 'ok-1'));
    await vi.waitFor(() => expect(entries.length === 2).toBe(true), { timeout: scaledMs(1000) });
    expect(entries[0]).toMatchObject({ request_id: 'gone-1', method: 'POST', path: '/v1/speech', client_closed: true });
    expect(entries[1]).toMatchObject({ request_id: 'ok-1', status: 200, path: '/v1/voices' });
    expect(entries[1]?.bytes_out).toBeGreaterThan(50);
    expect(entries[1]?.duration_ms).toBeGreaterThan(0);
  });

  it('validates its options, naming them', () => {
    const speech = new FakeSpeechEngine();
    expect(() => createSpeechHandler({ speech, auth: false, limits: { maxFileBytes: 0 } })).toThrow(
      /limits\.maxFileBytes/,
    );
    expect(() => createSpeechHandler({ speech, auth: false, limits: { maxFileBytez: 1 } } as never)).toThrow(
      /limits\.maxFileBytez/,
    );
    expect(() => createSpeechHandler({ speech, auth: false, audioFormats: ['mp4'] } as never)).toThrow(
      /audioFormats\[0\]/,
    );
    expect(() => createSpeechHandler({ speech: {} as never, auth: false })).toThrow(/^speech must be/);
    expect(() => createSpeechHandler({ speech, auth: false, errors: 'throw' } as never)).toThrow(/errors/);
    expect(() => createSpeechHandler({ speech, auth: false, uploadDir: '/nonexistent/voxmill' })).toThrow(
      /^uploadDir must be a writable directory/,
    );
  });
});

describe('POST /v1/audio/transcriptions known speakers', () => {
  const dataUrl = (bytes: Buffer, type = 'audio/wav') => `data:${type};base64,${bytes.toString('base64')}`;
  const diarizedForm = (agent: ReturnType<typeof request>) =>
    auth(agent.post('/v1/audio/transcriptions'))
      .field('model', 'gpt-4o-transcribe-diarize')
      .field('response_format', 'diarized_json');

  it('passes each name with its data URL decoded, in order, as diarize.knownSpeakers', async () => {
    const { agent, check, engine } = await start('bare http');
    const res = await check(
      diarizedForm(agent)
        .field('known_speaker_names[]', 'Ada')
        .field('known_speaker_names[]', 'Grace')
        .field('known_speaker_references[]', dataUrl(AUDIO_HEADS.wav))
        .field('known_speaker_references[]', dataUrl(AUDIO_HEADS.mp3, 'audio/mpeg'))
        .attach('file', AUDIO_HEADS.wav, 'a.wav'),
    );
    expect(res.status).toBe(200);
    expect(engine.transcribeCalls[0]?.options.diarize).toEqual({
      knownSpeakers: [
        { name: 'Ada', audio: AUDIO_HEADS.wav },
        { name: 'Grace', audio: AUDIO_HEADS.mp3 },
      ],
    });
  });

  it('answers 400 naming the field: another format, unpaired values, a bad data URL, too many, too long', async () => {
    const { agent, check, engine } = await start('bare http');
    const cases: Array<[(test: request.Test) => request.Test, string]> = [
      [(t) => t.field('response_format', 'json').field('known_speaker_names[]', 'Ada'), 'known_speaker_names[]'],
      [
        (t) => t.field('response_format', 'diarized_json').field('known_speaker_names[]', 'Ada'),
        'known_speaker_references[]',
      ],
      [
        (t) =>
          t
            .field('response_format', 'diarized_json')
            .field('known_speaker_names[]', 'Ada')
            .field('known_speaker_references[]', 'https://example.com/ada.wav'),
        'known_speaker_references[]',
      ],
      [
        (t) =>
          t
            .field('response_format', 'diarized_json')
            .field('known_speaker_names[]', 'Ada')
            .field('known_speaker_references[]', 'data:audio/wav;base64,%%%'),
        'known_speaker_references[]',
      ],
      [
        (t) => {
          let test = t.field('response_format', 'diarized_json');
          for (let i = 0; i < 9; i++) test = test.field('known_speaker_names[]', `p${i}`);
          return test;
        },
        'known_speaker_names[]',
      ],
      [
        (t) =>
          t
            .field('response_format', 'diarized_json')
            .field('known_speaker_names[]', 'Ada')
            .field('known_speaker_references[]', dataUrl(Buffer.alloc(1_600_000))),
        'known_speaker_references[]',
      ],
      [
        (t) => {
          // Five values of 1.9 MB each: each under its own limit, 9.5 MB together over the 8 MB of all of them.
          let test = t.field('response_format', 'diarized_json');
          for (let i = 0; i < 5; i++) {
            test = test
              .field('known_speaker_names[]', `p${i}`)
              .field('known_speaker_references[]', dataUrl(Buffer.alloc(1_400_000)));
          }
          return test;
        },
        'known_speaker_references[]',
      ],
    ];
    for (const [fields, param] of cases) {
      const test = fields(auth(agent.post('/v1/audio/transcriptions')).field('model', 'whisper-1'));
      const res = await check(test.attach('file', AUDIO_HEADS.wav, 'a.wav'));
      expect(res.status, `${param}: ${res.text}`).toBe(400);
      expect(res.body.error.param).toBe(param);
    }
    expect(engine.transcribeCalls).toHaveLength(0);
  });

  it("maps the library's knownSpeakers errors to the fields: no embedding model, a clip that does not decode", async () => {
    const { agent, check, engine } = await start('bare http');
    const send = () =>
      check(
        diarizedForm(agent)
          .field('known_speaker_names[]', 'Ada')
          .field('known_speaker_names[]', 'Grace')
          .field('known_speaker_references[]', dataUrl(AUDIO_HEADS.wav))
          .field('known_speaker_references[]', dataUrl(AUDIO_HEADS.wav))
          .attach('file', AUDIO_HEADS.wav, 'a.wav'),
      );
    engine.onTranscribe = async () => {
      throw new InvalidOptionValueError('diarize.knownSpeakers', 'given only with a speaker-embedding model', []);
    };
    const missing = await send();
    expect(missing.status).toBe(400);
    expect(missing.body.error).toMatchObject({ code: 'invalid_value', param: 'known_speaker_references[]' });
    engine.onTranscribe = async () => {
      throw new InvalidOptionValueError('diarize.knownSpeakers[1].audio', 'at least 1 s of audio', Buffer.alloc(4));
    };
    const short = await send();
    expect(short.body.error.param).toBe('known_speaker_references[]');
    expect(short.body.error.message).toMatch(/^known_speaker_references\[\] #2 must be at least 1 s of audio/u);
    engine.onTranscribe = async () => {
      throw new InvalidOptionValueError('diarize.knownSpeakers[0].name', 'a name no other known speaker has', 'Ada');
    };
    expect((await send()).body.error.param).toBe('known_speaker_names[]');
  });
});

describe('body parsers in front of the handler', () => {
  /** An Express 5 app whose `parser` runs before the handler on every path. */
  async function behind(parser: express.RequestHandler) {
    const engine = new FakeSpeechEngine();
    const app = express();
    app.use(parser);
    app.use(createSpeechHandler({ speech: engine, auth: [KEY] }));
    const server = app.listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    open.push({ name: 'parser', mount: '', server, hostErrors: [] });
    return { agent: request(`http://127.0.0.1:${(server.address() as AddressInfo).port}`), engine };
  }
  const speechBody = { model: 'svc-tts-1', voice: 'en_US-fake', input: 'Hello.' };

  it('uses the bytes express.raw() kept: multipart forms and JSON', async () => {
    const { agent, engine } = await behind(express.raw({ type: () => true, limit: '50mb' }));
    const form = await auth(agent.post('/v1/transcriptions'))
      .field('model', 'svc-stt-1')
      .attach('file', AUDIO_HEADS.wav, 'a.wav');
    expect(form.status).toBe(200);
    expect(engine.transcribeCalls[0]?.input).toEqual(AUDIO_HEADS.wav);
    const json = await auth(agent.post('/v1/speech')).send(speechBody);
    expect(json.status).toBe(200);
    expect(engine.synthesizeCalls[0]).toMatchObject({ voice: 'en_US-fake', input: 'Hello.' });
  });

  it('refuses a multipart body express.text() decoded (binary audio does not survive UTF-8)', async () => {
    const { agent, engine } = await behind(express.text({ type: () => true, limit: '50mb' }));
    const res = await auth(agent.post('/v1/transcriptions'))
      .field('model', 'svc-stt-1')
      .attach('file', AUDIO_HEADS.wav, 'a');
    expect(res.status).toBe(500);
    expect(res.body.error.code).toBe('body_consumed');
    expect(engine.transcribeCalls).toHaveLength(0);
  });

  it('uses the text express.text() kept, and what express.json() parsed', async () => {
    for (const parser of [express.text({ type: () => true }), express.json()]) {
      const { agent, engine } = await behind(parser);
      const res = await auth(agent.post('/v1/speech')).send(speechBody);
      expect(res.status).toBe(200);
      expect(engine.synthesizeCalls[0]).toMatchObject({ input: 'Hello.' });
    }
  });

  it('answers 500 body_consumed naming the fix when a parser kept nothing (as koa-bodyparser does)', async () => {
    // Reads the whole body and keeps it elsewhere, as koa-bodyparser keeps it on ctx.request.body.
    const { agent } = await behind((req, _res, next) => {
      req.on('data', () => undefined);
      req.on('end', () => next());
    });
    for (const res of [
      await auth(agent.post('/v1/speech')).send(speechBody),
      await auth(agent.post('/v1/transcriptions')).field('model', 'svc-stt-1').attach('file', AUDIO_HEADS.wav, 'a'),
    ]) {
      expect(res.status).toBe(500);
      expect(res.body.error.code).toBe('body_consumed');
      expect(res.body.error.message).toMatch(/mount the handler before body parsers/u);
    }
  });

  it('answers 413 when the bytes a parser kept are over maxJsonBytes', async () => {
    const { agent } = await behind(express.raw({ type: () => true, limit: '50mb' }));
    const res = await auth(agent.post('/v1/speech'))
      .set('Content-Type', 'application/json')
      .send(JSON.stringify({ ...speechBody, input: 'x'.repeat(300_000) }));
    expect(res.status).toBe(413);
  });
});
