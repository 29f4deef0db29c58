// Limits on what one call may make the engine decode and hold: source sample rates, the decoded-audio budget
// shared by all admitted work, and caller PCM that the caller takes back while a worker still runs.
import { readFileSync } from 'node:fs';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { afterEach, describe, expect, it } from 'vitest';
// Bounds on how long work takes grow with this machine's slowdown.
import { scaledMs } from '../../scripts/lib/machine-speed.mjs';
import {
  AudioDecodeError,
  AudioTooLongError,
  createSpeech,
  decodeAudio,
  InvalidOptionValueError,
  QueueFullError,
  type Speech,
  WhisperModel,
} from '../../src/index.js';
import { toneWav } from '../helpers/hostile-audio.js';
import { fixture, sharedAudio } from '../helpers/paths.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

const tinyEn = fixture('models/ggml-tiny.en-random.bin');
const fast = { temperatureIncrement: 0, threads: 1 } as const;
let speech: Speech | undefined;

function engine(options: Parameters<typeof createSpeech>[0] = {}): Speech {
  speech = createSpeech({ models: { 'svc-stt-1': tinyEn }, vadModel: null, ...options });
  return speech;
}

afterEach(async () => {
  await speech?.close();
  speech = undefined;
});

describe('source sample rates', () => {
  it('a WAV claiming 7 Hz (a 128 KB file that would decode to 9,143 s) is refused at once', async () => {
    const started = performance.now();
    const error = await decodeAudio(toneWav(7, 64_000)).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AudioDecodeError);
    expect(error).toMatchObject({
      code: 'AUDIO_DECODE_FAILED',
      message: expect.stringMatching(/7 Hz; accepted: 4000/),
    });
    expect(performance.now() - started).toBeLessThan(scaledMs(1000));
  });

  it("the range is the caller's to set, per call and per engine, and checked", async () => {
    await expect(decodeAudio(toneWav(8000, 8000), { minSampleRate: 16_000 })).rejects.toMatchObject({
      code: 'AUDIO_DECODE_FAILED',
    });
    expect((await decodeAudio(toneWav(2000, 2000), { minSampleRate: 1000 })).duration).toBeCloseTo(1, 2);
    await expect(decodeAudio(toneWav(8000, 8000), { minSampleRate: 9000, maxSampleRate: 8000 })).rejects.toThrow(
      InvalidOptionValueError,
    );
    expect(() => createSpeech({ maxSampleRate: 10_000_000 })).toThrow(/maxSampleRate/);
    const s = engine({ minSampleRate: 22_050 });
    await expect(s.transcribe(sharedAudio('jfk.wav'), fast)).rejects.toMatchObject({ code: 'AUDIO_DECODE_FAILED' });
  });
});

describe('the decoded-audio budget (maxDecodedBytes)', () => {
  it('audio that alone exceeds it fails with AudioTooLongError, decoding stopped at the budget', async () => {
    // 11 s of jfk.wav is 704 KB of 16 kHz float32; the budget holds 1 MiB = 16.4 s, so it passes ...
    const s = engine({ maxDecodedBytes: 1024 * 1024 });
    await expect(s.transcribe(sharedAudio('jfk.wav'), { ...fast, timestamps: 'none' })).resolves.toHaveProperty('text');
    // ... while 127 s of gb0.wav stops decoding at 16.4 s.
    const error = await s.transcribe(sharedAudio('gb0.wav'), fast).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AudioTooLongError);
    expect((error as AudioTooLongError).maxDurationSeconds).toBeCloseTo(16.384, 3);
  });

  it('work that does not fit beside admitted work gets QueueFullError; the bytes come back when it ends', async () => {
    const s = engine({ maxDecodedBytes: 1024 * 1024 });
    const jfk = readFileSync(sharedAudio('jfk.wav'));
    // Both decode at once; whichever finishes decoding first takes the budget, so either may be the one refused.
    const [a, b] = await Promise.allSettled([s.transcribe(jfk, fast), s.transcribe(jfk, fast)]);
    const refused = [a, b].filter((r) => r.status === 'rejected');
    expect(refused).toHaveLength(1);
    expect([a, b].filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    const { reason } = refused[0] as PromiseRejectedResult;
    expect(reason).toBeInstanceOf(QueueFullError);
    expect(reason).toMatchObject({ message: expect.stringMatching(/maxDecodedBytes/) });
    await expect(s.transcribe(jfk, { ...fast, timestamps: 'none' })).resolves.toHaveProperty('text');
  });
});

describe('caller PCM is never read by a worker thread', () => {
  it("aborting, then transferring and collecting the caller's array while whisper runs does not crash", async () => {
    const model = await WhisperModel.load(tinyEn);
    try {
      const decoded = await decodeAudio(sharedAudio('jfk.wav'));
      for (let round = 0; round < 3; round++) {
        let samples: Float32Array | undefined = decoded.samples.slice();
        const controller = new AbortController();
        const pending = model.transcribe(samples, { ...fast, signal: controller.signal });
        setTimeout(() => controller.abort(), 50 + round * 100);
        await expect(pending).rejects.toMatchObject({ name: 'AbortError' });
        structuredClone(samples.buffer, { transfer: [samples.buffer as ArrayBuffer] });
        samples = undefined;
        gc();
      }
      // The model is still sound afterwards.
      const result = await model.transcribe(decoded.samples, { ...fast, timestamps: 'none' });
      expect(result.duration).toBeCloseTo(11, 0);
    } finally {
      model.dispose();
    }
  });

  it('an array detached while it is being copied fails with InvalidOptionValueError naming input', async () => {
    const samples = new Float32Array(3 * 1024 * 1024);
    const pending = decodeAudio(samples);
    setImmediate(() => structuredClone(samples.buffer, { transfer: [samples.buffer as ArrayBuffer] }));
    await expect(pending).rejects.toMatchObject({ code: 'INVALID_OPTION_VALUE', param: 'input' });
  });
});
