// The /v1/realtime WebSocket endpoint with a plain `ws` client: OpenAI's transcription events (GA and beta shapes,
// server VAD and manual commits, 16 and 24 kHz, G.711), the voxmill speech extension, authentication, every limit,
// malformed events answered with `error` events, and shutdown. Random-weight tiny.en (plumbing; the real model's
// latency and accuracy are bench/realtime.mjs's) and the fixture Piper voices.
import { createServer, type Server } from 'node:http';
import { type AddressInfo, connect as connectTcp } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
// Waits for work and bounds on its latency grow with this machine's slowdown; the endpoint's own timers (idle,
// session lifetime) stay as set.
import { scaledMs } from '../../scripts/lib/machine-speed.mjs';
import { StreamResampler } from '../../src/audio/resample.js';
import { buildSpeechHandler, type SpeechHandlerControl } from '../../src/http/handler.js';
import type { SpeechHandlerOptions } from '../../src/http/options.js';
import { createSpeech, type Speech } from '../../src/index.js';
import { fixture, sharedAudio, sharedModel } from '../helpers/paths.js';
import { pcm16, readPcm16Wav } from '../helpers/wav.js';

const KEY = 'sk-realtime';
const jfk = readPcm16Wav(sharedAudio('jfk.wav'));
// The random-weight model decodes slowly (it never stops early): jfk's first 4 s, then silence.
const jfk4 = jfk.subarray(0, 4 * 16000);

type Event = Record<string, unknown> & { type: string };

let speech: Speech;
const servers: Array<{ server: Server; control: SpeechHandlerControl }> = [];

beforeAll(() => {
  speech = createSpeech({
    vadModel: sharedModel('whisper/ggml-silero-v6.2.0.bin'),
    models: { 'svc-stt-1': fixture('models/ggml-tiny.en-random.bin') },
    voiceDirs: [fixture('voices')],
    tts: { workers: 1 },
  });
});

afterAll(async () => {
  for (const { server } of servers) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
  await speech.close();
});

