// The addon runs inside other people's servers: a caller's odd input must end in a typed error, never a
// crash, a hang or a leak. Each test here reproduces one way that used to go wrong.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
// Bounds on how long a refusal takes grow with this machine's slowdown.
import { scaledMs } from '../../scripts/lib/machine-speed.mjs';
import { DEFAULT_MAX_SAMPLE_RATE, DEFAULT_MIN_SAMPLE_RATE } from '../../src/audio/decode.js';
import { VAD_DEFAULTS } from '../../src/audio/vad-settings.js';
import {
  type NativeDecodeOptions,
  type NativeLoadOptions,
  type NativeSpeechRegion,
  type NativeTranscribeParams,
  native,
} from '../../src/native.js';
import { fittedContext } from '../../src/stt/fitted-context.js';
import { fixture, repoRoot, sharedAudio, sharedModel } from '../helpers/paths.js';
import { terminateEncodingWorker } from '../helpers/terminated-encoder.js';
import { parseVadModel, type TensorRecord, writeVadModel } from '../helpers/vad-model.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

const vadModel = sharedModel('whisper/ggml-silero-v6.2.0.bin');
const addonPath = process.env.VOXMILL_ADDON_PATH ?? join(repoRoot, 'build', 'Release', 'voxmill.node');

/** The native decoder's options with the library's default sample-rate range. */
function decodeOptions(maxDurationSeconds: number, stereo = false): NativeDecodeOptions {
  return { maxDurationSeconds, stereo, minSampleRate: DEFAULT_MIN_SAMPLE_RATE, maxSampleRate: DEFAULT_MAX_SAMPLE_RATE };
}

/** WhisperModel.load's options as TypeScript sends them (all required by the addon). */
const loadOptions: NativeLoadOptions = {
  gpu: false,
  flashAttention: true,
  dtw: true,
  decoderInt8: true,
  greedyInt8Vocabulary: true,
  gpuDevice: 0,
};

/** transcribe() parameters as normalizeTranscribeOptions sends them by default (the required ones). */
const transcribeParams: NativeTranscribeParams = {
  translate: false,
  threads: 1,
  beamSize: 0,
  bestOf: 5,
  temperature: 0,
  temperatureIncrement: 0.2,
  entropyThreshold: 2.4,
  logprobThreshold: -1,
  noSpeechThreshold: 0.6,
  initialPrompt: '',
  tokenTimestamps: false,
  tinydiarize: false,
  suppressNonSpeech: false,
  conditionOnPreviousText: true,
};

async function failure(promise: Promise<unknown>): Promise<{ code: string; message: string }> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(Error);
  return error as { code: string; message: string };
}

/** A 16-bit PCM WAV of `seconds` of a tone, built in memory. */
function wav(seconds: number, rate = 48000, channels = 2): Uint8Array {
  const frames = rate * seconds;
  const data = frames * channels * 2;
  const bytes = new Uint8Array(44 + data);
  const view = new DataView(bytes.buffer);
  const tag = (at: number, text: string) => {
    for (let i = 0; i < 4; i++) bytes[at + i] = text.charCodeAt(i);
  };
  tag(0, 'RIFF');
  view.setUint32(4, 36 + data, true);
  tag(8, 'WAVE');
  tag(12, 'fmt ');
  view.setUint32(16, 16, true);
  view.setUint16(20, 1, true);
  view.setUint16(22, channels, true);
  view.setUint32(24, rate, true);
  view.setUint32(28, rate * channels * 2, true);
  view.setUint16(32, channels * 2, true);
  view.setUint16(34, 16, true);
  tag(36, 'data');
  view.setUint32(40, data, true);
  for (let i = 0; i < frames; i++) {
    const v = Math.round(Math.sin(i * 0.05) * 8000);
    for (let c = 0; c < channels; c++) view.setInt16(44 + (i * channels + c) * 2, v, true);
  }
  return bytes;
}

