// Text-to-speech end to end: fixture voices (length = phoneme ids x length_scale x 256 samples, tone by sid) and
// the real dummy Piper voice, through the addon's espeak-ng and ONNX Runtime and the native encoders, checked with
// ffprobe/ffmpeg. Expected lengths come from piper-phonemize's own (WebAssembly) phonemizer, a dev dependency, so
// they also check the addon's phonemes against it.
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
// Waits for work grow with this machine's slowdown; the library's own timers (stall, reader timeout) stay as set.
import { scaledMs } from '../../scripts/lib/machine-speed.mjs';
import {
  createSpeech,
  decodeAudio,
  QueueFullError,
  type Speech,
  type SpeechFormat,
  VoiceNotFoundError,
} from '../../src/index.js';
import { normalizeText, splitIntoChunks } from '../../src/tts/text.js';
import { measureEventLoop } from '../helpers/event-loop.js';
import { ffprobeDecodedDuration } from '../helpers/ffprobe.js';
import { fixture, sharedAudio, sharedModel } from '../helpers/paths.js';

const voiceDir = fixture('voices');
const temp = mkdtempSync(join(tmpdir(), 'voxmill-tts-'));
afterAll(() => rmSync(temp, { recursive: true, force: true }));

let speech: Speech | undefined;
function engine(options: Parameters<typeof createSpeech>[0] = {}): Speech {
  speech = createSpeech({ voiceDirs: [voiceDir, sharedModel('piper')], ...options });
  return speech;
}
afterEach(async () => {
  await speech?.close();
  speech = undefined;
});

const phonemizer = createRequire(import.meta.url)('piper-phonemize') as {
  phonemize(text: string, voice: string): number[][];
};
const HOP = 256;
const SILENCE_SECONDS = 0.2;

/** What the fixture voice must produce, computed here from the phonemizer: ^ _ (p _)* $ ids per sentence. */
function expectedSeconds(text: string, rate: number, lengthScale: number): number {
  let samples = 0;
  let sentences = 0;
  for (const chunk of splitIntoChunks(normalizeText(text))) {
    for (const phonemes of phonemizer.phonemize(chunk, 'en-us')) {
      if (phonemes.length === 0) continue;
      const ids = 2 + 2 * phonemes.length + 1;
      samples += Math.floor(Math.fround(ids * Math.fround(lengthScale)) * HOP);
      sentences++;
    }
  }
  return samples / rate + (sentences - 1) * SILENCE_SECONDS;
}

function save(name: string, audio: Buffer): string {
  const path = join(temp, name);
  writeFileSync(path, audio);
  return path;
}

function probeRate(path: string): number {
  const out = execFileSync('ffprobe', [
    '-v',
    'error',
    '-show_entries',
    'stream=sample_rate,channels',
    '-of',
    'csv=p=0',
    path,
  ]);
  const [rate, channels] = out.toString().trim().split(',').map(Number);
  expect(channels).toBe(1);
  return rate as number;
}

/** The input sample rate field of the OpusHead packet (RFC 7845 section 5.1). */
function opusInputRate(ogg: Buffer): number {
  const head = ogg.indexOf('OpusHead');
  expect(head).toBeGreaterThan(0);
  return ogg.readUInt32LE(head + 12);
}

const TEXT = 'The quick brown fox jumps over the lazy dog. It was not amused! Was it tired?';

