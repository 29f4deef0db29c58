// Audio input of any supported kind -> 16 kHz mono float32 (optionally with left/right), decoded on a worker thread.
import { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { AudioDecodeError, AudioTooLongError, InvalidOptionTypeError, InvalidOptionValueError } from '../errors.js';
import { native } from '../native.js';
import { runJob } from '../util/job.js';
import { booleanOption, enumOption, integerOption } from '../util/validate.js';
import { copyPcm } from './pcm-copy.js';

/** whisper.cpp's input rate. */
export const WHISPER_SAMPLE_RATE = 16000;
/** Default cap on decoded audio: 3 hours. */
export const DEFAULT_MAX_DURATION_SECONDS = 3 * 3600;
/** Default cap on bytes read from a stream input before decoding: 1 GiB. */
export const DEFAULT_MAX_INPUT_BYTES = 1024 ** 3;
/**
 * Default lowest source sample rate: 4 kHz. Real recordings go down to 8 kHz telephony (and a few old formats to
 * 4–5.5 kHz); a header claiming 7 Hz is a decompression bomb (128 KB of samples resample to hours of audio).
 */
export const DEFAULT_MIN_SAMPLE_RATE = 4000;
/** Default highest source sample rate: 384 kHz, the highest rate audio hardware records at. */
export const DEFAULT_MAX_SAMPLE_RATE = 384_000;
/** The most FFmpeg's resampler is asked to handle; the native decoder's hard limit. */
export const SAMPLE_RATE_LIMIT = 768_000;

/**
 * Audio accepted by `transcribe()` and `decodeAudio()`: encoded bytes (any supported container; the
 * format is detected from the bytes, never from a name), a file path or `file:` URL, a readable
 * stream of bytes, or already-decoded 16 kHz mono PCM as a Float32Array.
 */
export type AudioInput = Uint8Array | string | URL | Readable | AsyncIterable<Uint8Array> | Float32Array;

/** Facts about the source audio before conversion. */
export interface AudioSourceInfo {
  /** FFmpeg demuxer name (`wav`, `mp3`, `ogg`, `flac`, `mov,mp4,m4a,3gp,3g2,mj2`, ...), or `pcm` for Float32Array input. */
  container: string;
  /** Codec name (`pcm_s16le`, `mp3`, `aac`, `opus`, ...), or `pcm_f32` for Float32Array input. */
  codec: string;
  sampleRate: number;
  channels: number;
  /** Bits per second when the container says, else 0. */
  bitRate: number;
}

/** The two sides of a stereo (or surround) source, each at {@link WHISPER_SAMPLE_RATE} and as long as `samples`. */
export interface StereoChannels {
  left: Float32Array;
  right: Float32Array;
}

export interface DecodedAudio {
  /** Mono float32 samples at {@link WHISPER_SAMPLE_RATE}: the mix of all channels, the same with either `channels` option. */
  samples: Float32Array;
  sampleRate: number;
  /** Seconds of decoded audio. */
  duration: number;
  source: AudioSourceInfo;
  /**
   * Only with `channels: 'stereo'` and a source of two or more channels: a 2-channel source's own
   * channels; a surround source's standard stereo downmix (FFmpeg's: centre and surrounds added at -3 dB
   * to both sides, LFE dropped; not normalised, so a loud surround mix may exceed ±1).
   */
  channels?: StereoChannels;
}

/** What decodeAudio returns besides the mono mix. */
export type ChannelMode = 'mono' | 'stereo';

export const CHANNEL_MODES: readonly ChannelMode[] = ['mono', 'stereo'];

export interface DecodeOptions {
  /** Stop with AudioTooLongError once the decoded audio passes this many seconds. Default 3 hours. */
  maxDurationSeconds?: number;
  /** Stop with AudioDecodeError once a stream input passes this many bytes. Default 1 GiB. */
  maxInputBytes?: number;
  /** Sources recorded below this many Hz fail with AudioDecodeError (`AUDIO_DECODE_FAILED`). Default 4000. */
  minSampleRate?: number;
  /** Sources recorded above this many Hz fail with AudioDecodeError (`AUDIO_DECODE_FAILED`). Default 384000. */
  maxSampleRate?: number;
  /**
   * `'stereo'` also returns the left and right channels (`channels`) when the source has two or more;
   * they take twice the memory of `samples` again. Default `'mono'`.
   */
  channels?: ChannelMode;
  /**
   * Resolve with no samples (duration 0) for audio that holds none (a WAV header without data, an empty
   * Float32Array) instead of failing with `AUDIO_EMPTY`. Empty input bytes, which are no audio file at all, still
   * fail. Default false; transcription sets it, since empty audio transcribes to empty text.
   */
  allowEmpty?: boolean;
  signal?: AbortSignal;
}

function isAsyncIterable(value: unknown): value is AsyncIterable<unknown> {
  return typeof value === 'object' && value !== null && Symbol.asyncIterator in value;
}

async function collect(stream: AsyncIterable<unknown>, maxBytes: number, signal?: AbortSignal): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let total = 0;
  for await (const chunk of stream) {
    signal?.throwIfAborted();
    if (!(chunk instanceof Uint8Array)) {
      throw new InvalidOptionTypeError('input', 'a stream of Buffer/Uint8Array chunks', chunk);
    }
    total += chunk.byteLength;
    if (total > maxBytes) {
      if (stream instanceof Readable) stream.destroy();
      throw new AudioDecodeError(`the audio stream is larger than the maximum of ${maxBytes} bytes`, {
        code: 'AUDIO_TOO_LARGE',
      });
    }
    chunks.push(Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength));
  }
  return Buffer.concat(chunks, total);
}

