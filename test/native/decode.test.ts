import { readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
// A bound on how long work takes grows with this machine's slowdown.
import { scaledMs } from '../../scripts/lib/machine-speed.mjs';
import { AudioDecodeError, AudioTooLongError, decodeAudio } from '../../src/index.js';
import { ffprobeDecodedDuration } from '../helpers/ffprobe.js';
import { fixture, sharedAudio, sharedDir } from '../helpers/paths.js';

const sharedFiles = readdirSync(join(sharedDir, 'audio')).filter((f) => !/\.(tsv|rttm)$/.test(f));

describe('decodeAudio: every shared file', () => {
  it('finds the shared audio', () => {
    expect(sharedFiles.length).toBeGreaterThanOrEqual(20);
  });

  it.each(sharedFiles)('%s decodes to 16 kHz mono within 20 ms of ffprobe', async (name) => {
    const path = sharedAudio(name);
    const decoded = await decodeAudio(path);
    expect(decoded.sampleRate).toBe(16000);
    expect(decoded.samples.length).toBeGreaterThan(0);
    expect(Math.abs(decoded.duration - ffprobeDecodedDuration(path))).toBeLessThan(0.02);
    // Real speech, not silence or garbage: some energy, every sample finite and in range.
    let energy = 0;
    let notFinite = 0;
    for (const s of decoded.samples) {
      if (!Number.isFinite(s)) notFinite++;
      energy += s * s;
    }
    expect(notFinite).toBe(0);
    expect(Math.sqrt(energy / decoded.samples.length)).toBeGreaterThan(0.001);
  });

  it('reports source facts', async () => {
    const flac = await decodeAudio(sharedAudio('jfk.flac'));
    expect(flac.source).toMatchObject({ container: 'flac', codec: 'flac', sampleRate: 44100, channels: 2 });
    const opus = await decodeAudio(sharedAudio('jfk.opus'));
    expect(opus.source).toMatchObject({ container: 'ogg', codec: 'opus', sampleRate: 48000, channels: 1 });
  });
});

describe('decodeAudio: formats made by the fixtures', () => {
  it.each([
    'jfk-moov-end.m4a',
    'jfk-faststart.m4a',
    'jfk-f32.wav',
    'jfk-8k.wav',
    'jfk-48k-stereo.wav',
    'jfk.webm',
  ])('%s decodes from memory to about 11 s', async (name) => {
    const bytes = readFileSync(fixture(`audio/${name}`));
    const decoded = await decodeAudio(bytes);
    expect(decoded.duration).toBeGreaterThan(10.9);
    expect(decoded.duration).toBeLessThan(11.1);
  });

  it('m4a with the index at the end decodes from a Buffer (seekable memory I/O)', async () => {
    const bytes = readFileSync(fixture('audio/jfk-moov-end.m4a'));
    expect(bytes.indexOf('moov')).toBeGreaterThan(bytes.indexOf('mdat'));
    const decoded = await decodeAudio(bytes);
    expect(decoded.source.codec).toBe('aac');
    expect(Math.abs(decoded.duration - ffprobeDecodedDuration(fixture('audio/jfk-moov-end.m4a')))).toBeLessThan(0.02);
  });

  it('lossless re-encodings of jfk.wav decode to the same signal (resampling and downmix included)', async () => {
    const reference = (await decodeAudio(sharedAudio('jfk.wav'))).samples;
    // ffmpeg's `-ac 2` put the mono source into each side at -3 dB; their average is the source at -3 dB.
    for (const [name, gain] of [
      ['jfk-f32.wav', 1],
      ['jfk-48k-stereo.wav', Math.SQRT1_2],
    ] as const) {
      const other = (await decodeAudio(fixture(`audio/${name}`))).samples;
      const n = Math.min(reference.length, other.length);
      let diff = 0;
      let power = 0;
      for (let i = 0; i < n; i++) {
        diff += (reference[i]! * gain - other[i]!) ** 2;
        power += (reference[i]! * gain) ** 2;
      }
      expect(diff / power, name).toBeLessThan(0.01);
    }
  });
});

describe('decodeAudio: inputs', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'voxmill-decode-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('detects the format from the bytes, not the file name', async () => {
    const misnamed = join(dir, 'really-an-mp3.wav');
    await writeFile(misnamed, readFileSync(sharedAudio('jfk.mp3')));
    const decoded = await decodeAudio(misnamed);
    expect(decoded.source.container).toBe('mp3');
  });

  it('accepts a readable stream, a file: URL and a Uint8Array view', async () => {
    const bytes = readFileSync(sharedAudio('jfk.ogg'));
    const fromStream = await decodeAudio(Readable.from([bytes.subarray(0, 1000), bytes.subarray(1000)]));
    expect(fromStream.duration).toBeCloseTo(11, 1);
    const fromUrl = await decodeAudio(new URL(`file://${sharedAudio('jfk.ogg')}`));
    expect(fromUrl.duration).toBeCloseTo(11, 1);
    const padded = new Uint8Array(bytes.length + 10);
    padded.set(bytes, 5);
    const view = await decodeAudio(padded.subarray(5, 5 + bytes.length));
    expect(view.duration).toBeCloseTo(11, 1);
  });

  it('takes a Float32Array as 16 kHz PCM without decoding, as a private copy', async () => {
    const pcm = new Float32Array(8000).map((_, i) => Math.sin(i / 10) * 0.5);
    const decoded = await decodeAudio(pcm);
    expect(decoded.samples).not.toBe(pcm);
    expect(decoded.samples).toEqual(pcm);
    expect(decoded.duration).toBe(0.5);
  });

  it('PCM input: NaN and ±Infinity become 0, louder values are clipped to [-1, 1]', async () => {
    const pcm = Float32Array.from([
      0.25,
      Number.NaN,
      Number.POSITIVE_INFINITY,
      Number.NEGATIVE_INFINITY,
      3e38,
      -2,
      -1,
      1,
    ]);
    const decoded = await decodeAudio(pcm);
    expect([...decoded.samples]).toEqual([0.25, 0, 0, 0, 1, -1, -1, 1]);
    expect(pcm[1]).toBeNaN(); // the caller's array is left as it was
  });

  it('enforces the stream byte limit while reading', async () => {
    const big = Readable.from([Buffer.alloc(1000), Buffer.alloc(1000)]);
    await expect(decodeAudio(big, { maxInputBytes: 1500 })).rejects.toMatchObject({ code: 'AUDIO_TOO_LARGE' });
  });
});