describe('synthesizeToBuffer', () => {
  const cases: Array<[SpeechFormat, number[]]> = [
    ['wav', [8000, 16000, 22050, 24000, 44100, 48000]],
    ['mp3', [8000, 16000, 22050, 24000, 44100, 48000]],
    ['opus', [8000, 16000, 24000, 48000]],
    ['pcm16', [16000, 22050, 48000]],
  ];
  for (const [format, rates] of cases) {
    it(`${format} decodes back at every allowed rate with the expected duration (within 50 ms)`, async () => {
      const s = engine();
      const expected = expectedSeconds(TEXT, 22050, 1);
      for (const sampleRate of rates) {
        const result = await s.synthesizeToBuffer({ voice: 'en_US-fixture', input: TEXT, format, sampleRate });
        expect(result.sampleRate).toBe(sampleRate);
        expect(result.duration).toBeCloseTo(expected, 3);
        let seconds: number;
        if (format === 'pcm16') {
          expect(result.contentType).toBe(`audio/L16; rate=${sampleRate}; channels=1`);
          seconds = result.audio.length / 2 / sampleRate;
        } else {
          const path = save(`all.${format}`, result.audio);
          // Opus always decodes at 48 kHz; the encoded rate is the codec's mode and the OpusHead's input rate.
          expect(probeRate(path)).toBe(format === 'opus' ? 48000 : sampleRate);
          if (format === 'opus') expect(opusInputRate(result.audio)).toBe(sampleRate);
          seconds = ffprobeDecodedDuration(path);
        }
        expect(Math.abs(seconds - expected), `${format} ${sampleRate}`).toBeLessThan(0.05);
      }
    });
  }

  it('the deprecated onnxRuntime option is accepted and changes nothing; a bad value is named', async () => {
    const auto = engine();
    const expected = (await auto.synthesizeToBuffer({ voice: 'en_US-fixture', input: TEXT, format: 'pcm16' })).audio;
    await auto.close();
    const wasm = engine({ onnxRuntime: 'wasm' });
    const actual = (await wasm.synthesizeToBuffer({ voice: 'en_US-fixture', input: TEXT, format: 'pcm16' })).audio;
    expect(actual.equals(expected)).toBe(true);
    expect(() => createSpeech({ onnxRuntime: 'gpu' as 'wasm' })).toThrow(/^onnxRuntime must be one of/);
  });

  it('uses the voice rate by default, and the next Opus rate for opus; names content types', async () => {
    const s = engine();
    const wav = await s.synthesizeToBuffer({ voice: 'en_US-fixture', input: 'Hi.', format: 'wav' });
    expect([wav.sampleRate, wav.contentType]).toEqual([22050, 'audio/wav']);
    const opus = await s.synthesizeToBuffer({ voice: 'en_US-fixture', input: 'Hi.', format: 'opus' });
    expect([opus.sampleRate, opus.contentType]).toEqual([24000, 'audio/ogg; codecs=opus']);
    const mp3 = await s.synthesizeToBuffer({ voice: 'en_US-fixture', input: 'Hi.' });
    expect([mp3.format, mp3.contentType]).toEqual(['mp3', 'audio/mpeg']);
  });

  it('speed 2.0 halves and 0.5 doubles the duration (within 5%)', async () => {
    const s = engine();
    const at = async (speed: number) =>
      (await s.synthesizeToBuffer({ voice: 'en_US-fixture', input: TEXT, format: 'pcm16', speed })).audio.length;
    const normal = await at(1);
    // Sentence pauses do not scale with speed (Piper's do not either), so compare the speech alone.
    const pauses = 2 * SILENCE_SECONDS * 22050 * 2;
    expect((await at(2)) - pauses).toBeGreaterThan(((normal - pauses) / 2) * 0.95);
    expect((await at(2)) - pauses).toBeLessThan(((normal - pauses) / 2) * 1.05);
    expect((await at(0.5)) - pauses).toBeGreaterThan((normal - pauses) * 2 * 0.95);
    expect((await at(0.5)) - pauses).toBeLessThan((normal - pauses) * 2 * 1.05);
    expect(Math.abs((await at(2)) / 2 / 22050 - expectedSeconds(TEXT, 22050, 0.5))).toBeLessThan(0.01);
  });

  it('svc-tts-1 uses the best installed quality (medium, 22050 Hz), svc-tts-1-flash the fastest (low, 16000 Hz)', async () => {
    const s = engine();
    const best = await s.synthesizeToBuffer({
      voice: 'en_US-fixture',
      input: 'Hi.',
      format: 'wav',
      model: 'svc-tts-1',
    });
    const fast = await s.synthesizeToBuffer({
      voice: 'en_US-fixture',
      input: 'Hi.',
      format: 'wav',
      model: 'svc-tts-1-flash',
    });
    expect([best.variant, best.sampleRate]).toEqual(['en_US-fixture-medium', 22050]);
    expect([fast.variant, fast.sampleRate]).toEqual(['en_US-fixture-low', 16000]);
  });

  it('gives different audio for two speakers of one voice', async () => {
    const s = engine();
    const say = (voice: string) => s.synthesizeToBuffer({ voice, input: TEXT, format: 'pcm16' });
    const [alice, bob, aliceAgain] = await Promise.all([
      say('en_US-fixture_multi#alice'),
      say('en_US-fixture_multi#bob'),
      say('en_US-fixture_multi#alice'),
    ]);
    expect([alice.speaker, bob.speaker]).toEqual([0, 1]);
    expect(alice.audio.length).toBe(bob.audio.length);
    expect(alice.audio.equals(bob.audio)).toBe(false);
    expect(alice.audio.equals(aliceAgain.audio)).toBe(true);
  });

  it("speaks with the real dummy Piper voice (1 s of silence per sentence, Piper's own I/O contract)", async () => {
    const s = engine();
    const result = await s.synthesizeToBuffer({ voice: 'test_voice', input: 'One. Two. Three.', format: 'wav' });
    const path = save('dummy.wav', result.audio);
    expect(Math.abs(ffprobeDecodedDuration(path) - (3 + 2 * SILENCE_SECONDS))).toBeLessThan(0.01);
  });

  it('writes final sizes into a whole wav', async () => {
    const s = engine();
    const { audio } = await s.synthesizeToBuffer({ voice: 'en_US-fixture', input: TEXT, format: 'wav' });
    expect(audio.toString('ascii', 0, 4)).toBe('RIFF');
    expect(audio.readUInt32LE(4)).toBe(audio.length - 8);
  });
});