describe('decodeAudio owns a copy of its input', () => {
  it('a buffer overwritten while the job runs does not change the result', async () => {
    const bytes = wav(20);
    const reference = await native().decodeAudio(bytes, decodeOptions(3600)).promise;
    const job = native().decodeAudio(bytes, decodeOptions(3600));
    bytes.fill(0);
    const decoded = await job.promise;
    expect(decoded.samples.length).toBe(reference.samples.length);
    expect(Buffer.from(decoded.samples.buffer).equals(Buffer.from(reference.samples.buffer))).toBe(true);
  });

  it('a buffer transferred away and collected while the job runs does not crash the process', async () => {
    for (const stereo of [false, true]) {
      let bytes: Uint8Array | undefined = wav(600);
      const job = native().decodeAudio(bytes, decodeOptions(3600, stereo));
      structuredClone(bytes.buffer, { transfer: [bytes.buffer as ArrayBuffer] });
      expect(bytes.byteLength).toBe(0);
      bytes = undefined;
      gc();
      gc();
      const decoded = await job.promise;
      expect(decoded.samples.length).toBe(600 * 16000);
      if (stereo) expect(decoded.stereo?.left.length).toBe(600 * 16000);
    }
  });

  it('a resizable buffer shrunk to nothing while the job runs does not crash the process', async () => {
    const source = wav(300);
    // ES2024 (resizable buffers) is newer than the project's lib setting.
    const Resizable = ArrayBuffer as unknown as new (
      length: number,
      options: { maxByteLength: number },
    ) => ArrayBuffer & { resize(length: number): void };
    const buffer = new Resizable(source.length, { maxByteLength: source.length });
    const bytes = new Uint8Array(buffer);
    bytes.set(source);
    const job = native().decodeAudio(bytes, decodeOptions(3600));
    buffer.resize(0);
    gc();
    await expect(job.promise).resolves.toMatchObject({ sampleRate: 48000, channels: 2 });
  });
});

describe('a path that is not a regular file fails at once, never blocks', () => {
  let dir: string;
  let fifo: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'voxmill-hardening-'));
    fifo = join(dir, 'fifo');
    execFileSync('mkfifo', [fifo]);
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('decodeAudio: a FIFO with no writer', async () => {
    const started = Date.now();
    const error = await failure(native().decodeAudio(fifo, decodeOptions(10)).promise);
    expect(error.code).toBe('AUDIO_DECODE_FAILED');
    expect(error.message).toMatch(/not a regular file/);
    expect(error.message).toContain(fifo);
    expect(Date.now() - started).toBeLessThan(scaledMs(2000));
  });

  it('decodeAudio: a character device', async () => {
    const error = await failure(native().decodeAudio('/dev/zero', decodeOptions(10)).promise);
    expect(error.code).toBe('AUDIO_DECODE_FAILED');
    expect(error.message).toMatch(/not a regular file/);
  });

  it.each([
    ['a FIFO with no writer', () => fifo],
    ['a character device', () => '/dev/zero'],
    ['a directory', () => dir],
  ])('detectSpeech: the VAD model is %s', async (_name, path) => {
    const started = Date.now();
    const error = await failure(
      native().detectSpeech(new Float32Array(16000), { ...VAD_DEFAULTS, modelPath: path() }).promise,
    );
    expect(error.code).toBe('MODEL_LOAD_FAILED');
    expect(error.message).toMatch(/not a regular file/);
    expect(Date.now() - started).toBeLessThan(scaledMs(2000));
  });

  it('detectSpeech: a missing VAD model names the path and the reason', async () => {
    const path = join(dir, 'missing.bin');
    const error = await failure(
      native().detectSpeech(new Float32Array(16000), { ...VAD_DEFAULTS, modelPath: path }).promise,
    );
    expect(error.code).toBe('MODEL_LOAD_FAILED');
    expect(error.message).toContain(path);
    expect(error.message).toMatch(/No such file/);
  });
});

// --- Silero model files, taken apart and put together again (test/helpers/vad-model.ts) -------------------