describe('decodeAudio: bad input gives a typed error', () => {
  const cases: [string, () => Uint8Array | string, string][] = [
    ['empty buffer', () => Buffer.alloc(0), 'AUDIO_EMPTY'],
    ['text', () => Buffer.from('this is not audio at all, just some words'), 'AUDIO_UNSUPPORTED'],
    ['zeros', () => Buffer.alloc(65536), 'AUDIO_UNSUPPORTED'],
    ['truncated header', () => readFileSync(sharedAudio('jfk.wav')).subarray(0, 20), 'AUDIO_UNSUPPORTED'],
    ['missing file', () => '/nonexistent/voxmill/audio.wav', 'FILE_NOT_FOUND'],
    ['a directory', () => sharedDir, 'AUDIO_DECODE_FAILED'],
    [
      'a PNG image',
      () => Buffer.from('89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489', 'hex'),
      'AUDIO_UNSUPPORTED',
    ],
  ];

  it.each(cases)('%s -> %s', async (_name, make, code) => {
    const error = await decodeAudio(make()).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AudioDecodeError);
    expect(error).toMatchObject({ code });
    expect((error as Error).stack).toContain('decode.test.ts');
  });

  it('a WAV header with no samples is AUDIO_EMPTY, or no samples with allowEmpty', async () => {
    const wav = readFileSync(sharedAudio('jfk.wav'));
    const header = Buffer.from(wav.subarray(0, wav.indexOf('data') + 8));
    header.writeUInt32LE(header.length - 8, 4);
    header.writeUInt32LE(0, header.length - 4);
    await expect(decodeAudio(header)).rejects.toMatchObject({ code: 'AUDIO_EMPTY' });
    const empty = await decodeAudio(header, { allowEmpty: true });
    expect(empty.samples.length).toBe(0);
    expect(empty.duration).toBe(0);
    expect(empty.source.container).toBe('wav');
    expect((await decodeAudio(new Float32Array(0), { allowEmpty: true })).duration).toBe(0);
    // Empty bytes are no audio file at all.
    await expect(decodeAudio(Buffer.alloc(0), { allowEmpty: true })).rejects.toMatchObject({ code: 'AUDIO_EMPTY' });
    await expect(decodeAudio(header, { allowEmpty: 'yes' as never })).rejects.toMatchObject({
      code: 'INVALID_OPTION_TYPE',
    });
  });

  it('a header that claims gigabytes neither allocates them nor fails', async () => {
    const wav = Buffer.from(readFileSync(sharedAudio('jfk.wav')));
    wav.writeUInt32LE(0xfffffff0, 4);
    wav.writeUInt32LE(0xffffff00, wav.indexOf('data') + 4);
    const before = process.memoryUsage().rss;
    const decoded = await decodeAudio(wav);
    expect(decoded.duration).toBeCloseTo(11, 1);
    expect(process.memoryUsage().rss - before).toBeLessThan(200 * 1024 * 1024);
  });

  it('stops at the maximum duration while decoding, not after', async () => {
    const started = performance.now();
    const error = await decodeAudio(sharedAudio('gb0.wav'), { maxDurationSeconds: 5 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AudioTooLongError);
    expect(error).toMatchObject({ code: 'AUDIO_TOO_LONG', maxDurationSeconds: 5 });
    expect(performance.now() - started).toBeLessThan(scaledMs(1000));
  });

  it('an already-aborted signal rejects with its reason', async () => {
    const reason = new Error('stop');
    await expect(decodeAudio(sharedAudio('jfk.wav'), { signal: AbortSignal.abort(reason) })).rejects.toBe(reason);
  });
});

