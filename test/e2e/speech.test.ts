import { readFileSync } from 'node:fs';
import { Readable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
// Bounds on how long work takes grow with this machine's slowdown; idleUnloadMs, the library's timer, does not.
import { scaledMs } from '../../scripts/lib/machine-speed.mjs';
import {
  AudioDecodeError,
  ClosedError,
  createSpeech,
  decodeAudio,
  InvalidOptionValueError,
  ModelNotFoundError,
  QueueFullError,
  type Speech,
} from '../../src/index.js';
import { fixture, sharedAudio, sharedModel } from '../helpers/paths.js';

const tinyEn = fixture('models/ggml-tiny.en-random.bin');
const vadModel = sharedModel('whisper/ggml-silero-v6.2.0.bin');
const fast = { temperatureIncrement: 0, threads: 1 } as const;
let speech: Speech | undefined;

function engine(options: Parameters<typeof createSpeech>[0] = {}): Speech {
  speech = createSpeech({ models: { 'svc-stt-1': tinyEn, 'svc-stt-1-flash': tinyEn }, vadModel, ...options });
  return speech;
}

afterEach(async () => {
  await speech?.close();
  speech = undefined;
});

describe('createSpeech', () => {
  it('transcribes every input kind through the configured model ids', async () => {
    const s = engine();
    const bytes = readFileSync(sharedAudio('jfk.mp3'));
    const pcm = (await import('../../src/index.js')).decodeAudio(sharedAudio('jfk.wav'));
    const results = await Promise.all([
      s.transcribe(sharedAudio('jfk.wav'), { ...fast, model: 'svc-stt-1' }),
      s.transcribe(bytes, { ...fast, model: 'svc-stt-1-flash' }),
      s.transcribe(Readable.from([bytes]), fast),
      s.transcribe((await pcm).samples, { ...fast, timestamps: 'none' }),
    ]);
    for (const r of results) {
      expect(r.language).toBe('en');
      expect(r.duration).toBeCloseTo(11, 1);
      expect(typeof r.text).toBe('string');
    }
    expect(results[3]).not.toHaveProperty('segments');
    const status = s.status();
    expect(status.map((m) => [m.id, m.loaded, m.installed])).toEqual([
      ['svc-stt-1', true, true],
      ['svc-stt-1-flash', true, true],
    ]);
    // The accurate tier has DTW word timing for calls with word times (without flash attention); its other calls,
    // and the fast tier's, run flash attention.
    expect(status[0]!.info).toMatchObject({ dtwPreset: 'tiny.en', flashAttention: true });
    expect(status[1]!.info).toMatchObject({ dtwPreset: null, flashAttention: true });
  });

  it('names an unknown model id, and says how to install a missing catalog model before decoding', async () => {
    const s = engine({ models: { 'svc-stt-1': 'small.en' }, modelsDir: '/nonexistent/voxmill-models' });
    await expect(s.transcribe(sharedAudio('jfk.wav'), { model: 'svc-stt-9' })).rejects.toBeInstanceOf(
      ModelNotFoundError,
    );
    const error = await s.transcribe(Buffer.from('not audio')).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ModelNotFoundError);
    expect((error as Error).message).toContain('npx voxmill models pull small.en');
  });

  it('validates options before doing any work', async () => {
    const s = engine();
    await expect(s.transcribe(sharedAudio('jfk.wav'), { timestamps: 'words' as never })).rejects.toBeInstanceOf(
      InvalidOptionValueError,
    );
    expect(() => createSpeech({ concurrency: 0 })).toThrow(/concurrency/);
    expect(() => createSpeech({ models: { x: { model: 'a', beamSize: 99 } } })).toThrow(/models\.x\.beamSize/);
    expect(() => createSpeech({ model: 'x' } as never)).toThrow(/options\.model/);
  });

  it('sheds load with QueueFullError when the queue is full, and lets waiters abort', async () => {
    const s = engine({ concurrency: 1, maxQueue: 1 });
    const first = s.transcribe(sharedAudio('jfk.wav'), fast);
    const controller = new AbortController();
    const second = s.transcribe(sharedAudio('jfk.wav'), { ...fast, signal: controller.signal });
    await expect(s.transcribe(sharedAudio('jfk.wav'), fast)).rejects.toBeInstanceOf(QueueFullError);
    controller.abort(new Error('not needed any more'));
    await expect(second).rejects.toThrow('not needed any more');
    await expect(first).resolves.toMatchObject({ duration: 11 });
    await expect(s.transcribe(sharedAudio('2830-3980-0043.wav'), fast)).resolves.toMatchObject({ language: 'en' });
  });

  it('applies the engine VAD default: silence is not decoded', async () => {
    const s = engine({ vad: true });
    const started = performance.now();
    const result = await s.transcribe(fixture('audio/silence-60s.wav'), fast);
    expect(result).toEqual({ text: '', language: 'en', duration: 60, segments: [] });
    expect(performance.now() - started).toBeLessThan(scaledMs(5000));
  });

  it('transcribes audio with no samples to empty text without running whisper; empty bytes are AUDIO_EMPTY', async () => {
    const s = engine();
    const wav = readFileSync(sharedAudio('jfk.wav'));
    const header = Buffer.from(wav.subarray(0, wav.indexOf('data') + 8));
    header.writeUInt32LE(header.length - 8, 4);
    header.writeUInt32LE(0, header.length - 4);
    for (const input of [header, new Float32Array(0)]) {
      const result = await s.transcribe(input, { ...fast, timestamps: 'word' });
      expect(result).toEqual({ text: '', language: 'en', duration: 0, words: [] });
    }
    expect(await s.transcribe(header, { ...fast, timestamps: 'segment' })).toMatchObject({ segments: [] });
    await expect(s.transcribe(Buffer.alloc(0), fast)).rejects.toMatchObject({ code: 'AUDIO_EMPTY' });
  });

  it('with the VAD, decodes long audio in passes: progress never goes back, segments in order inside the audio', async () => {
    const s = engine();
    const clip = (await decodeAudio(sharedAudio('jfk.wav'))).samples;
    // Six copies of jfk (11 s) with 3 s of silence between: over two 30 s windows of speech.
    const gap = 3 * 16000;
    const samples = new Float32Array(6 * (clip.length + gap));
    for (let i = 0; i < 6; i++) samples.set(clip, i * (clip.length + gap));
    const progress: number[] = [];
    const reported: number[] = [];
    const result = await s.transcribe(samples, {
      ...fast,
      vad: true,
      onProgress: (p) => progress.push(p),
      onSegment: (segment) => reported.push(segment.id),
      repetitionGuard: false,
      skipGuard: false,
      annotations: 'keep',
    });
    expect(progress.length).toBeGreaterThan(1);
    for (let i = 1; i < progress.length; i++) expect(progress[i]!).toBeGreaterThanOrEqual(progress[i - 1]!);
    expect(progress.at(-1)!).toBeLessThanOrEqual(1);
    expect(reported).toEqual(reported.map((_, i) => i));
    const segments = result.segments ?? [];
    for (const [i, segment] of segments.entries()) {
      expect(segment.start).toBeGreaterThanOrEqual(i === 0 ? 0 : segments[i - 1]!.start);
      expect(segment.end).toBeLessThanOrEqual(result.duration);
    }
  });

  it('rejects bad audio with AudioDecodeError and stays usable', async () => {
    const s = engine();
    await expect(s.transcribe(Buffer.from('garbage garbage garbage'))).rejects.toBeInstanceOf(AudioDecodeError);
    await expect(s.transcribe(sharedAudio('jfk.wav'), { ...fast, maxDurationSeconds: 5 })).rejects.toMatchObject({
      code: 'AUDIO_TOO_LONG',
    });
    await expect(s.transcribe(sharedAudio('jfk.wav'), fast)).resolves.toMatchObject({ duration: 11 });
  });

  it('unloads an idle model and loads it again on demand', async () => {
    const s = engine({ idleUnloadMs: 150 });
    await s.loadModel('svc-stt-1');
    expect(s.status()[0]!.loaded).toBe(true);
    await new Promise((r) => setTimeout(r, 400));
    expect(s.status()[0]!.loaded).toBe(false);
    await expect(s.transcribe(sharedAudio('jfk.wav'), fast)).resolves.toMatchObject({ duration: 11 });
    expect(s.status()[0]!.loaded).toBe(true);
  });

  it('refuses work once closed', async () => {
    const s = engine();
    await s.close();
    await expect(s.transcribe(sharedAudio('jfk.wav'))).rejects.toBeInstanceOf(ClosedError);
  });
});
