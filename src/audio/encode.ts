// Mono float32 PCM -> mp3 / wav / Ogg Opus / raw 16-bit, streaming, with resampling; FFmpeg runs on
// worker threads so the event loop keeps serving while speech is encoded.
import { AudioEncodeError, InvalidOptionTypeError, InvalidOptionValueError } from '../errors.js';
import { isNativeError, type NativeAudioEncoder, type NativeJob, native } from '../native.js';
import { runJob } from '../util/job.js';
import {
  checkSampleRate,
  contentTypeOf,
  defaultSampleRate,
  isSpeechFormat,
  SPEECH_FORMATS,
  type SpeechFormat,
} from './formats.js';

/** Input rates the encoder accepts (Hz): every voice rate in use, with room on both sides. */
export const MIN_INPUT_SAMPLE_RATE = 8000;
export const MAX_INPUT_SAMPLE_RATE = 192000;
/**
 * Bit rates (bits per second) each lossy codec takes for mono: libopus refuses more than 256 kb/s per
 * channel, and 320 kb/s is MPEG layer III's highest (lame uses the nearest rate the sample rate allows).
 */
export const BIT_RATE_RANGES = { mp3: [8000, 320000], opus: [6000, 256000], aac: [16000, 320000] } as const;
/** The bit rate of each lossy codec unless the caller sets one: clear speech at a small size. */
export const DEFAULT_BIT_RATES = { mp3: 64000, opus: 32000, aac: 64000 } as const;

export interface EncoderOptions {
  format: SpeechFormat;
  /** Rate of the samples given to encode() (the voice's rate): an integer from 8000 to 192000. */
  inputSampleRate: number;
  /** Rate of the output; default {@link defaultSampleRate}(format, inputSampleRate). */
  outputSampleRate?: number;
  /**
   * true: encode() returns nothing and finish() returns one complete file whose headers carry the final
   * sizes (wav) and the gapless Xing/LAME frame (mp3). false (default): every call returns the bytes
   * ready so far, for sending as they come; a streamed wav says 0xFFFFFFFF for its sizes, and a
   * streamed mp3 carries no Xing frame, so it decodes with lame's delay of 1105 samples in front and up
   * to one frame (576 samples below 32 kHz, 1152 above) of padding behind.
   */
  whole?: boolean;
  /** mp3/opus/aac bits per second; default 64000 for mp3 and aac, 32000 for opus. Ignored for wav, pcm16, flac. */
  bitRate?: number;
}

const NATIVE_CODES = new Set<string>([
  'AUDIO_ENCODE_FAILED',
  'ENCODER_BUSY',
  'ENCODER_CLOSED',
  'INVALID_ARGUMENT',
  'ENCODE_UNSUPPORTED_RATE',
  'OUT_OF_MEMORY',
  'INTERNAL',
]);

/**
 * Native failures as {@link AudioEncodeError} keeping the native `code`; given `callerStack`, with the
 * stack of the call that queued the work (a native rejection has none, and a queued call runs after its
 * caller returned).
 */
function asEncodeError(error: unknown, callerStack?: string): unknown {
  // Both a raw native rejection and runJob's generic VoxmillError for codes it does not know land here.
  const typed =
    isNativeError(error) && !(error instanceof AudioEncodeError) && NATIVE_CODES.has(error.code)
      ? new AudioEncodeError(error.message, { code: error.code })
      : error;
  if (typed instanceof AudioEncodeError && callerStack !== undefined) {
    typed.stack = `${typed.name}: ${typed.message}\n${callerStack.split('\n').slice(3).join('\n')}`;
  }
  return typed;
}

function checkInteger(param: string, value: unknown, min: number, max: number, unit: string): number {
  if (typeof value !== 'number' || Number.isNaN(value))
    throw new InvalidOptionTypeError(param, `a number (${unit})`, value);
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new InvalidOptionValueError(param, `an integer from ${min} to ${max}`, value);
  }
  return value;
}

/**
 * One encoding of one stream of mono float32 PCM. Calls may be made without awaiting the previous one:
 * they run in order, one at a time. Fails with {@link AudioEncodeError} (its `code` is
 * `AUDIO_ENCODE_FAILED` for codec or muxer failures, `ENCODER_CLOSED` after finish(), dispose() or an
 * earlier failure, `OUT_OF_MEMORY`).
 */
export class StreamingEncoder {
  readonly format: SpeechFormat;
  readonly inputSampleRate: number;
  /** The output's rate. */
  readonly sampleRate: number;
  readonly whole: boolean;
  /** The `Content-Type` of the output. */
  readonly contentType: string;
  readonly #native: NativeAudioEncoder;
  #tail: Promise<unknown> = Promise.resolve();
  #pending = 0;