describe('the VAD model is checked completely before whisper.cpp loads it', () => {
  let dir: string;
  let jfk: Float32Array;
  let reference: NativeSpeechRegion[];
  let header: Buffer;
  let records: TensorRecord[];
  const detect = (modelPath: string, samples = jfk) =>
    native().detectSpeech(samples, { ...VAD_DEFAULTS, modelPath }).promise;
  const named = (part: string) => records.find((r) => r.name.includes(part))!;
  const replaced = (target: TensorRecord, by: TensorRecord) => records.map((r) => (r === target ? by : r));

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'voxmill-vad-layout-'));
    jfk = (await native().decodeAudio(sharedAudio('jfk.wav'), decodeOptions(3600)).promise).samples;
    reference = await detect(vadModel);
    ({ header, records } = parseVadModel(readFileSync(vadModel)));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('reads the real model as whisper.cpp 1.9.1 expects it (15 tensors)', () => {
    expect(records).toHaveLength(15);
    expect(reference).toHaveLength(4);
    expect(writeVadModel(header, records).equals(readFileSync(vadModel))).toBe(true);
  });

  it.each([
    ['tensors in another order', () => [...records].reverse()],
    [
      'shapes written with extra dimensions of 1',
      () => records.map((r) => (r.ne.length < 3 ? { ...r, ne: [...(r.ne.length === 0 ? [1] : r.ne), 1] } : r)),
    ],
  ])('accepts %s, with the same result', async (_name, make) => {
    const path = join(dir, 'variant.bin');
    await writeFile(path, writeVadModel(header, make()));
    expect(await detect(path)).toEqual(reference);
  });

  const hostile: [string, () => Buffer, RegExp][] = [
    [
      'a renamed tensor',
      () => writeVadModel(header, replaced(records[0]!, { ...records[0]!, name: `${records[0]!.name.slice(0, -1)}T` })),
      /unknown tensor/,
    ],
    ['a missing tensor', () => writeVadModel(header, records.slice(0, -1)), /missing tensors/],
    [
      'a tensor repeated in place of another of the same shape',
      () => writeVadModel(header, replaced(named('weight_hh'), named('weight_ih'))),
      /appears twice/,
    ],
    ['a tensor repeated at the end', () => writeVadModel(header, [...records, records[0]!]), /appears twice/],
    [
      'an f16 tensor stored as f32',
      () => {
        const f16 = records.find((r) => r.type === 1)!;
        return writeVadModel(header, replaced(f16, { ...f16, type: 0, data: Buffer.alloc(f16.data.length * 2) }));
      },
      /wrong type/,
    ],
    [
      'a transposed tensor (same size, other shape)',
      () => {
        const ih = named('weight_ih');
        return writeVadModel(header, replaced(ih, { ...ih, ne: [...ih.ne].reverse() }));
      },
      /wrong shape/,
    ],
    [
      'a tensor of another size',
      () => {
        const bias = named('bias_ih');
        return writeVadModel(header, replaced(bias, { ...bias, ne: [256], data: bias.data.subarray(0, 1024) }));
      },
      /wrong shape/,
    ],
    ['no tensors at all', () => Buffer.from(header), /no weights/],
    ['a truncated last tensor', () => writeVadModel(header, records).subarray(0, -1), /truncated/],
    [
      'a stray byte after the last tensor',
      () => Buffer.concat([writeVadModel(header, records), Buffer.alloc(1)]),
      /truncated/,
    ],
    ['a file of 5 MB', () => Buffer.concat([writeVadModel(header, records), Buffer.alloc(5 << 20)]), /too large/],
  ];

  it.each(hostile)('rejects %s with MODEL_LOAD_FAILED', async (_name, make, why) => {
    const path = join(dir, 'hostile.bin');
    await writeFile(path, make());
    const error = await failure(detect(path));
    expect(error.code).toBe('MODEL_LOAD_FAILED');
    expect(error.message).toContain(path);
    expect(error.message).toMatch(why);
  });
});