/** A bare http server with the handler and its realtime endpoint attached; resolves to its ws:// URL. */
async function serve(
  options: Partial<SpeechHandlerOptions> = {},
): Promise<{ url: string; control: SpeechHandlerControl }> {
  // Admission by measured capacity has its own tests (realtime-admission.test.ts); these test the rest with it off.
  const control = buildSpeechHandler({
    speech,
    auth: [KEY],
    ...options,
    realtime: { admitByCapacity: false, ...options.realtime },
  });
  const server = createServer(control.handler);
  control.handler.attach(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  servers.push({ server, control });
  return { url: `ws://127.0.0.1:${(server.address() as AddressInfo).port}/v1/realtime`, control };
}

/** A connected client that records every event; `next(type)` waits for the next event of that type. */
class Client {
  readonly events: Event[] = [];
  readonly socket: WebSocket;
  readonly closed: Promise<{ code: number; reason: string }>;
  #waiters: Array<{ type: string; from: number; resolve: (event: Event) => void }> = [];

  constructor(url: string, options: { protocols?: string[]; headers?: Record<string, string> } = {}) {
    this.socket = new WebSocket(url, options.protocols ?? [], {
      headers: options.headers ?? { Authorization: `Bearer ${KEY}` },
    });
    this.socket.on('message', (data) => {
      const event = JSON.parse(String(data)) as Event;
      this.events.push(event);
      this.#waiters = this.#waiters.filter((w) => {
        if (w.type !== event.type) return true;
        w.resolve(event);
        return false;
      });
    });
    this.closed = new Promise((resolve) => {
      this.socket.on('close', (code, reason) => resolve({ code, reason: String(reason) }));
    });
  }

  opened(): Promise<void> {
    return new Promise((resolve, reject) => {
      this.socket.once('open', () => resolve());
      this.socket.once('error', reject);
    });
  }

  /** The first event of `type` not yet returned by next(), within `timeoutMs` (scaled). */
  next(type: string, timeoutMs = 60_000): Promise<Event> {
    const limit = scaledMs(timeoutMs);
    const seen = this.events.filter((e) => e.type === type);
    const taken = this.#taken.get(type) ?? 0;
    this.#taken.set(type, taken + 1);
    if (seen.length > taken) return Promise.resolve(seen[taken] as Event);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no ${type} in ${limit} ms; got ${this.types()}`)), limit);
      this.#waiters.push({
        type,
        from: taken,
        resolve: (event) => {
          clearTimeout(timer);
          resolve(event);
        },
      });
    });
  }
  readonly #taken = new Map<string, number>();

  send(event: Record<string, unknown> | string): void {
    this.socket.send(typeof event === 'string' ? event : JSON.stringify(event));
  }

  /** 16-bit PCM in base64 appends of `ms` each, `paced`: one every `ms` (real time); else all at once. */
  async stream(samples: Float32Array, rate: number, ms = 20, paced = false): Promise<void> {
    const per = Math.round((rate * ms) / 1000);
    for (let i = 0; i < samples.length; i += per) {
      this.send({ type: 'input_audio_buffer.append', audio: pcm16(samples.subarray(i, i + per)).toString('base64') });
      if (paced) await new Promise((resolve) => setTimeout(resolve, ms));
    }
  }

  types(): string {
    return this.events.map((e) => e.type).join(', ');
  }
}

/** G.711 mu-law of one sample (the ITU-T encoder: bias, segment, 4 mantissa bits, inverted). */
function muLaw(sample: number): number {
  let s = Math.max(-32768, Math.min(32767, Math.round(sample * 32768)));
  const sign = s < 0 ? 0x80 : 0;
  s = Math.min(Math.abs(s), 32635) + 0x84;
  let exponent = 7;
  for (let mask = 0x4000; (s & mask) === 0 && exponent > 0; mask >>= 1) exponent--;
  return ~(sign | (exponent << 4) | ((s >> (exponent + 3)) & 0x0f)) & 0xff;
}

function silence(seconds: number, rate: number): Float32Array {
  return new Float32Array(Math.round(seconds * rate));
}

async function connect(url: string, options?: ConstructorParameters<typeof Client>[1]): Promise<Client> {
  const client = new Client(url, options);
  await client.opened();
  return client;
}

/** The status of an upgrade the server refused (the `unexpected-response` of ws). */
function refusedStatus(url: string, options: { protocols?: string[]; headers?: Record<string, string> }) {
  return new Promise<{ status: number; body: string }>((resolve, reject) => {
    const socket = new WebSocket(url, options.protocols ?? [], { headers: options.headers ?? {} });
    socket.on('unexpected-response', (_req, res) => {
      let body = '';
      res.on('data', (chunk: Buffer) => {
        body += chunk;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    socket.on('open', () => reject(new Error('the upgrade was accepted')));
    socket.on('error', () => undefined);
  });
}

const ga16k = {
  type: 'session.update',
  session: { type: 'transcription', audio: { input: { format: { type: 'audio/pcm', rate: 16000 } } } },
};

describe('/v1/realtime: connecting', () => {
  it('takes the key from the Authorization header and opens with session.created (GA shape)', async () => {
    const { url } = await serve();
    const client = await connect(`${url}?intent=transcription`);
    const created = await client.next('session.created');
    expect(created.session).toMatchObject({
      type: 'transcription',
      audio: { input: { format: { type: 'audio/pcm', rate: 24000 }, turn_detection: { type: 'server_vad' } } },
    });
    expect(created.event_id).toMatch(/^event_/);
    client.socket.close();
  });

  it("takes a browser's key from the subprotocol, answers 'realtime' and never echoes the key", async () => {
    const { url } = await serve();
    const client = await connect(url, { headers: {}, protocols: ['realtime', `openai-insecure-api-key.${KEY}`] });
    expect(client.socket.protocol).toBe('realtime');
    await client.next('session.created');
    client.socket.close();
  });

  it("takes a key a subprotocol cannot carry ('/', '+', '=') base64url-encoded, as the demo page sends it", async () => {
    const key = 'sk-a/b+c==';
    const { url } = await serve({ auth: [key] });
    const encoded = `voxmill-api-key-base64url.${Buffer.from(key).toString('base64url')}`;
    const client = await connect(url, { headers: {}, protocols: ['realtime', encoded] });
    expect(client.socket.protocol).toBe('realtime');
    await client.next('session.created');
    client.socket.close();
    const wrong = `voxmill-api-key-base64url.${Buffer.from('sk-a/b+c=').toString('base64url')}`;
    expect((await refusedStatus(url, { protocols: ['realtime', wrong] })).status).toBe(401);
  });

  it('refuses a missing or wrong key with 401 before the upgrade, and other paths with 404', async () => {
    const { url } = await serve();
    const missing = await refusedStatus(url, {});
    expect(missing.status).toBe(401);
    expect(JSON.parse(missing.body).error.code).toBe('missing_api_key');
    const wrong = await refusedStatus(url, { protocols: ['realtime', 'openai-insecure-api-key.nope'] });
    expect(wrong.status).toBe(401);
    expect(JSON.parse(wrong.body).error.code).toBe('invalid_api_key');
    const elsewhere = await refusedStatus(url.replace('/v1/realtime', '/v1/elsewhere'), {
      headers: { Authorization: `Bearer ${KEY}` },
    });
    expect(elsewhere.status).toBe(404);
    // A plain request is told it needs a WebSocket.
    const plain = await fetch(url.replace('ws:', 'http:'), { headers: { Authorization: `Bearer ${KEY}` } });
    expect(plain.status).toBe(426);
    expect(plain.headers.get('upgrade')).toBe('websocket');
    expect(((await plain.json()) as { error: { code: string } }).error.code).toBe('upgrade_required');
  });

  it('speaks the beta shape to a client that sends OpenAI-Beta: realtime=v1', async () => {
    const { url } = await serve();
    const client = await connect(url, { headers: { Authorization: `Bearer ${KEY}`, 'OpenAI-Beta': 'realtime=v1' } });
    const created = await client.next('transcription_session.created');
    expect(created.session).toMatchObject({ input_audio_format: 'pcm16', turn_detection: { type: 'server_vad' } });
    client.send({
      type: 'transcription_session.update',
      session: { input_audio_format: 'g711_ulaw', input_audio_transcription: { model: 'whisper-1', language: 'en' } },
    });
    const updated = await client.next('transcription_session.updated');
    expect(updated.session).toMatchObject({
      input_audio_format: 'g711_ulaw',
      input_audio_transcription: { model: 'whisper-1', language: 'en' },
    });
    client.socket.close();
  });
});

describe('/v1/realtime: malformed events get an error event and the session goes on', () => {
  it('answers bad JSON, binary frames, unknown types and bad fields, naming the field', async () => {
    const { url } = await serve();
    const client = await connect(url);
    await client.next('session.created');
    client.send('not json');
    expect((await client.next('error')).error).toMatchObject({ code: 'invalid_json' });
    client.socket.send(Buffer.from([1, 2, 3]));
    expect((await client.next('error')).error).toMatchObject({ code: 'invalid_event' });
    client.send({ type: 'response.create', event_id: 'mine_1' });
    expect((await client.next('error')).error).toMatchObject({ code: 'unsupported_event', event_id: 'mine_1' });
    client.send({
      type: 'session.update',
      session: { audio: { input: { format: { type: 'audio/pcm', rate: 44100 } } } },
    });
    expect((await client.next('error')).error).toMatchObject({
      code: 'invalid_value',
      param: 'session.audio.input.format.rate',
    });
    client.send({
      type: 'session.update',
      session: { audio: { input: { turn_detection: { type: 'server_vad', silence_duration_ms: -5 } } } },
    });
    expect((await client.next('error')).error).toMatchObject({
      param: 'session.audio.input.turn_detection.silence_duration_ms',
    });
    client.send({ type: 'session.update', session: { audio: { input: { transcription: { model: 'nope' } } } } });
    expect((await client.next('error')).error).toMatchObject({ code: 'model_not_found' });
    client.send({ type: 'session.update', session: { voxmill: { diarize: { max_speakers: 0 } } } });
    expect((await client.next('error')).error).toMatchObject({ param: 'session.voxmill.diarize.max_speakers' });
    client.send({ type: 'session.update', session: { voxmill: { diarize: { speakers: 2 } } } });
    expect((await client.next('error')).error).toMatchObject({ param: 'session.voxmill.diarize.speakers' });
    // No speaker-embedding model here: told at the update, which is not taken.
    client.send({ type: 'session.update', session: { voxmill: { diarize: true } } });
    expect((await client.next('error')).error).toMatchObject({
      code: 'invalid_value',
      param: 'session.voxmill.diarize',
      message: expect.stringMatching(/speaker-embedding/),
    });
    client.send({ type: 'input_audio_buffer.append', audio: '***' });
    expect((await client.next('error')).error).toMatchObject({ code: 'invalid_value', param: 'audio' });
    client.send({ type: 'input_audio_buffer.append', audio: 5 });
    expect((await client.next('error')).error).toMatchObject({ param: 'audio' });
    client.send({ type: 'input_audio_buffer.commit' });
    expect((await client.next('error')).error).toMatchObject({ code: 'input_audio_buffer_commit_empty' });
    client.send({ type: 'voxmill.speech.append', text: 'Hello.' });
    expect((await client.next('error')).error).toMatchObject({ code: 'voice_required', param: 'voice' });
    // Still open and serving.
    client.send(ga16k);
    await client.next('session.updated');
    expect(client.socket.readyState).toBe(WebSocket.OPEN);
    client.socket.close();
  });
});

describe('/v1/realtime: transcription', () => {
  /** Checks one utterance's events: started, stopped, committed, completed, one item id, in that order. */
  function expectUtterance(client: Client): string {
    const started = client.events.find((e) => e.type === 'input_audio_buffer.speech_started') as Event;
    const item = started.item_id as string;
    const order = client.events
      .filter((e) => e.item_id === item)
      .map((e) => e.type)
      .filter((t) => t !== 'conversation.item.input_audio_transcription.delta');
    expect(order).toEqual([
      'input_audio_buffer.speech_started',
      'input_audio_buffer.speech_stopped',
      'input_audio_buffer.committed',
      'conversation.item.input_audio_transcription.completed',
    ]);
    return item;
  }

  it('cuts utterances with the server VAD at 16 kHz and reports times on the stream clock', async () => {
    const { url } = await serve();
    const client = await connect(url);
    client.send(ga16k);
    await client.next('session.updated');
    await client.stream(jfk4, 16000);
    await client.stream(silence(1.5, 16000), 16000);
    const completed = await client.next('conversation.item.input_audio_transcription.completed', 120_000);
    const item = expectUtterance(client);
    expect(completed.item_id).toBe(item);
    expect(typeof completed.transcript).toBe('string');
    expect(completed.usage).toMatchObject({ type: 'duration' });
    const started = client.events.find((e) => e.type === 'input_audio_buffer.speech_started') as Event;
    expect(started.audio_start_ms as number).toBeGreaterThanOrEqual(0);
    expect(started.audio_start_ms as number).toBeLessThan(1000);
    const stopped = client.events.find((e) => e.type === 'input_audio_buffer.speech_stopped') as Event;
    expect(stopped.audio_end_ms as number).toBeGreaterThan(started.audio_start_ms as number);
    expect(stopped.audio_end_ms as number).toBeLessThanOrEqual(5500);
    client.socket.close();
  });

  it("takes OpenAI's 24 kHz and G.711 mu-law at 8 kHz", async () => {
    const { url } = await serve();
    const client = await connect(url);
    await client.next('session.created');
    const to24k = new StreamResampler(16000, 24000);
    await client.stream(to24k.process(jfk4), 24000);
    await client.stream(silence(1.5, 24000), 24000);
    await client.next('conversation.item.input_audio_transcription.completed', 120_000);
    expectUtterance(client);
    client.socket.close();
    const phone = await connect(url);
    phone.send({ type: 'session.update', session: { audio: { input: { format: { type: 'audio/pcmu' } } } } });
    expect((await phone.next('session.updated')).session).toMatchObject({
      audio: { input: { format: { type: 'audio/pcmu' } } },
    });
    const at8k = Uint8Array.from(new StreamResampler(16000, 8000).process(jfk4), muLaw);
    for (let i = 0; i < at8k.length + 12000; i += 160) {
      const bytes = i < at8k.length ? at8k.subarray(i, i + 160) : new Uint8Array(160).fill(0xff);
      phone.send({ type: 'input_audio_buffer.append', audio: Buffer.from(bytes).toString('base64') });
    }
    await phone.next('conversation.item.input_audio_transcription.completed', 120_000);
    expectUtterance(phone);
    phone.socket.close();
  });

  it('with turn_detection null, an utterance is what the client commits; clear drops audio', async () => {
    const { url } = await serve();
    const client = await connect(url);
    client.send({
      type: 'session.update',
      session: { audio: { input: { format: { type: 'audio/pcm', rate: 16000 }, turn_detection: null } } },
    });
    const updated = await client.next('session.updated');
    expect((updated.session as { audio: { input: { turn_detection: unknown } } }).audio.input.turn_detection).toBe(
      null,
    );
    await client.stream(jfk4.subarray(0, 16000), 16000);
    client.send({ type: 'input_audio_buffer.clear' });
    await client.next('input_audio_buffer.cleared');
    client.send({ type: 'input_audio_buffer.commit' });
    expect((await client.next('error')).error).toMatchObject({ code: 'input_audio_buffer_commit_empty' });
    await client.stream(jfk4.subarray(0, 2 * 16000), 16000);
    client.send({ type: 'input_audio_buffer.commit' });
    const committed = await client.next('input_audio_buffer.committed');
    const completed = await client.next('conversation.item.input_audio_transcription.completed', 120_000);
    expect(completed.item_id).toBe(committed.item_id);
    expect((completed.voxmill as { audio_start_ms: number }).audio_start_ms).toBe(1000);
    expect(client.events.some((e) => e.type === 'input_audio_buffer.speech_started')).toBe(false);
    client.socket.close();
  });

  it('a commit right after a settings change commits the audio appended before it, without commit_empty', async () => {
    const { url } = await serve();
    const client = await connect(url);
    const manual = (prompt: string) => ({
      type: 'session.update',
      session: {
        audio: {
          input: {
            format: { type: 'audio/pcm', rate: 16000 },
            transcription: { model: 'whisper-1', prompt },
            turn_detection: null,
          },
        },
      },
    });
    client.send(manual(''));
    await client.next('session.updated');
    await client.stream(jfk4.subarray(0, 2 * 16000), 16000);
    // New settings, then the commit at once: the audio heard under the old ones is what it commits.
    client.send(manual('Ask not.'));
    client.send({ type: 'input_audio_buffer.commit' });
    const committed = await client.next('input_audio_buffer.committed');
    const completed = await client.next('conversation.item.input_audio_transcription.completed', 120_000);
    expect(completed.item_id).toBe(committed.item_id);
    expect(client.events.filter((e) => e.type === 'input_audio_buffer.committed')).toHaveLength(1);
    expect(client.events.filter((e) => e.type === 'error')).toEqual([]);
    // Nothing appended since: a second commit has nothing to commit (and makes no item).
    client.send({ type: 'input_audio_buffer.commit' });
    expect((await client.next('error')).error).toMatchObject({ code: 'input_audio_buffer_commit_empty' });
    expect(client.events.filter((e) => e.type === 'input_audio_buffer.committed')).toHaveLength(1);
    // Nor after a settings change and a clear.
    client.send(manual(''));
    await client.next('session.updated');
    await client.stream(jfk4.subarray(0, 16000), 16000);
    client.send({ type: 'input_audio_buffer.clear' });
    await client.next('input_audio_buffer.cleared');
    client.send({ type: 'input_audio_buffer.commit' });
    expect((await client.next('error')).error).toMatchObject({ code: 'input_audio_buffer_commit_empty' });
    client.socket.close();
  });
});

describe('/v1/realtime: speech (voxmill extension)', () => {
  it('speaks text deltas as 24 kHz PCM audio deltas, sentence by sentence', async () => {
    const { url } = await serve();
    const client = await connect(url);
    await client.next('session.created');
    const voice = (await speech.listVoices())[0]?.id as string;
    client.send({ type: 'voxmill.speech.append', text: 'Hello there. ', voice });
    client.send({ type: 'voxmill.speech.append', text: 'This is a test' });
    client.send({ type: 'voxmill.speech.end' });
    const started = await client.next('voxmill.speech.started');
    expect(started).toMatchObject({ voice, format: { type: 'audio/pcm', rate: 24000 } });
    const done = await client.next('voxmill.speech.done');
    expect(done.speech_id).toBe(started.speech_id);
    const audio = client.events.filter((e) => e.type === 'voxmill.speech.audio.delta');
    const bytes = audio.reduce((n, e) => n + Buffer.from(e.delta as string, 'base64').length, 0);
    expect(bytes).toBeGreaterThan(24000 * 2 * 0.5);
    expect(client.events.filter((e) => e.type === 'voxmill.speech.sentence').map((e) => e.text)).toEqual([
      'Hello there.',
      'This is a test',
    ]);
    client.socket.close();
  });

  it('cancel stops speech at once (barge-in) and drops what was queued behind it', async () => {
    const { url } = await serve();
    const client = await connect(url);
    await client.next('session.created');
    const voice = (await speech.listVoices())[0]?.id as string;
    const long = 'This sentence is here to take a while to speak. '.repeat(20);
    client.send({ type: 'voxmill.speech.append', text: long, voice });
    await client.next('voxmill.speech.audio.delta');
    const at = performance.now();
    client.send({ type: 'voxmill.speech.cancel' });
    client.send({ type: 'voxmill.speech.append', text: 'Not spoken.' });
    await client.next('voxmill.speech.done');
    expect(performance.now() - at).toBeLessThan(scaledMs(2000));
    const sentences = client.events.filter((e) => e.type === 'voxmill.speech.sentence').length;
    expect(sentences).toBeLessThan(20);
    // The session still speaks afterwards.
    client.send({ type: 'voxmill.speech.append', text: 'Again.', voice });
    client.send({ type: 'voxmill.speech.end' });
    await client.next('voxmill.speech.done');
    expect(client.events.filter((e) => e.type === 'voxmill.speech.started')).toHaveLength(2);
    client.socket.close();
  });
});

describe('/v1/realtime: limits', () => {
  it('tells the session over maxSessions why, then closes it with 1013', async () => {
    const { url, control } = await serve({ realtime: { maxSessions: 1 } });
    const first = await connect(url);
    await first.next('session.created');
    const second = new Client(url);
    const error = await second.next('error');
    expect(error.error).toMatchObject({ type: 'rate_limit_error', code: 'too_many_sessions' });
    expect((await second.closed).code).toBe(1013);
    expect(control.realtimeSessions).toBe(1);
    first.socket.close();
    await first.closed;
    await expect.poll(() => control.realtimeSessions, { timeout: scaledMs(1000) }).toBe(0);
  });

  it('closes an idle session with idle_timeout, and a session past its lifetime with session_expired', async () => {
    const { url } = await serve({ realtime: { idleTimeoutMs: 300 } });
    const idle = await connect(url);
    expect((await idle.next('error')).error).toMatchObject({ code: 'idle_timeout' });
    expect((await idle.closed).code).toBe(1000);
    const { url: short } = await serve({ realtime: { maxSessionSeconds: 1 } });
    const expiring = await connect(short);
    expect((await expiring.next('error', 5000)).error).toMatchObject({ code: 'session_expired' });
    expect((await expiring.closed).code).toBe(1000);
  });

  it('closes with 1009 on a message over maxMessageBytes', async () => {
    const { url } = await serve({ realtime: { maxMessageBytes: 4096 } });
    const client = await connect(url);
    await client.next('session.created');
    client.send({ type: 'input_audio_buffer.append', audio: Buffer.alloc(8192).toString('base64') });
    expect((await client.closed).code).toBe(1009);
  });

  it('throttles a client that floods audio past maxQueuedAudioBytes instead of failing it or losing audio', async () => {
    const { url } = await serve({ realtime: { maxQueuedAudioBytes: 4096 } });
    const client = await connect(url);
    client.send(ga16k);
    await client.next('session.updated');
    // 5.5 s of audio sent at once: 176 KB against a 4 KB queue.
    await client.stream(jfk4, 16000);
    await client.stream(silence(1.5, 16000), 16000);
    await client.next('conversation.item.input_audio_transcription.completed', 120_000);
    expect(client.events.filter((e) => e.type === 'error')).toEqual([]);
    const stopped = client.events.find((e) => e.type === 'input_audio_buffer.speech_stopped') as Event;
    expect(stopped.audio_end_ms as number).toBeGreaterThan(2000);
    client.socket.close();
  });

  it('rejects bad realtime options naming them', () => {
    expect(() => buildSpeechHandler({ speech, auth: [KEY], realtime: { maxSessions: -1 } })).toThrow(
      /realtime\.maxSessions/,
    );
    expect(() => buildSpeechHandler({ speech, auth: [KEY], realtime: { nope: 1 } as never })).toThrow(/nope/);
  });

  it('closeRealtime() (shutdown) tells every session shutting_down and closes with 1001', async () => {
    const { url, control } = await serve();
    const client = await connect(url);
    await client.next('session.created');
    control.closeRealtime();
    expect((await client.next('error')).error).toMatchObject({ code: 'shutting_down' });
    expect((await client.closed).code).toBe(1001);
  });
});

/** Writes raw bytes to the server and resolves with what comes back before it closes (or after 500 ms, scaled). */
function raw(url: string, bytes: string | Buffer, resetAfterWrite = false): Promise<string> {
  const { port } = new URL(url);
  return new Promise((resolve) => {
    const socket = connectTcp(Number(port), '127.0.0.1', () => {
      socket.write(bytes);
      if (resetAfterWrite) socket.resetAndDestroy();
    });
    let answer = '';
    socket.on('data', (chunk) => {
      answer += chunk;
    });
    socket.on('error', () => undefined);
    socket.on('close', () => resolve(answer));
    setTimeout(() => {
      socket.destroy();
      resolve(answer);
    }, scaledMs(500));
  });
}

const upgradeHead = (path: string) =>
  `GET ${path} HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
  `Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\nAuthorization: Bearer ${KEY}\r\n\r\n`;

describe('/v1/realtime: hostile and unlucky clients never take the host down', () => {
  it('survives a URL that does not parse, resets during a 404, and an invalid frame on a refused socket', async () => {
    const { url } = await serve({ realtime: { maxSessions: 1 } });
    await raw(url, upgradeHead('http://[/v1/realtime'));
    await raw(url, upgradeHead('http://a:b:c/x'));
    for (let i = 0; i < 20; i++) await raw(url, upgradeHead('/v1/elsewhere'), true);
    expect(await raw(url, upgradeHead('/v1/elsewhere'))).toMatch(/^HTTP\/1.1 404/);
    const first = await connect(url);
    await first.next('session.created');
    const refused = await connect(url);
    // A frame with a reserved opcode, masked, empty: ws fails the refused socket with an 'error'.
    (refused.socket as unknown as { _socket: { write(b: Buffer): void } })._socket.write(
      Buffer.from([0x83, 0x80, 0, 0, 0, 0]),
    );
    await refused.closed;
    // Still serving.
    const again = await connect(url.replace('/v1/realtime', '/speech/v1/realtime'));
    expect((await again.next('error')).error).toMatchObject({ code: 'too_many_sessions' });
    first.socket.close();
  });

  it('answers once when attached twice, and limits sessions per client', async () => {
    const { url, control } = await serve({ realtime: { maxSessionsPerClient: 1 } });
    const server = servers.at(-1)?.server as Server;
    control.handler.attach(server);
    const client = await connect(url);
    await client.next('session.created');
    const second = await connect(url);
    expect((await second.next('error')).error).toMatchObject({ code: 'client_session_limit' });
    expect((await second.closed).code).toBe(1013);
    client.socket.close();
  });

  it('turns away a session still authenticating when the server shuts down', async () => {
    const { url, control } = await serve({
      auth: async () => {
        await new Promise((resolve) => setTimeout(resolve, scaledMs(300)));
        return true;
      },
    });
    const client = new Client(url);
    // Long enough for the upgrade to reach authorize(), which takes longer still: both grow with the slowdown.
    await new Promise((resolve) => setTimeout(resolve, scaledMs(100)));
    control.closeRealtime();
    expect((await client.next('error')).error).toMatchObject({ code: 'shutting_down' });
    expect((await client.closed).code).toBe(1001);
    expect(control.realtimeSessions).toBe(0);
  });

  it('a cancel while a voice loads leaves speech working; queued speech is bounded', async () => {
    const { url } = await serve({ realtime: { maxQueuedSpeechChars: 1024 } });
    const client = await connect(url);
    await client.next('session.created');
    const voice = (await speech.listVoices())[0]?.id as string;
    client.send({ type: 'voxmill.speech.append', text: 'First.', voice });
    client.send({ type: 'voxmill.speech.cancel' });
    client.send({ type: 'voxmill.speech.append', text: 'Second one.', voice });
    client.send({ type: 'voxmill.speech.end' });
    const done = await client.next('voxmill.speech.done');
    const started = client.events.filter((e) => e.type === 'voxmill.speech.started');
    expect(started.map((e) => e.speech_id)).toEqual([done.speech_id]);
    client.send({ type: 'voxmill.speech.append', text: 'x'.repeat(2000), voice });
    expect((await client.next('error')).error).toMatchObject({ code: 'speech_queue_full' });
    client.socket.close();
  });

  it('every committed item completes, even one committed in the silence before the VAD ends it', async () => {
    const { url } = await serve();
    const client = await connect(url);
    client.send(ga16k);
    await client.next('session.updated');
    await client.stream(jfk4, 16000);
    client.send({ type: 'input_audio_buffer.commit' });
    await client.stream(silence(1.5, 16000), 16000);
    // The VAD's stop after the commit closes the utterance the commit reopened.
    await client.next('input_audio_buffer.speech_stopped');
    await client.next('input_audio_buffer.speech_stopped');
    const ids = (type: string) => client.events.filter((e) => e.type === type).map((e) => e.item_id as string);
    const committed = ids('input_audio_buffer.committed');
    expect(committed.length).toBeGreaterThanOrEqual(3);
    await expect
      .poll(() => committed.every((id) => ids('conversation.item.input_audio_transcription.completed').includes(id)), {
        timeout: scaledMs(120_000),
      })
      .toBe(true);
    client.socket.close();
  });

  it('a storm of settings changes runs at most two transcriptions for the session', async () => {
    const { url } = await serve();
    const client = await connect(url);
    for (let i = 0; i < 6; i++) {
      client.send({
        type: 'session.update',
        session: {
          audio: {
            input: { format: { type: 'audio/pcm', rate: 16000 }, transcription: { language: i % 2 ? 'en' : 'de' } },
          },
        },
      });
      await client.stream(jfk4.subarray(0, 2 * 16000), 16000);
      client.send({ type: 'input_audio_buffer.commit' });
    }
    await client.next('session.updated');
    // Stopped transcriptions leave the engine at their next checkpoint; six would be running without the bound.
    const busy = () => speech.status().reduce((n, model) => n + model.active + model.pending, 0);
    await expect.poll(busy, { timeout: scaledMs(10_000) }).toBeLessThanOrEqual(2);
    client.socket.close();
    await client.closed;
  });
});