  /** Validates the options; throws InvalidOptionTypeError / InvalidOptionValueError (see {@link createEncoder}). */
  constructor(options: EncoderOptions) {
    if (typeof options !== 'object' || options === null) {
      throw new InvalidOptionTypeError('options', 'an object', options);
    }
    const { format } = options;
    if (!isSpeechFormat(format)) {
      if (typeof format !== 'string') throw new InvalidOptionTypeError('format', 'a string', format);
      throw new InvalidOptionValueError('format', `one of ${SPEECH_FORMATS.join(', ')}`, format);
    }
    const inputSampleRate = checkInteger(
      'inputSampleRate',
      options.inputSampleRate,
      MIN_INPUT_SAMPLE_RATE,
      MAX_INPUT_SAMPLE_RATE,
      'Hz',
    );
    const sampleRate = checkSampleRate(
      format,
      options.outputSampleRate ?? defaultSampleRate(format, inputSampleRate),
      'outputSampleRate',
    );
    const whole = options.whole ?? false;
    if (typeof whole !== 'boolean') throw new InvalidOptionTypeError('whole', 'a boolean', whole);
    // The addon takes a bit rate always and applies no default of its own; PCM formats have none (0).
    const lossy = format === 'mp3' || format === 'opus' || format === 'aac' ? format : undefined;
    const bitRate =
      lossy === undefined
        ? 0
        : checkInteger(
            'bitRate',
            options.bitRate ?? DEFAULT_BIT_RATES[lossy],
            BIT_RATE_RANGES[lossy][0],
            BIT_RATE_RANGES[lossy][1],
            'bits per second',
          );
    this.format = format;
    this.inputSampleRate = inputSampleRate;
    this.sampleRate = sampleRate;
    this.whole = whole;
    this.contentType = contentTypeOf(format, sampleRate);
    const Encoder = native().AudioEncoder;
    try {
      this.#native = new Encoder({
        format,
        inputSampleRate,
        outputSampleRate: sampleRate,
        whole,
        bitRate,
      });
    } catch (error) {
      // Thrown synchronously, so its stack already leads to the caller.
      throw asEncodeError(error);
    }
  }

  /**
   * Encodes the next samples (at `inputSampleRate`) and resolves to the bytes ready so far, possibly none
   * (always none in whole mode). The samples are copied before this returns, so the array may be reused.
   */
  encode(samples: Float32Array): Promise<Buffer> {
    if (!(samples instanceof Float32Array)) {
      return Promise.reject(new InvalidOptionTypeError('samples', 'a Float32Array', samples));
    }
    // The native side copies when the job starts; a call queued behind another is copied here instead.
    const input = this.#pending === 0 ? samples : samples.slice();
    return this.#schedule(() => this.#native.encode(input));
  }

  /** Flushes everything and resolves to the rest of the stream, or in whole mode to the complete file. */
  finish(): Promise<Buffer> {
    return this.#schedule(() => this.#native.finish());
  }

  /**
   * Frees the native state now (a running call finishes first, natively); calls still queued or made
   * later reject with code `ENCODER_CLOSED`. Idempotent; needed only when finish() is not reached.
   */
  dispose(): void {
    this.#native.dispose();
  }

  // The native encoder refuses overlapping calls (ENCODER_BUSY), so calls wait for the previous one.
  // Nothing is in flight in the common, awaited case: then the job starts synchronously.
  #schedule(start: () => NativeJob<Buffer>): Promise<Buffer> {
    const callerStack = new Error().stack ?? '';
    const execute = async (): Promise<Buffer> => {
      try {
        return await runJob(start);
      } catch (error) {
        throw asEncodeError(error, callerStack);
      } finally {
        this.#pending--;
      }
    };
    this.#pending++;
    const result = this.#pending === 1 ? execute() : this.#tail.then(execute);
    this.#tail = result.then(
      () => undefined,
      () => undefined,
    );
    return result;
  }
}

/**
 * Creates an encoder for mono float32 PCM. Throws InvalidOptionTypeError / InvalidOptionValueError for
 * bad options: an unknown format, an input rate outside 8000..192000, an output rate outside
 * SPEECH_SAMPLE_RATES (Opus: also not 22050 or 44100), a bit rate outside {@link BIT_RATE_RANGES}.
 */
export function createEncoder(options: EncoderOptions): StreamingEncoder {
  return new StreamingEncoder(options);
}

/** Encodes a whole signal to one complete file (final headers; gapless mp3). */
export async function encodeAudio(samples: Float32Array, options: Omit<EncoderOptions, 'whole'>): Promise<Buffer> {
  const encoder = createEncoder({ ...options, whole: true });
  try {
    await encoder.encode(samples);
    return await encoder.finish();
  } finally {
    encoder.dispose();
  }
}