describe('a worker thread terminated mid-job', () => {
  it('a streaming encode whose result cannot be delivered ends with the worker, the process unharmed', async () => {
    // That its output is freed (RSS over repeated terminations) is the soak tier's (test/soak/native-memory.test.ts).
    await terminateEncodingWorker(addonPath);
    // The process is healthy afterwards.
    const encoder = new (native().AudioEncoder)({
      format: 'wav',
      inputSampleRate: 16000,
      outputSampleRate: 16000,
      whole: true,
      bitRate: 0,
    });
    await encoder.encode(new Float32Array(1600)).promise;
    expect((await encoder.finish().promise).length).toBe(44 + 3200);
  });
});

/** A copy of a ggml whisper model with every value of one f32/f16 tensor set to NaN. */
function withNanTensor(model: Buffer, tensor: string): Buffer {
  const bytes = Buffer.from(model);
  let at = 4 + 11 * 4;
  const nMel = bytes.readInt32LE(at);
  const nFft = bytes.readInt32LE(at + 4);
  at += 8 + 4 * nMel * nFft;
  const nVocab = bytes.readInt32LE(at);
  at += 4;
  for (let i = 0; i < nVocab; i++) at += 4 + bytes.readInt32LE(at);
  while (at < bytes.length) {
    const dims = bytes.readInt32LE(at);
    const nameLength = bytes.readInt32LE(at + 4);
    const type = bytes.readInt32LE(at + 8);
    at += 12;
    let count = 1;
    for (let d = 0; d < dims; d++) count *= bytes.readInt32LE(at + 4 * d);
    at += 4 * dims;
    const name = bytes.toString('latin1', at, at + nameLength);
    at += nameLength;
    const size = count * (type === 0 ? 4 : 2);
    if (name === tensor) {
      for (let i = 0; i < count; i++) {
        if (type === 0) bytes.writeFloatLE(Number.NaN, at + 4 * i);
        else bytes.writeUInt16LE(0x7e00, at + 2 * i); // f16 NaN
      }
      return bytes;
    }
    at += size;
  }
  throw new Error(`no tensor ${tensor}`);
}

