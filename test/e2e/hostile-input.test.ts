// Hostile input through the library: non-finite float WAVs, lying WAV headers, and truncated and corrupted copies of
// every shared clip. Every input ends in a result or a typed error, in bounded time; none may crash the process (a
// crash kills this forked test process and fails the file). The model is the random-weight tiny.en fixture with DTW
// on, which is where NaN samples used to crash whisper.cpp.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
// Bounds on how long work takes grow with this machine's slowdown.
import { scaledMs } from '../../scripts/lib/machine-speed.mjs';
import { AudioDecodeError, createSpeech, decodeAudio, type Speech, type Transcription } from '../../src/index.js';
import { damagedCopies, lyingWavs, nonFiniteWavs, sharedClips } from '../helpers/hostile-audio.js';
import { fixture } from '../helpers/paths.js';

const fast = { temperatureIncrement: 0, threads: 1 } as const;
let speech: Speech;

beforeAll(() => {
  speech = createSpeech({ models: { 'svc-stt-1': fixture('models/ggml-tiny.en-random.bin') }, vadModel: null });
});
afterAll(async () => {
  await speech.close();
});

function expectSound(result: Transcription): void {
  expect(Number.isFinite(result.duration)).toBe(true);
  for (const word of result.words ?? []) {
    expect(Number.isFinite(word.start) && Number.isFinite(word.end)).toBe(true);
    expect(word.start).toBeLessThanOrEqual(word.end);
    expect(word.end).toBeLessThanOrEqual(result.duration + 0.01);
  }
}

/** Resolves to 'ok' or the typed error's code; anything else (an untyped error) fails the test. */
async function outcome(work: Promise<unknown>): Promise<string> {
  try {
    await work;
    return 'ok';
  } catch (error) {
    expect(error).toBeInstanceOf(AudioDecodeError);
    return (error as AudioDecodeError).code;
  }
}

describe('non-finite float WAVs with a DTW model', () => {
  it.each(
    nonFiniteWavs().map((f) => [f.name, f.bytes] as const),
  )('%s: a clean transcript with finite word times, never a crash', async (_name, bytes) => {
    const result = await speech.transcribe(bytes, { ...fast, timestamps: 'word' });
    expectSound(result);
    expect(result.duration).toBe(2);
  });

  it('the decoded samples are finite and within [-1, 1]', async () => {
    for (const { bytes } of nonFiniteWavs()) {
      const { samples } = await decodeAudio(bytes);
      let worst = 0;
      for (const v of samples) worst = Math.max(worst, Number.isFinite(v) ? Math.abs(v) : Number.POSITIVE_INFINITY);
      expect(worst).toBeLessThanOrEqual(1);
    }
  });
});

describe('WAV headers that lie', () => {
  it.each(lyingWavs().map((f) => [f.name, f.bytes] as const))('%s: decoded or a typed error', async (_name, bytes) => {
    const started = performance.now();
    const result = await outcome(decodeAudio(bytes));
    expect(['ok', 'AUDIO_DECODE_FAILED', 'AUDIO_UNSUPPORTED', 'AUDIO_EMPTY', 'AUDIO_TOO_LONG']).toContain(result);
    expect(performance.now() - started).toBeLessThan(scaledMs(5000));
  });

  it('rates below the minimum are refused before decoding, whatever the header says', async () => {
    for (const { name, bytes } of lyingWavs().filter((f) => /^rate (1|7|100|3999) Hz/.test(f.name))) {
      expect(await outcome(decodeAudio(bytes)), name).toBe('AUDIO_DECODE_FAILED');
    }
  });
});

describe('every shared clip, truncated and corrupted', () => {
  const clips = sharedClips();

  it('decodeAudio: 8 cuts and 8 corrupted copies of each clip end in audio or a typed error', async () => {
    const counts = new Map<string, number>();
    for (const [index, clip] of clips.entries()) {
      for (const damaged of damagedCopies(clip, 8, 8, 1000 + index)) {
        const result = await outcome(decodeAudio(damaged.bytes, { maxDurationSeconds: 600 }));
        counts.set(result, (counts.get(result) ?? 0) + 1);
      }
    }
    expect([...counts.values()].reduce((a, b) => a + b, 0)).toBe(clips.length * 16);
    expect(counts.get('ok')).toBeGreaterThan(0);
    for (const code of counts.keys()) {
      expect(['ok', 'AUDIO_DECODE_FAILED', 'AUDIO_UNSUPPORTED', 'AUDIO_EMPTY']).toContain(code);
    }
  });

  it('transcribe with word times: a damaged copy of each container kind, never a crash', async () => {
    const kinds = new Map<string, { name: string; bytes: Buffer }>();
    for (const clip of clips) {
      const ext = clip.name.split('.').pop()!;
      if (!kinds.has(ext) && clip.bytes.length < 1_000_000) kinds.set(ext, clip);
    }
    expect([...kinds.keys()].sort()).toEqual(['flac', 'mp3', 'ogg', 'opus', 'wav']);
    for (const [index, clip] of [...kinds.values()].entries()) {
      const [cut, corrupted] = [...damagedCopies(clip, 2, 0, 7 + index).slice(1), ...damagedCopies(clip, 0, 1, 7)];
      for (const damaged of [cut!, corrupted!]) {
        const result = await speech
          .transcribe(damaged.bytes, { ...fast, timestamps: 'word', maxDurationSeconds: 60 })
          .then(expectSound, (error: unknown) => expect(error).toBeInstanceOf(AudioDecodeError));
        expect(result).toBeUndefined();
      }
    }
  });
});
