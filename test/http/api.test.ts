// The /v1 API end to end with the real engine: random-weight whisper (real compute, meaningless text), the real
// Silero VAD, fixture Piper voices (audio length follows the phonemes) and the native encoders. One test per rule
// and limit of the spec; streaming, disconnects and backpressure observed in the engine. Every response is
// checked against openapi.json.
import { request as httpRequest, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import request, { type Response } from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
// Waits for work grow with this machine's slowdown.
import { scaledMs } from '../../scripts/lib/machine-speed.mjs';
import {
  createSpeech,
  type Speech,
  type SpeechEngine,
  type SpeechHandlerOptions,
  type SpeechStream,
} from '../../src/index.js';
import { measureEventLoop } from '../helpers/event-loop.js';
import { HOST_KINDS, type HostKind, makeHost, type TestHost } from '../helpers/http-apps.js';
import { documented, expectDocumented } from '../helpers/openapi.js';
import { fixture, sharedAudio, sharedModel } from '../helpers/paths.js';

const KEY = 'sk-e2e';
const tinyEn = fixture('models/ggml-tiny.en-random.bin');
// Multilingual, so language detection and hints really run (random weights: the detected language is arbitrary).
const tinyMultilingual = fixture('models/ggml-tiny-random.bin');

/** The engine, with every synthesis stream it hands out kept for inspection. */
interface Observed {
  stream: SpeechStream;
  ended: number | undefined;
  closed: number | undefined;
}
let speech: Speech;
const streams: Observed[] = [];
function observedEngine(inner: Speech): SpeechEngine {
  return {
    get modelIds() {
      return inner.modelIds;
    },
    listVoices: (options) => inner.listVoices(options),
    transcribe: (input, options) => inner.transcribe(input, options),
    synthesize: async (options) => {
      const stream = await inner.synthesize(options);
      const observed: Observed = { stream, ended: undefined, closed: undefined };
      streams.push(observed);
      stream.once('end', () => {
        observed.ended = performance.now();
      });
      stream.once('close', () => {
        observed.closed = performance.now();
      });
      return stream;
    },
  };
}

const hosts: TestHost[] = [];
async function start(kind: HostKind, options: Partial<SpeechHandlerOptions> = {}) {
  const host = makeHost(kind, { speech: observedEngine(speech), auth: [KEY], ...options });
  await new Promise<void>((resolve) => host.server.listen(0, '127.0.0.1', resolve));
  hosts.push(host);
  const url = `http://127.0.0.1:${(host.server.address() as AddressInfo).port}${host.mount}`;
  const agent = request(`http://127.0.0.1:${(host.server.address() as AddressInfo).port}`);
  const call = (test: request.Test) => documented(test.set('Authorization', `Bearer ${KEY}`), host.mount);
  return { agent, url, call, path: (p: string) => `${host.mount}${p}` };
}

let api: Awaited<ReturnType<typeof start>>;
beforeAll(async () => {
  speech = createSpeech({
    models: { 'svc-stt-1': tinyMultilingual, 'svc-stt-1-flash': { model: tinyEn, maxQueue: 4 } },
    vadModel: sharedModel('whisper/ggml-silero-v6.2.0.bin'),
    voiceDirs: [fixture('voices'), sharedModel('piper')],
  });
  api = await start('bare http');
});
afterAll(async () => {
  for (const host of hosts) {
    host.server.closeAllConnections();
    await new Promise((resolve) => host.server.close(resolve));
  }
  await speech.close();
});

const speak = (body: object) => api.call(api.agent.post('/v1/speech').send(body));
const transcribe = (file: string, fields: Record<string, string> = {}) => {
  let test = api.agent.post('/v1/transcriptions').field('model', 'svc-stt-1-flash');
  for (const [name, value] of Object.entries(fields)) test = test.field(name, value);
  return api.call(test.attach('file', file));
};
const jfk = sharedAudio('jfk.wav');
const base = { model: 'svc-tts-1', voice: 'en_US-fixture', input: 'Hello there.' };

describe.each(HOST_KINDS)('every route in %s', (kind) => {
  it('lists voices, transcribes jfk.wav and speaks', async () => {
    const { agent, call, path } = await start(kind);
    const voices = await call(agent.get(path('/v1/voices')));
    expect(voices.body.data.map((v: { id: string }) => v.id)).toContain('en_US-fixture_multi#bob');
    const text = await call(
      agent.post(path('/v1/transcriptions')).field('model', 'svc-stt-1-flash').attach('file', jfk),
    );
    expect(text.status).toBe(200);
    expect(text.body.duration).toBeCloseTo(11, 1);
    const audio = await call(agent.post(path('/v1/speech')).send({ ...base, format: 'wav' }));
    expect(audio.status).toBe(200);
    expect(audio.headers['content-type']).toBe('audio/wav');
    expect(Buffer.from(audio.body).subarray(0, 4).toString()).toBe('RIFF');
  });
});

describe('POST /v1/speech rules (spec 4.3 and 8)', () => {
  it('model: svc-tts-1 speaks the best installed quality, svc-tts-1-flash the fastest; others are 400', async () => {
    const best = await speak(base);
    expect(best.headers['x-voxmill-voice-variant']).toBe('en_US-fixture-medium');
    const flash = await speak({ ...base, model: 'svc-tts-1-flash' });
    expect(flash.headers['x-voxmill-voice-variant']).toBe('en_US-fixture-low');
    const other = await speak({ ...base, model: 'tts-1-hd' });
    expect(other.status).toBe(400);
    expect(other.body.error.param).toBe('model');
  });

  it('voice: any id from GET /v1/voices, including a speaker of a multi-speaker voice; others are 400', async () => {
    for (const voice of (await api.call(api.agent.get('/v1/voices'))).body.data) {
      const res = await speak({ ...base, voice: voice.id, format: 'pcm16' });
      expect(res.status, voice.id).toBe(200);
    }
    const unknown = await speak({ ...base, voice: 'en_US-nobody' });
    expect(unknown.status).toBe(400);
    expect(unknown.body.error).toMatchObject({ code: 'voice_not_found', param: 'voice' });
  });

  it('input: 1 to 5,000 characters, counted as code points', async () => {
    const sentence = 'The quick brown fox jumps over the lazy dog. ';
    const longest = sentence.repeat(120).slice(0, 5000);
    expect((await speak({ ...base, input: longest, format: 'pcm16' })).status).toBe(200);
    // 5,000 astral characters are 10,000 UTF-16 units and still within the limit.
    expect((await speak({ ...base, input: `${'\u{1D400}'.repeat(4990)}Hello.`, format: 'pcm16' })).status).toBe(200);
    const over = await speak({ ...base, input: `${longest}x` });
    expect(over.status).toBe(400);
    expect(over.body.error).toMatchObject({ code: 'invalid_value', param: 'input' });
    expect(over.body.error.message).toContain('5000');
    const empty = await speak({ ...base, input: '' });
    expect(empty.status).toBe(400);
    expect(empty.body.error.param).toBe('input');
  });

  it('format: mp3 (default), wav, opus and pcm16 with their Content-Types; others are 400', async () => {
    const expected = {
      mp3: 'audio/mpeg',
      wav: 'audio/wav',
      opus: 'audio/ogg; codecs=opus',
      pcm16: 'audio/L16; rate=22050; channels=1',
    };
    expect((await speak(base)).headers['content-type']).toBe('audio/mpeg');
    for (const [format, type] of Object.entries(expected)) {
      const res = await speak({ ...base, format });
      expect(res.headers['content-type'], format).toBe(type);
    }
    const flac = await speak({ ...base, format: 'flac' });
    expect(flac.status).toBe(400);
    expect(flac.body.error.param).toBe('format');
  });

  it('speed: 0.5 to 2.0 inclusive; the audio length follows it', async () => {
    const length = async (speed: number) => Buffer.from((await speak({ ...base, speed, format: 'pcm16' })).body).length;
    const normal = await length(1);
    expect(await length(2)).toBeCloseTo(normal / 2, -3);
    expect(await length(0.5)).toBeCloseTo(normal * 2, -3);
    for (const speed of [0.49, 2.01, 0, -1]) {
      const res = await speak({ ...base, speed });
      expect(res.status, String(speed)).toBe(400);
      expect(res.body.error).toMatchObject({ code: 'invalid_value', param: 'speed' });
    }
  });

  it('sample_rate: 8000, 16000, 22050, 24000, 44100 or 48000 (Opus not 22050 or 44100); others are 400', async () => {
    for (const rate of [8000, 16000, 22050, 24000, 44100, 48000]) {
      const res = await speak({ ...base, format: 'wav', sample_rate: rate });
      expect(Buffer.from(res.body).readUInt32LE(24), String(rate)).toBe(rate);
    }
    for (const [format, rate] of [
      ['wav', 12345],
      ['opus', 22050],
      ['opus', 44100],
      ['mp3', 96000],
    ] as const) {
      const res = await speak({ ...base, format, sample_rate: rate });
      expect(res.status, `${format} ${rate}`).toBe(400);
      expect(res.body.error).toMatchObject({ code: 'invalid_value', param: 'sample_rate' });
    }
  });

  it('voice controls: length_scale and sentence_silence change the audio as asked; each is checked by range', async () => {
    const samples = async (fields: object) =>
      Buffer.from((await speak({ ...base, input: 'One. Two.', format: 'pcm16', ...fields })).body).length / 2;
    const plain = await samples({ sentence_silence: 0 });
    // The fixture voice speaks 256 samples per phoneme id times length_scale.
    expect(await samples({ sentence_silence: 0, length_scale: 2 })).toBeCloseTo(plain * 2, -2);
    expect((await samples({ sentence_silence: 1 })) - plain).toBe(22050);
    expect((await samples({ sentence_silence: 0, noise_scale: 0, noise_w: 0 })) - plain).toBe(0);
    for (const [field, value] of [
      ['noise_scale', 10.5],
      ['noise_w', -1],
      ['length_scale', 0.01],
      ['sentence_silence', 11],
      ['length_scale', 5], // the library takes up to 20; HTTP keeps one request's audio bounded
      ['sentence_silence', 3],
      ['length_scale', '2'],
    ] as const) {
      const res = await speak({ ...base, [field]: value });
      expect(res.status, `${field} ${value}`).toBe(400);
      expect(res.body.error.param).toBe(field);
      expect(res.body.error.message).toMatch(new RegExp(`^${field} `));
    }
  });

  it('timestamps "word": JSON with the whole audio in base64 and each word of the input, in order', async () => {
    const res = await speak({
      ...base,
      input: 'Hello there, my friend. See you soon!',
      format: 'wav',
      timestamps: 'word',
    });
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    const { audio, content_type, sample_rate, duration, words } = res.body;
    const wav = Buffer.from(audio, 'base64');
    expect(wav.subarray(0, 4).toString()).toBe('RIFF');
    // The whole file's sizes are written in (a streamed wav says 0xFFFFFFFF).
    expect(wav.readUInt32LE(4)).toBe(wav.length - 8);
    expect([content_type, sample_rate]).toEqual(['audio/wav', 22050]);
    expect(words.map((w: { word: string }) => w.word)).toEqual([
      'Hello',
      'there',
      'my',
      'friend',
      'See',
      'you',
      'soon',
    ]);
    let last = 0;
    for (const word of words) {
      expect(word.start).toBeGreaterThanOrEqual(last);
      expect(word.end).toBeGreaterThan(word.start);
      last = word.end;
    }
    expect(last).toBeLessThanOrEqual(duration);
    // The second sentence starts after the 0.2 s pause.
    expect(words[4].start - words[3].end).toBeGreaterThan(0.2);
  });

  it('timestamps with stream_format "sse": words before the audio they time, deltas, then done', async () => {
    const res = await api.call(
      api.agent
        .post('/v1/speech')
        .send({
          ...base,
          input: 'One two. Three four.',
          format: 'pcm16',
          timestamps: 'word',
          stream_format: 'sse',
        })
        .buffer(true)
        .parse((response, done) => {
          let text = '';
          response.setEncoding('utf8');
          response.on('data', (chunk: string) => {
            text += chunk;
          });
          response.on('end', () => done(null, text));
        }),
    );
    expect(res.headers['content-type']).toMatch(/^text\/event-stream/);
    const events = (res.body as string)
      .split('\n\n')
      .filter((block) => block.startsWith('data: '))
      .map((block) => JSON.parse(block.slice(6)) as { type: string; words?: Array<{ word: string }>; audio?: string });
    expect(events[0]?.type).toBe('speech.audio.words');
    expect(events.flatMap((e) => e.words ?? []).map((w) => w.word)).toEqual(['One', 'two', 'Three', 'four']);
    expect(events.at(-1)?.type).toBe('speech.audio.done');
    const audio = events.filter((e) => e.type === 'speech.audio.delta');
    expect(Buffer.concat(audio.map((e) => Buffer.from(e.audio as string, 'base64'))).length).toBeGreaterThan(0);
  });

  it('timestamps JSON holds at most limits.maxTimedSpeechBytes of audio: more is 413 audio_too_long', async () => {
    const small = await start('bare http', { limits: { maxTimedSpeechBytes: 2048 } });
    const res = await small.call(
      small.agent
        .post('/v1/speech')
        .send({ ...base, input: 'A sentence long enough. '.repeat(20), timestamps: 'word' }),
    );
    expect(res.status).toBe(413);
    expect(res.body.error).toMatchObject({ code: 'audio_too_long', param: 'input' });
  });

  it('SSML input: a <break> is a pause of exactly its time; malformed SSML is 400 naming input and the place', async () => {
    const samples = async (input: string) =>
      Buffer.from((await speak({ ...base, input, format: 'pcm16', sentence_silence: 0 })).body).length / 2;
    const plain = await samples('One. Two.');
    expect(await samples('<speak>One.<break time="500ms"/>Two.</speak>')).toBe(plain + 11025);
    expect(await samples('<speak>One. Two.</speak>')).toBe(plain);
    const bad = await speak({ ...base, input: '<speak>One <audio src="x.wav"/></speak>' });
    expect(bad.status).toBe(400);
    expect(bad.body.error).toMatchObject({ code: 'invalid_value', param: 'input' });
    expect(bad.body.error.message).toMatch(/<audio> is not supported at character 12/);
    const unknown = await speak({ ...base, input: '<speak>One <voice name="nobody">two</voice></speak>' });
    expect(unknown.body.error).toMatchObject({ code: 'invalid_value', param: 'input' });
    expect(unknown.body.error.message).toMatch(
      /<voice name="nobody">: no installed voice has id "nobody".* at character 12/,
    );
  });

  it('SSML <voice>: another voice (or speaker) mid-input, its audio brought to the output rate', async () => {
    const samples = async (input: string) =>
      Buffer.from((await speak({ ...base, input, format: 'pcm16', sentence_silence: 0 })).body).length / 2;
    // de_DE-fixture speaks at 16 kHz: 256 samples per id there, 352.8 at the request voice's 22050 Hz.
    const german = await samples('<speak><voice name="de_DE-fixture">Hallo.</voice></speak>');
    const alone = await speak({
      ...base,
      voice: 'de_DE-fixture',
      input: 'Hallo.',
      format: 'pcm16',
      sentence_silence: 0,
    });
    expect(alone.headers['content-type']).toBe('audio/L16; rate=16000; channels=1');
    expect(german).toBe(Math.round(((Buffer.from(alone.body).length / 2) * 22050) / 16000));
    const bob = await speak({
      ...base,
      input: '<speak>Hi. <voice name="en_US-fixture_multi#bob">Hi.</voice></speak>',
      format: 'pcm16',
      timestamps: 'word',
    });
    expect(bob.body.words.map((w: { word: string }) => w.word)).toEqual(['Hi', 'Hi']);
  });

  it('timestamps with a voice whose model gives no phoneme durations: 400 timestamps_unavailable', async () => {
    const res = await speak({ ...base, voice: 'test_voice', timestamps: 'word' });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: 'timestamps_unavailable', param: 'timestamps' });
    expect(res.body.error.message).not.toContain('/');
  });

  it('answers 429 with Retry-After when the synthesis queue is full', async () => {
    const small = createSpeech({ voiceDirs: [fixture('voices')], tts: { workers: 1, maxQueue: 0 } });
    try {
      const host = makeHost('bare http', { speech: small, auth: false });
      await new Promise<void>((resolve) => host.server.listen(0, '127.0.0.1', resolve));
      hosts.push(host);
      const agent = request(`http://127.0.0.1:${(host.server.address() as AddressInfo).port}`);
      const long = { ...base, input: 'A sentence to keep the worker busy. '.repeat(100), format: 'pcm16' };
      const results = await Promise.all(
        [long, long, long].map((body) => documented(agent.post('/v1/speech').send(body))),
      );
      const statuses = results.map((res) => res.status).sort();
      expect(statuses[0]).toBe(200);
      expect(statuses).toContain(429);
      const shed = results.find((res) => res.status === 429);
      expect(shed?.headers['retry-after']).toBe('1');
      expect(shed?.body.error.code).toBe('queue_full');
    } finally {
      await small.close();
    }
  });
});

