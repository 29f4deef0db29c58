import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
// Bounds on how long work takes, and on how soon it stops, grow with this machine's slowdown.
import { scaledMs } from '../../scripts/lib/machine-speed.mjs';
import {
  ClosedError,
  InvalidOptionValueError,
  ModelLoadError,
  type Transcription,
  WhisperModel,
} from '../../src/index.js';
import { quantizationOf } from '../../src/stt/whisper-model.js';
import { measureEventLoop } from '../helpers/event-loop.js';
import { fixture, repoRoot, sharedAudio, sharedModel } from '../helpers/paths.js';

const tinyEn = fixture('models/ggml-tiny.en-random.bin');
const vadModel = sharedModel('whisper/ggml-silero-v6.2.0.bin');
// Random weights can decode until the token limit; one greedy pass without temperature fallback keeps tests bounded
// (the default, beam 5, is checked in test/unit/speech.test.ts).
const fast = { temperatureIncrement: 0, beamSize: 1 } as const;

function expectWellFormedWords(result: Transcription): void {
  let last = { start: 0, end: 0 };
  for (const word of result.words ?? []) {
    expect(word.word.trim()).toBe(word.word);
    expect(word.word.length).toBeGreaterThan(0);
    expect(word.start).toBeLessThanOrEqual(word.end);
    expect(word.start).toBeGreaterThanOrEqual(last.start);
    expect(word.end).toBeGreaterThanOrEqual(last.end);
    expect(word.start).toBeGreaterThanOrEqual(0);
    expect(word.end).toBeLessThanOrEqual(result.duration);
    last = word;
  }
}

describe('WhisperModel.load', () => {
  it('reports the facts of a tiny.en-shaped model and picks its DTW preset', async () => {
    const model = await WhisperModel.load(tinyEn);
    expect(model.info).toMatchObject({
      type: 'tiny',
      multilingual: false,
      vocabSize: 51864,
      audioLayers: 4,
      textLayers: 4,
      audioState: 384,
      mels: 80,
      quantization: 'f16',
      ftype: 1,
      dtwPreset: 'tiny.en',
      // Both: calls that ask for token times run DTW without flash attention, the others flash attention (patch 0002).
      flashAttention: true,
      // The CPU build runs every model on the CPU, and says so.
      gpu: false,
      device: 'CPU',
    });
    model.dispose();
  });

  it('names every ggml file type of the whisper.cpp it was built with, and unknown numbers as unknown', () => {
    const tree =
      process.env.VOXMILL_WHISPER_CPP_DIR ??
      join(
        dirname(createRequire(join(repoRoot, 'package.json')).resolve('whisper-cpp-src/package.json')),
        'cpp',
        'whisper.cpp',
      );
    const header = readFileSync(join(tree, 'ggml', 'include', 'ggml.h'), 'utf8');
    const ftypes = [...header.matchAll(/GGML_FTYPE_(?:ALL|MOSTLY)_(\w+)\s*=\s*(\d+)/g)];
    expect(ftypes.length).toBeGreaterThan(20);
    for (const [, name, value] of ftypes) expect(quantizationOf(Number(value)), name).toBe(name!.toLowerCase());
    for (const ftype of [-1, 5, 6, 1000]) expect(quantizationOf(ftype)).toBe('unknown');
  });

  it('tells multilingual from English-only by the vocabulary, and leaves flash attention on without DTW', async () => {
    const model = await WhisperModel.load(sharedModel('whisper/for-tests-ggml-tiny.bin'), { dtw: false });
    expect(model.info).toMatchObject({ multilingual: true, vocabSize: 51865, dtwPreset: null, flashAttention: true });
    model.dispose();
  });

  it("keeps the file's decoder type by default, q8_0 with decoderPrecision int8 (whisper.cpp patch 0013)", async () => {
    const int8 = await WhisperModel.load(tinyEn, { dtw: false, decoderPrecision: 'int8' });
    const full = await WhisperModel.load(tinyEn, { dtw: false });
    try {
      // info.decoderInt8 reads the loaded decoder's tensor type (patch 0013's accessor), not the option.
      expect(int8.info).toMatchObject({ quantization: 'f16', decoderInt8: true });
      expect(full.info).toMatchObject({ quantization: 'f16', decoderInt8: false });
      const options = { language: 'en', temperatureIncrement: 0 } as const;
      const [a, b] = await Promise.all([
        int8.transcribe(sharedAudio('jfk.wav'), options),
        full.transcribe(sharedAudio('jfk.wav'), options),
      ]);
      expect(a.duration).toBeCloseTo(11, 1);
      expect(b.duration).toBeCloseTo(11, 1);
    } finally {
      int8.dispose();
      full.dispose();
    }
    const rejected = WhisperModel.load(tinyEn, { decoderPrecision: 'q8' as never });
    await expect(rejected).rejects.toThrow(InvalidOptionValueError);
    await expect(rejected).rejects.toThrow(/options\.decoderPrecision|decoderPrecision.*q8/);
  });

  it('makes the int8 copy of an f16 vocabulary projection for greedy steps unless told not to (patch 0019)', async () => {
    const [byDefault, without, int8Decoder] = await Promise.all([
      WhisperModel.load(tinyEn, { dtw: false }),
      WhisperModel.load(tinyEn, { dtw: false, greedyInt8Vocabulary: false }),
      WhisperModel.load(tinyEn, { dtw: false, decoderPrecision: 'int8' }),
    ]);
    try {
      expect(byDefault.info.greedyInt8Vocabulary).toBe(true);
      expect(without.info.greedyInt8Vocabulary).toBe(false);
      // A projection already in q8_0 has no f16 rows to recompute from: no copy.
      expect(int8Decoder.info.greedyInt8Vocabulary).toBe(false);
      // Greedy at temperature 0 runs through the copy; the random weights' text need only match the f16 one's.
      const options = { language: 'en', beamSize: 1, temperatureIncrement: 0 } as const;
      const [a, b] = await Promise.all([
        byDefault.transcribe(sharedAudio('jfk.wav'), options),
        without.transcribe(sharedAudio('jfk.wav'), options),
      ]);
      expect(a.text).toBe(b.text);
      expect(a.segments?.map((s) => [s.start, s.end])).toEqual(b.segments?.map((s) => [s.start, s.end]));
    } finally {
      byDefault.dispose();
      without.dispose();
      int8Decoder.dispose();
    }
    const rejected = WhisperModel.load(tinyEn, { greedyInt8Vocabulary: 'yes' as never });
    await expect(rejected).rejects.toThrow(/greedyInt8Vocabulary must be a boolean/);
  });

  describe('bad model files give ModelLoadError', () => {
    let dir: string;
    beforeAll(async () => {
      dir = await mkdtemp(join(tmpdir(), 'voxmill-model-'));
    });
    afterAll(async () => {
      await rm(dir, { recursive: true, force: true });
    });

    it.each([
      ['a missing file', async () => join(dir, 'missing.bin'), /cannot open/],
      ['an audio file', async () => sharedAudio('jfk.wav'), /not a whisper.cpp ggml model/],
      [
        'an empty file',
        async () => {
          const path = join(dir, 'empty.bin');
          await writeFile(path, '');
          return path;
        },
        /not a whisper.cpp ggml model/,
      ],
      [
        'a truncated model',
        async () => {
          const path = join(dir, 'truncated.bin');
          await writeFile(path, readFileSync(tinyEn).subarray(0, 3_000_000));
          return path;
        },
        /could not load/,
      ],
    ])('%s', async (_name, make, message) => {
      const error = await WhisperModel.load(await make()).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ModelLoadError);
      expect(error).toMatchObject({ code: 'MODEL_LOAD_FAILED' });
      expect((error as Error).message).toMatch(message);
    });
  });
});