describe('decodeAudio: channels', () => {
  const rms = (x: Float32Array, from: number, to: number) => {
    let sum = 0;
    for (let i = from; i < to; i++) sum += x[i]! ** 2;
    return Math.sqrt(sum / (to - from));
  };
  const identical = (a: Float32Array, b: Float32Array) =>
    a.length === b.length &&
    Buffer.from(a.buffer, a.byteOffset, a.byteLength).equals(Buffer.from(b.buffer, b.byteOffset, b.byteLength));

  it('mono mode is unchanged: jfk.wav decodes to exactly its 16-bit samples / 32768', async () => {
    const wav = readFileSync(sharedAudio('jfk.wav'));
    const data = wav.indexOf('data');
    const count = wav.readUInt32LE(data + 4) / 2;
    const decoded = await decodeAudio(wav);
    expect(decoded.channels).toBeUndefined();
    expect(decoded.samples.length).toBe(176000);
    expect(count).toBe(176000);
    for (let i = 0; i < count; i++) {
      if (decoded.samples[i] !== wav.readInt16LE(data + 8 + 2 * i) / 32768) {
        expect.fail(`sample ${i}: ${decoded.samples[i]} differs from the file's`);
      }
    }
  });

  it('stereo_diarization.wav: left and right, as long as the mono mix, with different speakers over time', async () => {
    const path = sharedAudio('stereo_diarization.wav');
    const mono = await decodeAudio(path);
    const decoded = await decodeAudio(path, { channels: 'stereo' });
    expect(decoded.source.channels).toBe(2);
    const { left, right } = decoded.channels!;
    expect(left.length).toBe(decoded.samples.length);
    expect(right.length).toBe(decoded.samples.length);
    expect(decoded.samples.length).toBe(5 * 16000);
    expect(identical(decoded.samples, mono.samples)).toBe(true);
    const window = 8000;
    let leftDominates = 0;
    let rightDominates = 0;
    for (let start = 0; start + window <= left.length; start += window) {
      const l = rms(left, start, start + window);
      const r = rms(right, start, start + window);
      if (l > 0.01 && l > 10 * r) leftDominates++;
      if (r > 0.01 && r > 2 * l) rightDominates++;
    }
    // The left speaker talks alone at the end; the right one is louder where both talk.
    expect(leftDominates).toBeGreaterThanOrEqual(3);
    expect(rightDominates).toBeGreaterThanOrEqual(1);
  });

  it('jfk.flac (44.1 kHz stereo): both sides at 16 kHz; the mono mix is unchanged and is their average', async () => {
    const path = sharedAudio('jfk.flac');
    const mono = await decodeAudio(path);
    const decoded = await decodeAudio(path, { channels: 'stereo' });
    expect(decoded.source).toMatchObject({ sampleRate: 44100, channels: 2 });
    const { left, right } = decoded.channels!;
    expect(left.length).toBe(decoded.samples.length);
    expect(right.length).toBe(decoded.samples.length);
    expect(decoded.duration).toBeCloseTo(11, 2);
    expect(identical(decoded.samples, mono.samples)).toBe(true);
    // (L + R) / 2, as Whisper's ffmpeg loader, PyAV and miniaudio mix: never louder than the sides, so never clipped
    // (a -3 dB sum per side, libswresample's float default, made jfk.flac 3 dB louder than jfk.wav and clipped it).
    let error = 0;
    let power = 0;
    let peak = 0;
    for (let i = 0; i < left.length; i++) {
      error += ((left[i]! + right[i]!) / 2 - decoded.samples[i]!) ** 2;
      power += decoded.samples[i]! ** 2;
      peak = Math.max(peak, Math.abs(decoded.samples[i]!));
    }
    expect(error / power).toBeLessThan(1e-6);
    expect(peak).toBeLessThan(1);
    const wav = await decodeAudio(sharedAudio('jfk.wav'));
    const rms = (x: Float32Array) => Math.sqrt(x.reduce((sum, v) => sum + v * v, 0) / x.length);
    expect(rms(decoded.samples) / rms(wav.samples)).toBeCloseTo(1, 1);
  });

  it('a mono source has no channels in stereo mode, and PCM input is mono', async () => {
    for (const name of ['jfk.wav', 'jfk.opus', 'jfk.mp3']) {
      const path = sharedAudio(name);
      const decoded = await decodeAudio(path, { channels: 'stereo' });
      expect(decoded.source.channels, name).toBe(1);
      expect(decoded.channels, name).toBeUndefined();
      expect(identical(decoded.samples, (await decodeAudio(path)).samples), name).toBe(true);
    }
    expect((await decodeAudio(new Float32Array(1600), { channels: 'stereo' })).channels).toBeUndefined();
  });

  it('5.1 surround: the standard stereo downmix (centre into both sides at -3 dB, LFE dropped), normalized', async () => {
    const rate = 16000;
    const n = rate;
    const tone = (hz: number, amplitude: number) =>
      Float32Array.from({ length: n }, (_, i) => amplitude * Math.sin((2 * Math.PI * hz * i) / rate));
    const silent = new Float32Array(n);
    // FL FR FC LFE BL BR
    const wav = wav51([tone(440, 0.5), silent, tone(1000, 0.4), tone(60, 0.8), silent, silent], rate);
    const decoded = await decodeAudio(wav, { channels: 'stereo' });
    expect(decoded.source.channels).toBe(6);
    const { left, right } = decoded.channels!;
    const amplitude = (x: Float32Array, hz: number) => {
      let re = 0;
      let im = 0;
      for (let i = 0; i < x.length; i++) {
        re += x[i]! * Math.cos((2 * Math.PI * hz * i) / rate);
        im += x[i]! * Math.sin((2 * Math.PI * hz * i) / rate);
      }
      return (2 / x.length) * Math.hypot(re, im);
    };
    // Each side is FL + FC/sqrt(2) + BL/sqrt(2), scaled by 1 / (1 + sqrt(2)) so it cannot exceed full scale.
    const gain = 1 / (1 + Math.SQRT2);
    expect(amplitude(left, 440)).toBeCloseTo(0.5 * gain, 2);
    expect(amplitude(right, 440)).toBeLessThan(0.005);
    expect(amplitude(left, 1000)).toBeCloseTo(0.4 * Math.SQRT1_2 * gain, 2);
    expect(amplitude(right, 1000)).toBeCloseTo(0.4 * Math.SQRT1_2 * gain, 2);
    expect(amplitude(left, 60)).toBeLessThan(0.005);
    expect(amplitude(right, 60)).toBeLessThan(0.005);
  });

  it('stereo mode keeps the maximum duration and validates the option', async () => {
    const error = await decodeAudio(sharedAudio('jfk.flac'), { channels: 'stereo', maxDurationSeconds: 5 }).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(AudioTooLongError);
    await expect(decodeAudio(sharedAudio('jfk.wav'), { channels: 'surround' as never })).rejects.toMatchObject({
      name: 'InvalidOptionValueError',
      param: 'channels',
    });
  });
});