describe('whisper.cpp never sees, or never acts on, non-finite values', () => {
  const dtwModel = fixture('models/ggml-tiny.en-random.bin');
  let dir: string;
  let model: Awaited<ReturnType<typeof loadNative>>;
  const loadNative = (path: string) => native().WhisperModel.load(path, loadOptions).promise;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'voxmill-nonfinite-'));
    model = await loadNative(dtwModel);
  });
  afterAll(async () => {
    model.dispose();
    await rm(dir, { recursive: true, force: true });
  });

  it('a model whose encoder outputs NaN fails with TRANSCRIPTION_FAILED before DTW (it used to SIGSEGV there)', async () => {
    const path = join(dir, 'nan-encoder.bin');
    await writeFile(path, withNanTensor(readFileSync(dtwModel), 'encoder.ln_post.bias'));
    const broken = await loadNative(path);
    expect(broken.info().dtwPreset).toBe('tiny.en');
    try {
      const samples = (await native().decodeAudio(sharedAudio('jfk.wav'), decodeOptions(60)).promise).samples;
      const error = await failure(broken.transcribe(samples, { ...transcribeParams, tokenTimestamps: true }).promise);
      expect(error.code).toBe('TRANSCRIPTION_FAILED');
      expect(error.message).toMatch(/non-finite/);
    } finally {
      broken.dispose();
    }
  });

  it('non-finite samples handed to the addon directly are refused, naming the first one', async () => {
    const samples = new Float32Array(16000);
    samples[1234] = Number.POSITIVE_INFINITY;
    const error = await failure(model.transcribe(samples, transcribeParams).promise);
    expect(error.code).toBe('INVALID_ARGUMENT');
    expect(error.message).toContain('samples[1234]');
  });

  it.each([
    ['threads', 1e6],
    ['threads', 0],
    ['beamSize', 1000],
    ['bestOf', -1],
    ['temperature', Number.NaN],
    ['maxSegmentLength', 1.5],
    ['language', 42],
    ['audioContext', 1501],
    ['audioContext', -1],
    ['maxWindowTokens', 449],
  ])('params.%s = %s is refused by the addon itself (INVALID_ARGUMENT), not trusted', (key, value) => {
    expect(() => model.transcribe(new Float32Array(16000), { ...transcribeParams, [key]: value })).toThrow(
      expect.objectContaining({ code: 'INVALID_ARGUMENT', message: expect.stringContaining(`params.${key}`) }),
    );
  });

  it('setThreads refuses a count outside 1-64 (INVALID_ARGUMENT) and is harmless once the job ended', async () => {
    const job = model.transcribe(new Float32Array(16000), { ...transcribeParams, temperatureIncrement: 0 });
    for (const bad of [0, 65, 1.5, Number.NaN, '2']) {
      expect(() => job.setThreads(bad as number)).toThrow(
        expect.objectContaining({ code: 'INVALID_ARGUMENT', message: expect.stringContaining('threads') }),
      );
    }
    await job.promise;
    job.setThreads(2);
  });

  it('a call whose threads change between graph passes (patch 0003) returns what a fixed count does', async () => {
    // The f16 decoder (the default): its arithmetic does not depend on the thread count. The q8_0 decoder's does on a
    // CPU without AVX-512 (a Zen 3: with DTW on, 1 and 2 fixed threads gave different text from these random
    // weights), so with it this comparison would test the kernels, not the thread switch.
    const f16 = await native().WhisperModel.load(dtwModel, { ...loadOptions, decoderInt8: false }).promise;
    try {
      const jfk = (await native().decodeAudio(sharedAudio('jfk.wav'), decodeOptions(60)).promise).samples;
      const params = { ...transcribeParams, temperatureIncrement: 0, beamSize: 2, tokenTimestamps: true };
      const texts = (result: { segments: { text: string }[] }) => result.segments.map((segment) => segment.text);
      const fixed = texts(await f16.transcribe(jfk, { ...params, threads: 2 }).promise);
      // A fixed count of 1 and of 2 agree, or the comparison below could not tell a switch's harm from the kernels'.
      expect(texts(await f16.transcribe(jfk, params).promise)).toEqual(fixed);
      const job = f16.transcribe(jfk, params);
      let threads = 1;
      const flip = setInterval(() => {
        threads = 3 - threads;
        job.setThreads(threads);
      }, 2);
      try {
        const changing = await job.promise;
        expect(texts(changing)).toEqual(fixed);
      } finally {
        clearInterval(flip);
      }
    } finally {
      f16.dispose();
    }
  });

  it('a window past maxWindowTokens fails with TOKEN_LIMIT', async () => {
    const jfk = (await native().decodeAudio(sharedAudio('jfk.wav'), decodeOptions(60)).promise).samples;
    const capped = await failure(
      model.transcribe(jfk.subarray(0, 32_000), { ...transcribeParams, audioContext: 192, maxWindowTokens: 1 }).promise,
    );
    expect(capped).toMatchObject({ code: 'TOKEN_LIMIT', message: expect.stringContaining('1 tokens') });
  });

  it('every fitted context decodes to the end with DTW on (whisper.cpp asserts past twice the context)', async () => {
    const jfk = (await native().decodeAudio(sharedAudio('jfk.wav'), decodeOptions(60)).promise).samples;
    // No token cap and no fallback temperatures: random weights decode each window to whisper's 220 tokens, DTW
    // aligns them over the whole fitted window.
    const params = { ...transcribeParams, temperatureIncrement: 0, tokenTimestamps: true };
    for (let seconds = 1.05; seconds < 10; seconds += 1.1) {
      const fitted = fittedContext(seconds, 10)!;
      const samples = jfk.subarray(0, Math.round(seconds * 16_000));
      const result = await model.transcribe(samples, { ...params, audioContext: fitted.audioContext }).promise;
      const aligned = result.segments.flatMap((segment) => segment.tokens).filter((token) => token.dtw >= 0);
      expect(aligned.length, `${seconds} s: tokens DTW aligned`).toBeGreaterThan(0);
    }
  });

  it('a VAD pass longer than the context (its joins add audio) fails with CONTEXT_TOO_SHORT instead of aborting', async () => {
    const jfk = (await native().decodeAudio(sharedAudio('jfk.wav'), decodeOptions(60)).promise).samples;
    // A second of audio kept past every speech end: jfk's stretches joined are longer than jfk.
    const vad = { ...VAD_DEFAULTS, modelPath: vadModel, minSilenceMs: 0, overlapSeconds: 1 };
    const full = await model.transcribe(jfk, { ...transcribeParams, temperatureIncrement: 0, vad }).promise;
    const joined = full.speech.at(-1)?.procEnd ?? 0;
    expect(joined).toBeGreaterThan(jfk.length / 16_000 + 0.1);
    // Just enough context for jfk itself (its 10 ms frames, plus the two the check allows for), not for the joins.
    const audioContext = Math.ceil((jfk.length / 160 + 2) / 2);
    const error = await failure(
      model.transcribe(jfk, { ...transcribeParams, tokenTimestamps: true, vad, audioContext }).promise,
    );
    expect(error.code).toBe('CONTEXT_TOO_SHORT');
  });

  it('decodeAudio refuses a sample-rate range the native decoder cannot honour', () => {
    for (const options of [
      { ...decodeOptions(60), minSampleRate: 0 },
      { ...decodeOptions(60), maxSampleRate: 10_000_000 },
      { ...decodeOptions(60), minSampleRate: 48_000, maxSampleRate: 8000 },
      { ...decodeOptions(60), maxDurationSeconds: Number.NaN },
    ]) {
      expect(() => native().decodeAudio(sharedAudio('jfk.wav'), options)).toThrow(
        expect.objectContaining({ code: 'INVALID_ARGUMENT' }),
      );
    }
  });
});