describe('synthesize (streaming)', () => {
  const LONG =
    `Welcome to the long read. ${'This sentence keeps the synthesizer busy for a while, on purpose. '.repeat(200)}`
      .slice(0, 5000)
      .trim();

  it('streams 5,000 characters: the first chunk comes after a few sentences of 70, the event loop keeps ticking', async () => {
    const s = engine({ tts: { lookahead: 1 } });
    expect([...LONG].length).toBeLessThanOrEqual(5000);
    // The voice loaded: the first chunk's time is a sentence's, not the cold start's.
    await s.synthesizeToBuffer({ voice: 'en_US-fixture', input: 'Warm up.', format: 'mp3' });
    const { result, ratio } = await measureEventLoop(async () => {
      const stream = await s.synthesize({ voice: 'en_US-fixture', input: LONG, format: 'mp3' });
      const started = performance.now();
      let firstAt = 0;
      let sentencesAtFirst = -1;
      let bytes = 0;
      for await (const chunk of stream) {
        if (sentencesAtFirst < 0) {
          firstAt = performance.now() - started;
          sentencesAtFirst = stream.progress.sentences;
        }
        bytes += (chunk as Buffer).length;
      }
      return { firstAt, sentencesAtFirst, total: performance.now() - started, bytes, progress: stream.progress };
    });
    // The stream starts at once and buffers up to its high-water mark (64 KB) before the loop reads it: natively,
    // the first sentences are made in a few ms each, so a few are in by then (1 with the slower worker threads).
    expect(result.sentencesAtFirst).toBeLessThanOrEqual(5);
    expect(result.progress.sentences).toBeGreaterThan(60);
    expect(result.firstAt).toBeLessThan(result.total / 5);
    expect(result.bytes).toBeGreaterThan(10_000);
    // 0.89-0.91 alone, 0.65-0.81 under load (see measureEventLoop).
    expect(ratio).toBeGreaterThanOrEqual(0.5);
  });

  it('holds back a slow reader: no more than the lookahead is synthesized ahead of what was read', async () => {
    const s = engine({ tts: { lookahead: 1 } });
    const stream = await s.synthesize({ voice: 'en_US-fixture', input: LONG, format: 'pcm16' });
    await new Promise((resolve) => setTimeout(resolve, 500));
    // Nothing read yet: one sentence to fill the stream's buffer and at most a few more behind it.
    expect(stream.progress.sentences).toBeLessThan(10);
    stream.destroy();
  });

  it('a stream carries its facts before the first byte', async () => {
    const s = engine();
    const stream = await s.synthesize({ voice: 'en_US-fixture', input: 'Hello.', format: 'opus', sampleRate: 16000 });
    expect([stream.contentType, stream.sampleRate, stream.format]).toEqual(['audio/ogg; codecs=opus', 16000, 'opus']);
    const chunks: Buffer[] = [];
    for await (const chunk of stream) chunks.push(chunk as Buffer);
    expect(opusInputRate(Buffer.concat(chunks))).toBe(16000);
    const path = save('stream.opus', Buffer.concat(chunks));
    expect(Math.abs(ffprobeDecodedDuration(path) - expectedSeconds('Hello.', 22050, 1))).toBeLessThan(0.05);
  });

  it('abort stops between sentences, frees its place and rejects with the reason', async () => {
    const s = engine({ tts: { lookahead: 1 } });
    const controller = new AbortController();
    const stream = await s.synthesize({
      voice: 'en_US-fixture',
      input: LONG,
      format: 'wav',
      signal: controller.signal,
    });
    let received = 0;
    const reason = new Error('client went away');
    await expect(
      (async () => {
        for await (const _chunk of stream) {
          if (++received === 2) controller.abort(reason);
        }
      })(),
    ).rejects.toBe(reason);
    const sentences = stream.progress.sentences;
    await new Promise((resolve) => setTimeout(resolve, scaledMs(200)));
    expect(stream.progress.sentences).toBe(sentences);
    expect(s.ttsStatus().active).toBe(0);
    const after = await s.synthesizeToBuffer({ voice: 'en_US-fixture', input: 'Still working.', format: 'pcm16' });
    expect(after.audio.length).toBeGreaterThan(0);
  });

  it('destroying the stream cancels synthesis and frees its place', async () => {
    const s = engine({ tts: { lookahead: 1 } });
    const stream = await s.synthesize({ voice: 'en_US-fixture', input: LONG, format: 'mp3' });
    for await (const _chunk of stream) break;
    await new Promise((resolve) => setTimeout(resolve, scaledMs(100)));
    expect(s.ttsStatus().active).toBe(0);
  });
});