describe('POST /v1/transcriptions rules (spec 4.2 and 8)', () => {
  it('1: text, language and duration are always returned; timestamps none returns nothing else', async () => {
    const res = await transcribe(jfk, { timestamps: 'none' });
    expect(Object.keys(res.body).sort()).toEqual(['duration', 'language', 'text']);
    expect(typeof res.body.text).toBe('string');
  });

  it('2: timestamps word returns words', async () => {
    const res = await transcribe(jfk, { timestamps: 'word' });
    expect(res.body.words.length).toBeGreaterThan(0);
    expect(res.body.segments).toBeUndefined();
  });

  it('3: timestamps segment (the default) returns segments, and so does diarize with speakers', async () => {
    const plain = await transcribe(jfk);
    expect(plain.body.segments.length).toBeGreaterThan(0);
    const diarized = await transcribe(sharedAudio('stereo_diarization.wav'), { diarize: 'true', timestamps: 'none' });
    expect(diarized.status).toBe(200);
    expect(diarized.body.segments.length).toBeGreaterThan(0);
    expect(diarized.body.segments.every((s: { speaker?: string }) => /^speaker_\d+$/.test(s.speaker ?? ''))).toBe(true);
  });

  it('4: language holds the detected language when omitted and the supplied one when given', async () => {
    const multilingual = (fields: Record<string, string>) => {
      let test = api.agent.post('/v1/transcriptions').field('model', 'svc-stt-1').field('timestamps', 'none');
      for (const [name, value] of Object.entries(fields)) test = test.field(name, value);
      return api.call(test.attach('file', jfk));
    };
    const detected = await speech.transcribe(jfk, { model: 'svc-stt-1', timestamps: 'none' });
    const omitted = await multilingual({});
    expect(omitted.body.language).toBe(detected.language);
    const supplied = detected.language === 'de' ? 'fr' : 'de';
    expect((await multilingual({ language: supplied })).body.language).toBe(supplied);
    // An English-only model refuses another language, naming the field.
    const german = await transcribe(jfk, { language: 'de' });
    expect(german.status).toBe(400);
    expect(german.body.error.param).toBe('language');
    const nonsense = await transcribe(jfk, { language: 'klingon' });
    expect(nonsense.body.error).toMatchObject({ code: 'invalid_value', param: 'language' });
  });

  it('accepts wav, mp3, m4a (index at the end), flac, ogg (Vorbis and Opus), webm and ADTS aac', async () => {
    for (const file of [
      sharedAudio('jfk.mp3'),
      fixture('audio/jfk-moov-end.m4a'),
      sharedAudio('jfk.flac'),
      sharedAudio('jfk.ogg'),
      sharedAudio('jfk.opus'),
      fixture('audio/jfk.webm'),
      fixture('audio/jfk.aac'),
    ]) {
      const res = await transcribe(file, { timestamps: 'none' });
      expect(res.status, file).toBe(200);
      expect(res.body.duration, file).toBeCloseTo(11, 0);
    }
  });

  it("answers undecodable audio with 400 and the decoder's reason", async () => {
    const wav = Buffer.from(await import('node:fs').then((fs) => fs.readFileSync(jfk)));
    wav.fill(0xaa, 12, 64); // the fmt chunk is gone
    const res = await api.call(
      api.agent.post('/v1/transcriptions').field('model', 'svc-stt-1').attach('file', wav, 'a'),
    );
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: 'audio_decode_failed', param: 'file' });
    expect(res.body.error.message.length).toBeGreaterThan(40);
  });

  it('answers audio over the duration limit with 413, and a missing model file with 503 naming the pull command', async () => {
    const limited = createSpeech({
      models: { 'svc-stt-1': 'base' },
      modelsDir: fixture('voices'),
      maxDurationSeconds: 5,
    });
    try {
      const host = makeHost('bare http', { speech: limited, auth: false });
      await new Promise<void>((resolve) => host.server.listen(0, '127.0.0.1', resolve));
      hosts.push(host);
      const agent = request(`http://127.0.0.1:${(host.server.address() as AddressInfo).port}`);
      const missing = await documented(
        agent.post('/v1/transcriptions').field('model', 'svc-stt-1').attach('file', jfk),
      );
      expect(missing.status).toBe(503);
      expect(missing.body.error.code).toBe('model_not_installed');
      expect(missing.body.error.message).toContain('npx voxmill models pull base');
    } finally {
      await limited.close();
    }
    const tooLong = createSpeech({ models: { 'svc-stt-1': tinyEn }, vadModel: null, maxDurationSeconds: 5 });
    try {
      const host = makeHost('bare http', { speech: tooLong, auth: false });
      await new Promise<void>((resolve) => host.server.listen(0, '127.0.0.1', resolve));
      hosts.push(host);
      const agent = request(`http://127.0.0.1:${(host.server.address() as AddressInfo).port}`);
      const res = await documented(agent.post('/v1/transcriptions').field('model', 'svc-stt-1').attach('file', jfk));
      expect(res.status).toBe(413);
      expect(res.body.error).toMatchObject({ code: 'audio_too_long', param: 'file' });
    } finally {
      await tooLong.close();
    }
    // The handler's own per-request limit, below an engine that would take 3 hours.
    const engine = createSpeech({ models: { 'svc-stt-1': tinyEn }, vadModel: null });
    try {
      const host = makeHost('bare http', { speech: engine, auth: false, limits: { maxAudioSeconds: 5 } });
      await new Promise<void>((resolve) => host.server.listen(0, '127.0.0.1', resolve));
      hosts.push(host);
      const agent = request(`http://127.0.0.1:${(host.server.address() as AddressInfo).port}`);
      const res = await documented(agent.post('/v1/transcriptions').field('model', 'svc-stt-1').attach('file', jfk));
      expect(res.status).toBe(413);
      expect(res.body.error).toMatchObject({ code: 'audio_too_long', param: 'file' });
      expect(res.body.error.message).toMatch(/maximum of 5/);
    } finally {
      await engine.close();
    }
  });
});