describe('every native entry point refuses a wrong-typed argument with INVALID_ARGUMENT naming it', () => {
  const addon = () => native();
  let model: Awaited<ReturnType<ReturnType<typeof addon>['WhisperModel']['load']>['promise']>;
  const samples = new Float32Array(1600);
  const vad = { ...VAD_DEFAULTS, modelPath: vadModel };
  const transcribeVad = { ...vad, overlapSeconds: 0.1 };
  const decode = decodeOptions(60);
  const encoder = {
    format: 'pcm16',
    inputSampleRate: 16000,
    outputSampleRate: 16000,
    whole: false,
    bitRate: 0,
  } as const;
  beforeAll(async () => {
    model = await addon().WhisperModel.load(fixture('models/ggml-tiny.en-random.bin'), loadOptions).promise;
  });
  afterAll(() => model.dispose());

  // [the name the message must contain, a call with one argument wrong (or a required one left out)]
  const cases: [string, () => unknown][] = [
    ['path', () => addon().WhisperModel.load(42 as never, loadOptions)],
    ['path', () => addon().WhisperModel.load('', loadOptions)],
    ['options', () => addon().WhisperModel.load(fixture('models/ggml-tiny.en-random.bin'), undefined as never)],
    ...(['gpu', 'flashAttention', 'dtw', 'decoderInt8', 'greedyInt8Vocabulary', 'gpuDevice'] as const).map(
      (key): [string, () => unknown] => [
        `options.${key}`,
        () => addon().WhisperModel.load('model.bin', { ...loadOptions, [key]: 'yes' }),
      ],
    ),
    [
      'options.gpuDevice',
      () => addon().WhisperModel.load('model.bin', { ...loadOptions, gpuDevice: undefined as never }),
    ],
    ['samples', () => model.transcribe(new Float64Array(16) as never, transcribeParams)],
    ['params', () => model.transcribe(samples, null as never)],
    ['onEvent', () => model.transcribe(samples, transcribeParams, 'callback' as never)],
    ...Object.keys(transcribeParams).map((key): [string, () => unknown] => [
      `params.${key}`,
      () => model.transcribe(samples, { ...transcribeParams, [key]: undefined }),
    ]),
    ...Object.entries({
      translate: 1,
      threads: '4',
      beamSize: true,
      bestOf: 2.5,
      temperature: '0',
      initialPrompt: 7,
      language: 42,
      conditionOnPreviousText: 'no',
      maxSegmentLength: -1,
      splitOnWord: 0,
      progressEvents: 1,
      segmentEvents: null,
      vad: 'on',
    }).map(([key, value]): [string, () => unknown] => [
      `params.${key}`,
      () => model.transcribe(samples, { ...transcribeParams, [key]: value }),
    ]),
    [
      'params.vad.modelPath',
      () => model.transcribe(samples, { ...transcribeParams, vad: { ...transcribeVad, modelPath: '' } }),
    ],
    ...Object.entries({
      threshold: '0.5',
      minSpeechMs: 1.5,
      minSilenceMs: -1,
      speechPadMs: 1e9,
      overlapSeconds: 'x',
    }).map(([key, value]): [string, () => unknown] => [
      `params.vad.${key}`,
      () => model.transcribe(samples, { ...transcribeParams, vad: { ...transcribeVad, [key]: value } }),
    ]),
    ...Object.keys(transcribeVad).map((key): [string, () => unknown] => [
      `params.vad.${key}`,
      () => model.transcribe(samples, { ...transcribeParams, vad: { ...transcribeVad, [key]: undefined as never } }),
    ]),
    ...Object.keys(vad).map((key): [string, () => unknown] => [
      `params.${key}`,
      () => addon().detectSpeech(samples, { ...vad, [key]: undefined as never }),
    ]),
    ['input', () => addon().decodeAudio(42 as never, decode)],
    ['input', () => addon().decodeAudio('', decode)],
    ['input', () => addon().decodeAudio(new Int16Array(4) as never, decode)],
    ['options', () => addon().decodeAudio(sharedAudio('jfk.wav'), 'fast' as never)],
    ...Object.entries({ maxDurationSeconds: '60', minSampleRate: undefined, maxSampleRate: 8000.5, stereo: 'yes' }).map(
      ([key, value]): [string, () => unknown] => [
        `options.${key}`,
        () => addon().decodeAudio(sharedAudio('jfk.wav'), { ...decode, [key]: value }),
      ],
    ),
    ['samples', () => addon().detectSpeech([0, 0] as never, vad)],
    ['params', () => addon().detectSpeech(samples, undefined as never)],
    ['params.modelPath', () => addon().detectSpeech(samples, { ...vad, modelPath: 42 as never })],
    ...Object.entries({
      threshold: 2,
      minSpeechMs: '250',
      minSilenceMs: 0.5,
      maxSpeechSeconds: Number.NaN,
      speechPadMs: true,
      threads: 0,
      whisperSegmentation: 'yes',
    }).map(([key, value]): [string, () => unknown] => [
      `params.${key}`,
      () => addon().detectSpeech(samples, { ...vad, [key]: value }),
    ]),
    ['options', () => new (addon().AudioEncoder)(undefined as never)],
    ...Object.entries({ format: 3, inputSampleRate: '16000', outputSampleRate: null, whole: 'yes', bitRate: 1.5 }).map(
      ([key, value]): [string, () => unknown] => [
        `options.${key}`,
        () => new (addon().AudioEncoder)({ ...encoder, [key]: value }),
      ],
    ),
  ];

  it.each(cases)('%s', (name, call) => {
    let thrown: unknown;
    try {
      call();
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toMatchObject({ code: 'INVALID_ARGUMENT', message: expect.stringContaining(`${name} must be`) });
    expect((thrown as Error).message).toContain('; received ');
  });

  it('AudioEncoder.encode rejects (as every refusal of encode() does) naming samples', async () => {
    const instance = new (addon().AudioEncoder)(encoder);
    try {
      const error = await failure(instance.encode([1, 2] as never).promise);
      expect(error).toMatchObject({
        code: 'INVALID_ARGUMENT',
        message: 'samples must be a Float32Array; received an array',
      });
    } finally {
      instance.dispose();
    }
  });
});