describe('native synthesis: close and stalls', () => {
  const heavyDir = fixture('bench-voices');
  const busyText = `${'A long sentence that keeps the heavy voice inside ONNX Runtime for a good while, '.repeat(4)}end.`;

  it('close() during inference fails the synthesis with ClosedError; the run in flight is stopped', async () => {
    const s = engine({ voiceDirs: [heavyDir] });
    const stream = await s.synthesize({ voice: 'en_US-fixture_heavy', input: busyText.repeat(3), format: 'pcm16' });
    const failed = new Promise((resolve) => stream.on('error', resolve));
    stream.resume();
    await new Promise((resolve) => setTimeout(resolve, 150));
    await s.close();
    expect(await failed).toMatchObject({ code: 'SPEECH_CLOSED' });
    expect(s.ttsStatus()).toMatchObject({ active: 0, voices: 0 });
  });

  it('a sentence whose ONNX run outlasts stallTimeoutMs is stopped and fails its synthesis; the next one works', async () => {
    const s = engine({ voiceDirs: [heavyDir], tts: { stallTimeoutMs: 100 } });
    await expect(
      s.synthesizeToBuffer({ voice: 'en_US-fixture_heavy', input: busyText, format: 'pcm16' }),
    ).rejects.toMatchObject({ code: 'TTS_WORKER_STALLED' });
    expect(s.ttsStatus().active).toBe(0);
    const ok = await s.synthesizeToBuffer({ voice: 'en_US-fixture_heavy', input: 'Hi.', format: 'pcm16' });
    expect(ok.audio.length).toBeGreaterThan(0);
  });

  it('starts no thread: synthesis runs on the addon (libuv pool), not on worker threads', async () => {
    const threads = () => readdirSync('/proc/self/task').length;
    // libuv's pool started by a decode first; ONNX Runtime with one intra-op thread starts none of its own.
    await decodeAudio(sharedAudio('jfk.wav'));
    const before = threads();
    const s = engine({ tts: { intraOpThreads: 1 } });
    for (const input of ['Count the threads.', 'Once more, with two sentences. Here is the second.']) {
      await s.synthesizeToBuffer({ voice: 'en_US-fixture', input, format: 'pcm16' });
    }
    expect(threads()).toBe(before);
  });
});

describe('readers and closing', () => {
  it('a stream nobody reads is destroyed after readerTimeoutMs and its place freed', async () => {
    const s = engine({ tts: { readerTimeoutMs: 300, lookahead: 1 } });
    const stream = await s.synthesize({
      voice: 'en_US-fixture',
      input: 'Sentence after sentence, never read. '.repeat(100),
      format: 'pcm16',
    });
    const error = await new Promise((resolve) => stream.once('error', resolve));
    expect(error).toMatchObject({ code: 'TTS_READER_TIMEOUT' });
    await vi.waitFor(() => expect(s.ttsStatus().active).toBe(0), { timeout: scaledMs(500), interval: 10 });
  });

  it('close() fails queued and running syntheses with ClosedError and takes no new ones', async () => {
    const s = engine({ tts: { workers: 1, lookahead: 1 } });
    const running = await s.synthesize({ voice: 'en_US-fixture', input: 'Keep busy. '.repeat(100), format: 'pcm16' });
    const runningOutcome = new Promise((resolve) => running.once('error', resolve));
    const queued = s.synthesizeToBuffer({ voice: 'en_US-fixture', input: 'Hi.', format: 'pcm16' }).catch((e) => e);
    await new Promise((resolve) => setTimeout(resolve, 50));
    await s.close();
    expect(await queued).toMatchObject({ code: 'SPEECH_CLOSED' });
    expect(await runningOutcome).toMatchObject({ code: 'SPEECH_CLOSED' });
    expect(s.ttsStatus().voices).toBe(0);
    await expect(s.synthesize({ voice: 'en_US-fixture', input: 'Hi.' })).rejects.toMatchObject({
      code: 'SPEECH_CLOSED',
    });
  });
});