describe('WhisperModel.transcribe', () => {
  let model: WhisperModel;
  beforeAll(async () => {
    model = await WhisperModel.load(tinyEn);
  });
  afterAll(() => model.dispose());

  it('keeps the event loop ticking during jfk.wav and returns well-formed words', async () => {
    const { result, ratio } = await measureEventLoop(() =>
      model.transcribe(sharedAudio('jfk.wav'), { ...fast, timestamps: 'word' }),
    );
    // Here and on gb0.wav: 0.96-0.97 alone, 0.80-0.87 under load (see measureEventLoop).
    expect(ratio).toBeGreaterThanOrEqual(0.6);
    expect(result).toMatchObject({ language: 'en', duration: 11 });
    expect(result.segments).toBeUndefined();
    expect(result.words!.length).toBeGreaterThan(0);
    expectWellFormedWords(result);
  });

  it('keeps the event loop ticking during gb0.wav (127 s)', async () => {
    const progress: number[] = [];
    const { result, ratio } = await measureEventLoop(() =>
      model.transcribe(sharedAudio('gb0.wav'), { ...fast, timestamps: 'word', onProgress: (p) => progress.push(p) }),
    );
    expect(ratio).toBeGreaterThanOrEqual(0.6);
    expect(result.duration).toBeCloseTo(127.355, 2);
    expectWellFormedWords(result);
    expect(progress.length).toBeGreaterThan(2);
    expect(progress.every((p, i) => p >= 0 && p <= 1 && (i === 0 || p >= progress[i - 1]!))).toBe(true);
  });

  it('runs four transcriptions at once on one loaded model, each with the result of one alone', async () => {
    // Their memory (per-call state only, nothing accumulating) is the soak tier's (test/soak/native-memory.test.ts).
    const audio = readFileSync(sharedAudio('jfk.wav'));
    const one = await model.transcribe(audio, fast);
    const four = await Promise.all([1, 2, 3, 4].map(() => model.transcribe(audio, fast)));
    expect(four).toHaveLength(4);
    for (const result of four) expect(result).toEqual(one);
  });

  it('with VAD, a minute of silence returns nothing quickly and never runs the decoder', async () => {
    let progressEvents = 0;
    const started = performance.now();
    const result = await model.transcribe(fixture('audio/silence-60s.wav'), {
      ...fast,
      vad: { model: vadModel },
      onProgress: () => progressEvents++,
    });
    const ms = performance.now() - started;
    expect(result).toEqual({ text: '', language: 'en', duration: 60, segments: [] });
    expect(progressEvents).toBe(0);
    expect(ms).toBeLessThan(scaledMs(5000));
  });

  it('with VAD on speech, segment times stay inside the original audio', async () => {
    const result = await model.transcribe(sharedAudio('jfk.wav'), { ...fast, vad: { model: vadModel } });
    for (const s of result.segments ?? []) {
      expect(s.start).toBeGreaterThanOrEqual(0);
      expect(s.end).toBeLessThanOrEqual(11);
    }
  });

  it('aborting gb0.wav rejects with the abort reason within 500 ms', async () => {
    const controller = new AbortController();
    let segments = 0;
    const pending = model.transcribe(sharedAudio('gb0.wav'), {
      ...fast,
      signal: controller.signal,
      onSegment: () => segments++,
    });
    await new Promise((r) => setTimeout(r, 1500));
    const reason = new Error('caller gave up');
    const abortedAt = performance.now();
    controller.abort(reason);
    await expect(pending).rejects.toBe(reason);
    const latency = performance.now() - abortedAt;
    expect(latency).toBeLessThan(scaledMs(500));
  });

  it('streams segments through onSegment that match the result', async () => {
    const seen: unknown[] = [];
    const result = await model.transcribe(sharedAudio('jfk.wav'), {
      ...fast,
      onSegment: (s) => {
        seen.push(s);
        throw new Error('a throwing callback must not break the transcription');
      },
    });
    expect(seen).toEqual(result.segments);
  });

  it('refuses a non-English hint on an English-only model', async () => {
    await expect(model.transcribe(sharedAudio('jfk.wav'), { language: 'de' })).rejects.toMatchObject({
      param: 'language',
    });
  });
});

