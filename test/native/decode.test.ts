import { readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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
    for (const s of decoded.samples) {
      expect(Number.isFinite(s)).toBe(true);
      energy += s * s;
    }
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
    for (const name of ['jfk-f32.wav', 'jfk-48k-stereo.wav']) {
      const other = (await decodeAudio(fixture(`audio/${name}`))).samples;
      const n = Math.min(reference.length, other.length);
      let diff = 0;
      let power = 0;
      for (let i = 0; i < n; i++) {
        diff += (reference[i]! - other[i]!) ** 2;
        power += reference[i]! ** 2;
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

  it('takes a Float32Array as 16 kHz PCM without decoding', async () => {
    const pcm = new Float32Array(8000);
    const decoded = await decodeAudio(pcm);
    expect(decoded.samples).toBe(pcm);
    expect(decoded.duration).toBe(0.5);
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

  it('a WAV header with no samples is AUDIO_EMPTY', async () => {
    const wav = readFileSync(sharedAudio('jfk.wav'));
    const header = Buffer.from(wav.subarray(0, wav.indexOf('data') + 8));
    header.writeUInt32LE(header.length - 8, 4);
    header.writeUInt32LE(0, header.length - 4);
    await expect(decodeAudio(header)).rejects.toMatchObject({ code: 'AUDIO_EMPTY' });
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
    expect(performance.now() - started).toBeLessThan(1000);
  });

  it('an already-aborted signal rejects with its reason', async () => {
    const reason = new Error('stop');
    await expect(decodeAudio(sharedAudio('jfk.wav'), { signal: AbortSignal.abort(reason) })).rejects.toBe(reason);
  });
});