describe('errors', () => {
  it('an unknown voice or speaker is a VoiceNotFoundError naming it', async () => {
    const s = engine();
    await expect(s.synthesize({ voice: 'xx_XX-nobody', input: 'Hi.' })).rejects.toBeInstanceOf(VoiceNotFoundError);
    await expect(s.synthesize({ voice: 'en_US-fixture_multi#zed', input: 'Hi.' })).rejects.toThrow(/speaker "zed"/);
  });

  it('a corrupt model or an unknown espeak voice fails the request with a SynthesisError; the next one works', async () => {
    const dir = mkdtempSync(join(temp, 'broken-'));
    const config = JSON.parse(readFileSync(join(voiceDir, 'en_US-fixture-medium.onnx.json'), 'utf8'));
    writeFileSync(join(dir, 'xx_XX-corrupt-medium.onnx'), 'this is not an ONNX model');
    writeFileSync(join(dir, 'xx_XX-corrupt-medium.onnx.json'), JSON.stringify(config));
    copyFileSync(join(voiceDir, 'en_US-fixture-medium.onnx'), join(dir, 'xx_XX-nospeak-medium.onnx'));
    writeFileSync(
      join(dir, 'xx_XX-nospeak-medium.onnx.json'),
      JSON.stringify({ ...config, espeak: { voice: 'zz-nothing' } }),
    );
    const s = engine({ voiceDirs: [dir, voiceDir] });
    await expect(s.synthesizeToBuffer({ voice: 'xx_XX-corrupt', input: 'Hi.' })).rejects.toMatchObject({
      name: 'SynthesisError',
      code: 'MODEL_LOAD_FAILED',
      message: expect.stringContaining('xx_XX-corrupt-medium.onnx'),
    });
    await expect(s.synthesizeToBuffer({ voice: 'xx_XX-nospeak', input: 'Hi.' })).rejects.toMatchObject({
      name: 'SynthesisError',
      message: expect.stringContaining('zz-nothing'),
    });
    const ok = await s.synthesizeToBuffer({ voice: 'en_US-fixture', input: 'Hi.', format: 'pcm16' });
    expect(ok.audio.length).toBeGreaterThan(0);
  });

  it('input with nothing to speak is a validation error naming input', async () => {
    const s = engine();
    await expect(s.synthesizeToBuffer({ voice: 'en_US-fixture', input: '😀 ... !!!' })).rejects.toMatchObject({
      param: 'input',
    });
  });

  it('a full queue fails at once with QueueFullError', async () => {
    const s = engine({ tts: { workers: 1, maxQueue: 1, lookahead: 1 } });
    const long = 'One more sentence to keep the pool busy. '.repeat(100);
    // Not read: it holds the only place once its buffer is full.
    const first = await s.synthesize({ voice: 'en_US-fixture', input: long, format: 'pcm16' });
    const second = s.synthesizeToBuffer({ voice: 'en_US-fixture', input: 'Hi.', format: 'pcm16' });
    await new Promise((resolve) => setTimeout(resolve, scaledMs(50)));
    expect(s.ttsStatus()).toMatchObject({ active: 1, pending: 1 });
    await expect(s.synthesize({ voice: 'en_US-fixture', input: 'Hi.' })).rejects.toBeInstanceOf(QueueFullError);
    first.destroy();
    expect((await second).audio.length).toBeGreaterThan(0);
  });
});

describe('listVoices', () => {
  it('lists installed voices (quality variants as one voice, every speaker of a multi-speaker voice)', async () => {
    const s = engine();
    const ids = (await s.listVoices()).map((v) => v.id).sort();
    expect(ids).toEqual([
      'de_DE-fixture',
      'en_US-fixture',
      'en_US-fixture_multi#alice',
      'en_US-fixture_multi#bob',
      'en_US-fixture_multi#carol',
      'en_US-fixture_multi#dave',
      'test_voice',
    ]);
  });

  it('lists the configs-only voices only on request, and reports their missing models', async () => {
    const s = createSpeech({ voiceDirs: [sharedModel('piper/configs-only')] });
    speech = s;
    expect(await s.listVoices()).toEqual([]);
    const all = await s.listVoices({ includeUninstalled: true });
    expect(all.length).toBe(904 + 109 + 4);
    expect(all.find((v) => v.id === 'en_US-lessac')).toMatchObject({ gender: 'female', languages: ['en-US'] });
    expect((await s.voiceProblems()).length).toBe(7);
  });
});