async function fromPcm(
  input: Float32Array,
  maxDurationSeconds: number,
  allowEmpty: boolean,
  signal?: AbortSignal,
): Promise<DecodedAudio> {
  if (input.length === 0 && !allowEmpty) {
    throw new AudioDecodeError('the PCM input is empty', { code: 'AUDIO_EMPTY' });
  }
  const duration = input.length / WHISPER_SAMPLE_RATE;
  if (duration > maxDurationSeconds) {
    throw new AudioTooLongError(
      `the audio is ${duration.toFixed(1)} s, longer than the maximum of ${maxDurationSeconds} s`,
      maxDurationSeconds,
    );
  }
  return {
    samples: await copyPcm(input, signal),
    sampleRate: WHISPER_SAMPLE_RATE,
    duration,
    source: { container: 'pcm', codec: 'pcm_f32', sampleRate: WHISPER_SAMPLE_RATE, channels: 1, bitRate: 0 },
  };
}

/** The accepted source sample rates, validated: [min, max] within the native decoder's limit. */
export function sampleRateRange(
  options: { minSampleRate?: unknown; maxSampleRate?: unknown },
  param = '',
): { minSampleRate: number; maxSampleRate: number } {
  const minSampleRate =
    integerOption(`${param}minSampleRate`, options.minSampleRate, 1, SAMPLE_RATE_LIMIT) ?? DEFAULT_MIN_SAMPLE_RATE;
  const maxSampleRate =
    integerOption(`${param}maxSampleRate`, options.maxSampleRate, 1, SAMPLE_RATE_LIMIT) ?? DEFAULT_MAX_SAMPLE_RATE;
  if (maxSampleRate < minSampleRate) {
    throw new InvalidOptionValueError(
      `${param}maxSampleRate`,
      `at least minSampleRate (${minSampleRate})`,
      maxSampleRate,
    );
  }
  return { minSampleRate, maxSampleRate };
}

/**
 * Decodes audio to 16 kHz mono float32 on a worker thread, with `channels: 'stereo'` also its left and
 * right channels. Float32Array input is taken as already decoded (mono) and copied (in chunks that leave the event
 * loop free), so the caller's array is never read by a worker thread. Every returned sample is finite and in
 * [-1, 1]: NaN and ±Infinity become 0, louder values are clipped. Fails with
 * {@link AudioDecodeError} (codes `AUDIO_DECODE_FAILED`, `AUDIO_UNSUPPORTED`, `AUDIO_EMPTY`,
 * `FILE_NOT_FOUND`, `AUDIO_TOO_LARGE`) or {@link AudioTooLongError}.
 */
export async function decodeAudio(input: AudioInput, options: DecodeOptions = {}): Promise<DecodedAudio> {
  const maxDurationSeconds = options.maxDurationSeconds ?? DEFAULT_MAX_DURATION_SECONDS;
  const maxInputBytes = options.maxInputBytes ?? DEFAULT_MAX_INPUT_BYTES;
  const stereo = enumOption('channels', options.channels, CHANNEL_MODES) === 'stereo';
  const rates = sampleRateRange(options);
  const allowEmpty = booleanOption('allowEmpty', options.allowEmpty) ?? false;
  const { signal } = options;
  signal?.throwIfAborted();
  if (input instanceof Float32Array) return fromPcm(input, maxDurationSeconds, allowEmpty, signal);
  let source: Uint8Array | string;
  if (typeof input === 'string') {
    if (input.length === 0) throw new InvalidOptionTypeError('input', 'a non-empty path', input);
    source = input;
  } else if (input instanceof URL) {
    if (input.protocol !== 'file:') throw new InvalidOptionTypeError('input', 'a file: URL', input.href);
    source = fileURLToPath(input);
  } else if (input instanceof Uint8Array) {
    source = input;
  } else if (isAsyncIterable(input)) {
    source = await collect(input, maxInputBytes, signal);
  } else {
    throw new InvalidOptionTypeError(
      'input',
      'a Buffer/Uint8Array, a file path or file: URL, a readable stream, or a Float32Array of 16 kHz PCM',
      input,
    );
  }
  const decoded = await runJob(
    () => native().decodeAudio(source, { maxDurationSeconds, stereo, allowEmpty, ...rates }),
    {
      signal,
      maxDurationSeconds,
    },
  );
  const { samples, stereo: sides, ...facts } = decoded;
  const audio: DecodedAudio = {
    samples,
    sampleRate: WHISPER_SAMPLE_RATE,
    duration: samples.length / WHISPER_SAMPLE_RATE,
    source: facts,
  };
  if (sides) audio.channels = { left: sides.left, right: sides.right };
  return audio;
}
