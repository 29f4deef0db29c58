import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { afterAll, describe, expect, it } from 'vitest';
import { createEncoder, encodeAudio } from '../../src/audio/encode.js';
import { type SpeechFormat, sampleRatesOf } from '../../src/audio/formats.js';
import { AudioEncodeError, InvalidOptionValueError } from '../../src/errors.js';
import { type NativeAudioEncoder, type NativeEncoderOptions, native } from '../../src/native.js';
import { measureEventLoop } from '../helpers/event-loop.js';

const dir = mkdtempSync(join(tmpdir(), 'voxmill-encode-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const SECONDS = 2.3;
// Irregular sizes, so frame and block boundaries never line up with the calls.
const IRREGULAR = [1, 7, 1000, 333, 4097, 2, 16000, 511];
// lame's encoder delay (576) plus the decoder's (529): what a streamed mp3, which has no Xing/LAME frame
// to say so, decodes with in front of the signal.
const MP3_STREAM_DELAY = 1105;
const EXTENSIONS: Record<SpeechFormat, string> = {
  mp3: 'mp3',
  wav: 'wav',
  opus: 'ogg',
  pcm16: 'raw',
  aac: 'aac',
  flac: 'flac',
};
// AAC's encoder priming (1024 samples) and padding to a whole frame: an ADTS stream has nowhere to say so.
const AAC_FRAME = 1024;

function sine(rate: number, seconds: number, amplitude = 0.5, frequency = 440): Float32Array {
  const samples = new Float32Array(Math.round(rate * seconds));
  for (let i = 0; i < samples.length; i++) samples[i] = amplitude * Math.sin((2 * Math.PI * frequency * i) / rate);
  return samples;
}

interface Encoded {
  bytes: Buffer;
  /** What each encode() call returned, then what finish() returned. */
  chunks: Buffer[];
}

async function encodeInChunks(
  encoder: { encode(s: Float32Array): Promise<Buffer>; finish(): Promise<Buffer> },
  samples: Float32Array,
  sizes: number[],
): Promise<Encoded> {
  const chunks: Buffer[] = [];
  for (let at = 0, i = 0; at < samples.length; i++) {
    const size = sizes[i % sizes.length]!;
    chunks.push(await encoder.encode(samples.subarray(at, at + size)));
    at += size;
  }
  chunks.push(await encoder.finish());
  return { bytes: Buffer.concat(chunks), chunks };
}

function save(bytes: Uint8Array, format: SpeechFormat, name: string): string {
  const path = join(dir, `${name}.${EXTENSIONS[format]}`);
  writeFileSync(path, bytes);
  return path;
}

interface Probe {
  codec: string;
  sampleRate: number;
  channels: number;
  duration: number;
}

function ffprobe(path: string): Probe {
  const out = JSON.parse(
    execFileSync('ffprobe', [
      '-v',
      'error',
      '-show_entries',
      'stream=codec_name,sample_rate,channels,duration',
      '-of',
      'json',
      path,
    ]).toString(),
  ) as { streams: { codec_name: string; sample_rate: string; channels: number; duration: string }[] };
  const stream = out.streams[0]!;
  return {
    codec: stream.codec_name,
    sampleRate: Number(stream.sample_rate),
    channels: stream.channels,
    duration: Number(stream.duration),
  };
}

/** Every decoded sample, as FFmpeg's decoder gives them (Opus always decodes at 48 kHz). */
function ffmpegDecode(path: string, format: SpeechFormat, rate: number): Float32Array {
  const input = format === 'pcm16' ? ['-f', 's16le', '-ar', String(rate), '-ac', '1', '-i', path] : ['-i', path];
  const pcm = execFileSync('ffmpeg', ['-v', 'error', ...input, '-f', 'f32le', '-'], { maxBuffer: 256 * 1024 * 1024 });
  return new Float32Array(pcm.buffer, pcm.byteOffset, pcm.length / 4);
}

/** OpusHead: pre-skip (48 kHz samples) and the input rate it records. */
function opusHead(bytes: Buffer): { preSkip: number; inputRate: number } {
  const at = bytes.indexOf('OpusHead');
  expect(at).toBeGreaterThan(0);
  return { preSkip: bytes.readUInt16LE(at + 10), inputRate: bytes.readUInt32LE(at + 12) };
}

function rms(samples: Float32Array): number {
  let sum = 0;
  for (const s of samples) sum += s * s;
  return Math.sqrt(sum / samples.length);
}

function rejection(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => {
      throw new Error('resolved, expected a rejection');
    },
    (error: unknown) => error,
  );
}

const FORMATS: SpeechFormat[] = ['mp3', 'wav', 'opus', 'pcm16', 'aac', 'flac'];
const matrix = FORMATS.flatMap((format) =>
  sampleRatesOf(format).flatMap((outputRate) =>
    [16000, 22050].flatMap((inputRate) => [true, false].map((whole) => ({ format, outputRate, inputRate, whole }))),
  ),
);

describe('encoding: every format, rate and mode decodes to the right length', () => {
  it('covers 136 combinations', () => {
    expect(matrix.length).toBe(136);
  });

  it.each(matrix)('$format $inputRate -> $outputRate Hz, whole: $whole', async ({
    format,
    outputRate,
    inputRate,
    whole,
  }) => {
    const encoder = createEncoder({ format, inputSampleRate: inputRate, outputSampleRate: outputRate, whole });
    const { bytes, chunks } = await encodeInChunks(encoder, sine(inputRate, SECONDS), IRREGULAR);
    if (whole) expect(chunks.slice(0, -1).every((chunk) => chunk.length === 0)).toBe(true);
    const path = save(bytes, format, `${format}-${inputRate}-${outputRate}-${whole ? 'whole' : 'stream'}`);
    const expectedSamples = Math.round(SECONDS * outputRate);

    if (format === 'pcm16') {
      expect(Math.abs(bytes.length - 2 * expectedSamples)).toBeLessThanOrEqual(4);
    } else {
      const probe = ffprobe(path);
      expect(probe.channels).toBe(1);
      expect(probe.codec).toBe({ mp3: 'mp3', wav: 'pcm_s16le', opus: 'opus', aac: 'aac', flac: 'flac' }[format]);
      if (format === 'opus') {
        // Ogg Opus always plays at 48 kHz; the rate it was encoded at is recorded in OpusHead.
        const head = opusHead(bytes);
        expect(head.inputRate).toBe(outputRate);
        expect(probe.sampleRate).toBe(48000);
        // Exact granule positions: FFmpeg's duration is the last granule, which counts the pre-skip.
        expect(Math.abs(probe.duration - (head.preSkip + SECONDS * 48000) / 48000)).toBeLessThan(0.001);
      } else {
        expect(probe.sampleRate).toBe(outputRate);
      }
    }

    const decoded = ffmpegDecode(path, format, outputRate);
    const decodedRate = format === 'opus' ? 48000 : outputRate;
    const error = decoded.length / decodedRate - SECONDS;
    if (format === 'mp3' && !whole) {
      // No Xing/LAME frame in a stream: the encoder delay stays in front and at most a frame of padding
      // (plus lame's few extra samples) behind.
      const frame = outputRate >= 32000 ? 1152 : 576;
      const padding = error - MP3_STREAM_DELAY / outputRate;
      expect(padding).toBeGreaterThan(-0.001);
      expect(padding).toBeLessThan(frame / outputRate + 0.005);
    } else if (format === 'aac') {
      expect(error).toBeGreaterThan(-0.001);
      expect(error).toBeLessThan((2 * AAC_FRAME) / outputRate + 0.005);
    } else {
      expect(Math.abs(error)).toBeLessThan(whole ? 0.02 : 0.05);
    }
    // The sine itself came through (0.5 amplitude: RMS 0.354), not silence or noise.
    expect(rms(decoded)).toBeGreaterThan(0.3);
    expect(rms(decoded)).toBeLessThan(0.4);
  });
});

describe('encoding: headers', () => {
  it('a streamed wav starts with the 44-byte header, sizes 0xFFFFFFFF (unknown length)', async () => {
    const encoder = createEncoder({ format: 'wav', inputSampleRate: 22050 });
    const { bytes, chunks } = await encodeInChunks(encoder, sine(22050, SECONDS), IRREGULAR);
    const first = chunks.find((chunk) => chunk.length > 0)!;
    expect(first).toBe(chunks[0]);
    expect(first.subarray(0, 4).toString()).toBe('RIFF');
    expect(first.readUInt32LE(4)).toBe(0xffffffff);
    expect(first.subarray(8, 16).toString()).toBe('WAVEfmt ');
    expect(first.subarray(36, 40).toString()).toBe('data');
    expect(first.readUInt32LE(40)).toBe(0xffffffff);
    expect(bytes.length).toBe(44 + 2 * Math.round(SECONDS * 22050));
  });

  it('a whole wav has the canonical header with the exact sizes', async () => {
    const bytes = await encodeAudio(sine(22050, SECONDS), { format: 'wav', inputSampleRate: 22050 });
    const samples = Math.round(SECONDS * 22050);
    expect(bytes.length).toBe(44 + 2 * samples);
    expect(bytes.readUInt32LE(4)).toBe(bytes.length - 8);
    expect(bytes.subarray(36, 40).toString()).toBe('data');
    expect(bytes.readUInt32LE(40)).toBe(2 * samples);
    expect(bytes.readUInt16LE(22)).toBe(1); // channels
    expect(bytes.readUInt32LE(24)).toBe(22050);
    expect(bytes.readUInt16LE(34)).toBe(16); // bits per sample
    expect(ffprobe(save(bytes, 'wav', 'whole-header')).duration).toBe(SECONDS);
  });

  it('a whole mp3 carries a Xing/LAME frame, a streamed one starts with plain audio frames', async () => {
    const whole = await encodeAudio(sine(22050, SECONDS), { format: 'mp3', inputSampleRate: 22050 });
    expect(whole.subarray(0, 2).readUInt16BE(0) & 0xffe0).toBe(0xffe0);
    expect(whole.indexOf('Info') >= 0 || whole.indexOf('Xing') >= 0).toBe(true);
    expect(whole.indexOf('LAME')).toBeGreaterThan(0);
    const { bytes } = await encodeInChunks(
      createEncoder({ format: 'mp3', inputSampleRate: 22050 }),
      sine(22050, 1),
      [4410],
    );
    expect(bytes.readUInt16BE(0) & 0xffe0).toBe(0xffe0);
    expect(bytes.indexOf('Info')).toBe(-1);
    expect(bytes.indexOf('Xing')).toBe(-1);
  });
});

describe('encoding: streaming', () => {
  it.each([
    ['opus', 24000],
    ['mp3', 22050],
  ] as const)('%s returns playable bytes before finish()', async (format, outputRate) => {
    const encoder = createEncoder({ format, inputSampleRate: 22050, outputSampleRate: outputRate });
    const signal = sine(22050, SECONDS);
    const early: Buffer[] = [];
    for (let at = 0; at < 22050; at += 2205) early.push(await encoder.encode(signal.subarray(at, at + 2205)));
    const prefix = Buffer.concat(early);
    expect(prefix.length).toBeGreaterThan(0);
    // The bytes so far are a valid start of the stream: they decode to most of the second sent.
    const decoded = ffmpegDecode(save(prefix, format, `prefix-${format}`), format, outputRate);
    expect(decoded.length / (format === 'opus' ? 48000 : outputRate)).toBeGreaterThan(0.8);
    const rest = await encodeInChunks(encoder, signal.subarray(22050), [2205]);
    expect(prefix.length).toBeGreaterThan((prefix.length + rest.bytes.length) * 0.3);
  });

  it('calls made without awaiting run in order and give the same bytes as awaited calls', async () => {
    const signal = sine(22050, SECONDS);
    const awaited = await encodeInChunks(createEncoder({ format: 'opus', inputSampleRate: 22050 }), signal, IRREGULAR);
    const encoder = createEncoder({ format: 'opus', inputSampleRate: 22050 });
    const reused = new Float32Array(Math.max(...IRREGULAR));
    const calls: Promise<Buffer>[] = [];
    for (let at = 0, i = 0; at < signal.length; i++) {
      const size = IRREGULAR[i % IRREGULAR.length]!;
      const part = signal.subarray(at, at + size);
      // The caller reuses one buffer: each call must have taken its own copy.
      reused.set(part);
      calls.push(encoder.encode(reused.subarray(0, part.length)));
      reused.fill(0.9);
      at += size;
    }
    calls.push(encoder.finish());
    const bytes = Buffer.concat(await Promise.all(calls));
    expect(bytes.equals(awaited.bytes)).toBe(true);
  });
});

describe('encoding: resampling is continuous across calls', () => {
  // 22050 -> 48000 with chunks of 1 sample, 7, 1000 and odd sizes must equal one call: the resampler's
  // state carries over, so chunk joins cannot click.
  const signal = sine(22050, SECONDS);
  const pcm16 = (bytes: Buffer) => new Int16Array(bytes.buffer, bytes.byteOffset, bytes.length / 2);
  const encode = (sizes: number[]) =>
    encodeInChunks(
      createEncoder({ format: 'pcm16', inputSampleRate: 22050, outputSampleRate: 48000 }),
      signal,
      sizes,
    ).then((e) => pcm16(e.bytes));

  it('chunked output equals single-call output, and stays on the ideal sine', async () => {
    const single = await encode([signal.length]);
    const ones = await encode([...new Array<number>(3000).fill(1), 7, 1000, 1, 333, 4097, 7, 2]);
    const odd = await encode([7, 1000, 1, 333, 17, 4097]);
    expect(single.length).toBe(Math.round(SECONDS * 48000));
    for (const chunked of [ones, odd]) {
      expect(chunked.length).toBe(single.length);
      let maxDiff = 0;
      for (let i = 0; i < single.length; i++) maxDiff = Math.max(maxDiff, Math.abs(single[i]! - chunked[i]!));
      expect(maxDiff).toBeLessThanOrEqual(1);
    }
    // Away from the cut-off ends, the largest step between samples is the sine's own, and the
    // output follows the ideal 48 kHz sine (no delay, no ringing).
    const steepest = 0.5 * 32767 * ((2 * Math.PI * 440) / 48000);
    let maxStep = 0;
    let maxError = 0;
    for (let i = 100; i < odd.length - 100; i++) {
      maxStep = Math.max(maxStep, Math.abs(odd[i]! - odd[i - 1]!));
      maxError = Math.max(maxError, Math.abs(odd[i]! - 0.5 * 32767 * Math.sin((2 * Math.PI * 440 * i) / 48000)));
    }
    expect(maxStep).toBeLessThan(steepest * 1.02 + 2);
    expect(maxError).toBeLessThan(8);
  });
});

describe('encoding: bad input and misuse', () => {
  const NativeEncoder = () => native().AudioEncoder;
  const valid: NativeEncoderOptions = {
    format: 'mp3',
    inputSampleRate: 22050,
    outputSampleRate: 22050,
    whole: false,
    bitRate: 64000,
  };
  const thrown = (options: unknown): { code?: string; message: string } => {
    try {
      new (NativeEncoder())(options as NativeEncoderOptions);
    } catch (error) {
      return error as { code?: string; message: string };
    }
    throw new Error(`accepted ${JSON.stringify(options)}`);
  };

  it.each([
    ['no options', undefined],
    ['an unknown format', { ...valid, format: 'm4a' }],
    ['a format that is not a string', { ...valid, format: 3 }],
    ['an input rate below 8000', { ...valid, inputSampleRate: 7999 }],
    ['an input rate above 192000', { ...valid, inputSampleRate: 192001 }],
    ['a fractional input rate', { ...valid, inputSampleRate: 22050.5 }],
    ['an input rate as a string', { ...valid, inputSampleRate: '22050' }],
    ['an output rate not offered', { ...valid, outputSampleRate: 11025 }],
    ['NaN', { ...valid, outputSampleRate: Number.NaN }],
    ['a bit rate out of range', { ...valid, bitRate: 100 }],
    ['whole not a boolean', { ...valid, whole: 'yes' }],
  ])('the native constructor refuses %s with INVALID_ARGUMENT', (_name, options) => {
    expect(thrown(options).code).toBe('INVALID_ARGUMENT');
  });

  it.each([22050, 44100])('Opus at %s Hz is ENCODE_UNSUPPORTED_RATE, naming the allowed rates', (rate) => {
    const error = thrown({ ...valid, format: 'opus', outputSampleRate: rate });
    expect(error.code).toBe('ENCODE_UNSUPPORTED_RATE');
    expect(error.message).toContain(String(rate));
    expect(error.message).toContain('8000, 12000, 16000, 24000, 48000');
  });

  it('the TypeScript factory refuses the same with typed option errors', () => {
    expect(() => createEncoder({ format: 'm4a' as SpeechFormat, inputSampleRate: 22050 })).toThrow(
      InvalidOptionValueError,
    );
    expect(() => createEncoder({ format: 'opus', inputSampleRate: 22050, outputSampleRate: 22050 })).toThrow(
      /Opus has no 22050/,
    );
    expect(() => createEncoder({ format: 'mp3', inputSampleRate: 4000 })).toThrow(InvalidOptionValueError);
    // Opus picks 24000 by itself for a 22050 Hz voice.
    expect(createEncoder({ format: 'opus', inputSampleRate: 22050 }).sampleRate).toBe(24000);
  });

  it('an FFmpeg refusal rejects with AUDIO_ENCODE_FAILED naming the step, and closes the encoder', async () => {
    // 512 kb/s passes the native plausibility check, but libopus takes at most 256 kb/s for mono.
    const encoder = new (NativeEncoder())({ ...valid, format: 'opus', outputSampleRate: 48000, bitRate: 512000 });
    const error = (await rejection(encoder.encode(sine(22050, 0.1)).promise)) as Error & { code: string };
    expect(error.code).toBe('AUDIO_ENCODE_FAILED');
    expect(error.message).toMatch(/opening the libopus encoder failed: \S/);
    await expect(encoder.encode(sine(22050, 0.1)).promise).rejects.toMatchObject({ code: 'ENCODER_CLOSED' });
    expect(() => createEncoder({ format: 'opus', inputSampleRate: 22050, bitRate: 512000 })).toThrow(
      InvalidOptionValueError,
    );
  });

  it('rejects calls after finish() with ENCODER_CLOSED', async () => {
    const encoder = createEncoder({ format: 'opus', inputSampleRate: 16000 });
    await encoder.encode(sine(16000, 0.5));
    await encoder.finish();
    const error = await rejection(encoder.encode(sine(16000, 0.1)));
    expect(error).toBeInstanceOf(AudioEncodeError);
    expect(error).toMatchObject({ code: 'ENCODER_CLOSED' });
    expect((error as Error).stack).toContain('encode.test.ts');
    await expect(encoder.finish()).rejects.toMatchObject({ code: 'ENCODER_CLOSED' });
  });

  it('the native object rejects overlapping calls with ENCODER_BUSY', async () => {
    const encoder: NativeAudioEncoder = new (NativeEncoder())(valid);
    const first = encoder.encode(sine(22050, 5));
    const second = encoder.encode(sine(22050, 0.1));
    const third = encoder.finish();
    await expect(second.promise).rejects.toMatchObject({ code: 'ENCODER_BUSY' });
    await expect(third.promise).rejects.toMatchObject({ code: 'ENCODER_BUSY' });
    expect((await first.promise).length).toBeGreaterThan(0);
    // Once the first call is done the encoder takes calls again; after finish() it is closed.
    await encoder.encode(sine(22050, 0.1)).promise;
    const finishing = encoder.finish();
    await expect(encoder.encode(sine(22050, 0.1)).promise).rejects.toMatchObject({ code: 'ENCODER_CLOSED' });
    expect((await finishing.promise).length).toBeGreaterThan(0);
    await expect(encoder.finish().promise).rejects.toMatchObject({ code: 'ENCODER_CLOSED' });
  });

  it('the native object rejects samples that are not a Float32Array', async () => {
    const encoder = new (NativeEncoder())(valid);
    const wrong = new Float64Array(100) as unknown as Float32Array;
    await expect(encoder.encode(wrong).promise).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    encoder.dispose();
  });

  it('dispose() during a running call lets it finish and closes the encoder', async () => {
    for (const format of FORMATS) {
      const encoder = new (NativeEncoder())({ ...valid, format, outputSampleRate: 48000 });
      const running = encoder.encode(sine(22050, 10));
      encoder.dispose();
      encoder.dispose();
      expect(Buffer.isBuffer(await running.promise)).toBe(true);
      await expect(encoder.encode(sine(22050, 0.1)).promise).rejects.toMatchObject({ code: 'ENCODER_CLOSED' });
      const finishing = new (NativeEncoder())({ ...valid, format, outputSampleRate: 48000, whole: true });
      await finishing.encode(sine(22050, 3)).promise;
      const file = finishing.finish();
      finishing.dispose();
      expect((await file.promise).length).toBeGreaterThan(1000);
    }
  });

  it('NaN, infinities and out-of-range samples encode without harm', async () => {
    const hostile = sine(22050, 1, 3);
    hostile.fill(Number.NaN, 100, 2000);
    hostile.fill(Number.POSITIVE_INFINITY, 3000, 3100);
    hostile.fill(Number.NEGATIVE_INFINITY, 4000, 4100);
    hostile.fill(1e30, 5000, 5100);
    for (const format of FORMATS) {
      const bytes = await encodeAudio(hostile, { format, inputSampleRate: 22050 });
      const decoded = ffmpegDecode(save(bytes, format, `hostile-${format}`), format, format === 'opus' ? 24000 : 22050);
      expect(decoded.length).toBeGreaterThan(format === 'opus' ? 47000 : 21000);
      expect(decoded.every(Number.isFinite)).toBe(true);
    }
  });

  it('an encoder finished without audio gives a valid empty file', async () => {
    const wav = await encodeAudio(new Float32Array(0), { format: 'wav', inputSampleRate: 16000 });
    expect(wav.length).toBe(44);
    expect(wav.readUInt32LE(40)).toBe(0);
    const opus = await createEncoder({ format: 'opus', inputSampleRate: 16000 }).finish();
    expect(opus.indexOf('OpusHead')).toBeGreaterThan(0);
  });

  it('encoders dropped without finish(), even mid-call, are collected without harm', async () => {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as (() => void) | undefined;
    expect(typeof gc).toBe('function');
    const running: Promise<Buffer>[] = [];
    for (let i = 0; i < 50; i++) {
      const encoder = new (NativeEncoder())({ ...valid, format: FORMATS[i % 4]!, outputSampleRate: 16000 });
      if (i % 2 === 0) await encoder.encode(sine(22050, 0.2)).promise;
      // The only reference left is the job's: the encoder must survive until it ends.
      else running.push(encoder.encode(sine(22050, 2)).promise);
    }
    gc?.();
    const results = await Promise.all(running);
    expect(results.every((bytes) => Buffer.isBuffer(bytes))).toBe(true);
    for (let i = 0; i < 3; i++) {
      gc?.();
      await new Promise((resolve) => setImmediate(resolve));
    }
  });
});

describe('encoding: the event loop stays free', () => {
  it('a 10 ms timer keeps ticking while 60 s of audio is encoded to mp3 in 1 s chunks, three times', async () => {
    const second = sine(22050, 1);
    // 22050 -> 48000 Hz is the costliest mp3 path; three streams make the window long enough (about a
    // second here) for the tick ratio to mean something.
    const { result, ratio } = await measureEventLoop(async () => {
      const sizes: number[] = [];
      for (let stream = 0; stream < 3; stream++) {
        const encoder = createEncoder({ format: 'mp3', inputSampleRate: 22050, outputSampleRate: 48000 });
        let total = 0;
        for (let i = 0; i < 60; i++) total += (await encoder.encode(second)).length;
        sizes.push(total + (await encoder.finish()).length);
      }
      return sizes;
    });
    // 64 kb/s for 60 s is 480 kB.
    for (const size of result) expect(Math.abs(size - 480_000)).toBeLessThan(10_000);
    // 0.85-0.87 alone, 0.54-0.69 under load (see measureEventLoop).
    expect(ratio).toBeGreaterThanOrEqual(0.4);
  });
});