/** Posts a speech request with a raw client; resolves once the response starts. */
function rawSpeech(body: object): Promise<{ res: IncomingMessage; destroy: () => void }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(`${api.url}/v1/speech`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${KEY}`, 'Content-Type': 'application/json' },
    });
    req.on('response', (res) => {
      // Raw responses are held to the document too: status, headers and media type.
      expectDocumented({ status: res.statusCode, headers: res.headers } as unknown as Response, 'POST', '/v1/speech');
      resolve({ res, destroy: () => req.destroy() });
    });
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}

const FIVE_THOUSAND = 'Streaming speech arrives sentence by sentence, long before the last one is done. '
  .repeat(70)
  .slice(0, 5000);

describe('streaming', () => {
  it('sends the first audio of a 5,000-character request before synthesis ends', async () => {
    const { res } = await rawSpeech({ ...base, input: FIVE_THOUSAND });
    const observed = streams.at(-1) as Observed;
    const firstByte = await new Promise<number>((resolve) => res.once('data', () => resolve(performance.now())));
    const sentencesAtFirstByte = observed.stream.progress.sentences;
    let bytes = 0;
    res.on('data', (chunk: Buffer) => {
      bytes += chunk.length;
    });
    await new Promise((resolve) => res.once('end', resolve));
    expect(res.headers['transfer-encoding']).toBe('chunked');
    expect(observed.ended).toBeDefined();
    expect(firstByte).toBeLessThan(observed.ended as number);
    expect(sentencesAtFirstByte).toBeLessThan(observed.stream.progress.sentences / 4);
    expect(bytes).toBeGreaterThan(100_000);
  });

  it('stops synthesis within one sentence when the client disconnects', async () => {
    const { res, destroy } = await rawSpeech({ ...base, input: FIVE_THOUSAND, format: 'pcm16' });
    const observed = streams.at(-1) as Observed;
    await new Promise((resolve) => res.once('data', resolve));
    destroy();
    const atClose = observed.stream.progress.sentences;
    await new Promise((resolve) => setTimeout(resolve, scaledMs(500)));
    expect(observed.closed).toBeDefined();
    expect(observed.ended).toBeUndefined();
    expect(observed.stream.progress.sentences).toBeLessThanOrEqual(atClose + 1);
    expect(speech.ttsStatus().active).toBe(0);
  });

  it('holds synthesis back while the client does not read (res.write backpressure)', async () => {
    // 48 kHz pcm16 of 5,000 characters is about 13 MB, more than the socket buffers hold.
    const { res } = await rawSpeech({ ...base, input: FIVE_THOUSAND, format: 'pcm16', sample_rate: 48_000 });
    const observed = streams.at(-1) as Observed;
    res.pause();
    await new Promise((resolve) => setTimeout(resolve, 1500));
    const heldAt = observed.stream.progress.seconds;
    expect(observed.ended).toBeUndefined();
    let bytes = 0;
    res.on('data', (chunk: Buffer) => {
      bytes += chunk.length;
    });
    res.resume();
    await new Promise((resolve) => res.once('end', resolve));
    const total = observed.stream.progress.seconds;
    expect(heldAt).toBeLessThan(total * 0.75);
    expect(Math.abs(bytes - total * 48_000 * 2)).toBeLessThan(48_000 * 2 * 0.05);
  });

  it('keeps the event loop free while transcribing and speaking', async () => {
    const { ratio } = await measureEventLoop(() =>
      Promise.all([transcribe(jfk, { timestamps: 'word' }), speak({ ...base, input: FIVE_THOUSAND })]),
    );
    // 0.79-0.85 alone, 0.62-0.72 under load (see measureEventLoop).
    expect(ratio).toBeGreaterThan(0.45);
  });
});