/** A 16-bit WAVE_FORMAT_EXTENSIBLE file with the 5.1 channel mask (FL FR FC LFE BL BR). */
function wav51(channels: Float32Array[], rate: number): Buffer {
  const frames = channels[0]!.length;
  const data = Buffer.alloc(frames * 6 * 2);
  for (let i = 0; i < frames; i++) {
    for (let c = 0; c < 6; c++) data.writeInt16LE(Math.round(channels[c]![i]! * 32767), (i * 6 + c) * 2);
  }
  const fmt = Buffer.alloc(40);
  fmt.writeUInt16LE(0xfffe, 0);
  fmt.writeUInt16LE(6, 2);
  fmt.writeUInt32LE(rate, 4);
  fmt.writeUInt32LE(rate * 12, 8);
  fmt.writeUInt16LE(12, 12);
  fmt.writeUInt16LE(16, 14);
  fmt.writeUInt16LE(22, 16);
  fmt.writeUInt16LE(16, 18);
  fmt.writeUInt32LE(0x3f, 20);
  Buffer.from('0100000000001000800000aa00389b71', 'hex').copy(fmt, 24);
  const chunk = (id: string, body: Buffer) => {
    const head = Buffer.alloc(8);
    head.write(id, 0, 'ascii');
    head.writeUInt32LE(body.length, 4);
    return Buffer.concat([head, body]);
  };
  const body = Buffer.concat([Buffer.from('WAVE'), chunk('fmt ', fmt), chunk('data', data)]);
  return chunk('RIFF', body);
}