describe('lifetime', () => {
  it('a model disposed mid-transcription lets the running call finish, then refuses new ones', async () => {
    const model = await WhisperModel.load(tinyEn, { dtw: false });
    const running = model.transcribe(sharedAudio('jfk.wav'), fast);
    await new Promise((r) => setTimeout(r, 100));
    model.dispose();
    expect(model.loaded).toBe(false);
    await expect(running).resolves.toMatchObject({ duration: 11 });
    await expect(model.transcribe(sharedAudio('jfk.wav'))).rejects.toBeInstanceOf(ClosedError);
  });

  it('the addon loads and decodes inside a worker thread', async () => {
    const script = `
      const { parentPort } = require('node:worker_threads');
      import(${JSON.stringify(pathToFileURL(join(repoRoot, 'dist', 'index.js')).href)})
        .then(({ decodeAudio }) => decodeAudio(${JSON.stringify(sharedAudio('jfk.flac'))}))
        .then((audio) => parentPort.postMessage(audio.duration));
    `;
    const worker = new Worker(script, { eval: true });
    const duration = await new Promise((resolve, reject) => {
      worker.once('message', resolve);
      worker.once('error', reject);
    });
    await worker.terminate();
    expect(duration).toBe(11);
  });

  it('terminating a worker thread mid-transcription leaves the process healthy', async () => {
    const script = `
      const { parentPort } = require('node:worker_threads');
      import(${JSON.stringify(pathToFileURL(join(repoRoot, 'dist', 'index.js')).href)}).then(async ({ WhisperModel }) => {
        const model = await WhisperModel.load(${JSON.stringify(tinyEn)});
        parentPort.postMessage('started');
        await model.transcribe(${JSON.stringify(sharedAudio('gb0.wav'))}, {
          temperatureIncrement: 0,
          onSegment: () => {},
          onProgress: () => {},
        });
      });
    `;
    const worker = new Worker(script, { eval: true });
    await new Promise((resolve, reject) => {
      worker.once('message', resolve);
      worker.once('error', reject);
    });
    await new Promise((r) => setTimeout(r, 700));
    await worker.terminate();
    // The orphaned native job runs to its next checkpoint on a pool thread; the process must survive it.
    await new Promise((r) => setTimeout(r, 3000));
    const model = await WhisperModel.load(tinyEn, { dtw: false });
    await expect(model.transcribe(sharedAudio('2830-3980-0043.wav'), fast)).resolves.toMatchObject({ language: 'en' });
    model.dispose();
  });
});
