// Decoding for the engine's calls under one memory budget: every admitted transcription and diarization holds its
// decoded samples (times the copies it makes) against `maxDecodedBytes`, and a call's decode stops at the longest
// audio the budget could ever hold, so an oversized file is refused while decoding, not after.
import { type AudioInput, type DecodedAudio, type DecodeOptions, WHISPER_SAMPLE_RATE } from '../audio/decode.js';
import { MemoryBudget } from '../util/memory-budget.js';

/** Decodes audio (`decodeAudio`, or a fake in unit tests). */
export type AudioDecoder = (input: AudioInput, options: DecodeOptions) => Promise<DecodedAudio>;

export interface AudioAdmissionOptions {
  decode: AudioDecoder;
  maxDecodedBytes: number;
  maxInputBytes: number;
  sampleRates: { minSampleRate: number; maxSampleRate: number };
}

export interface AdmitAudioOptions {
  /** The call's own limit (already capped by the engine's). */
  maxDurationSeconds: number;
  /** Copies of the 16 kHz samples the call holds while it runs. */
  copies: number;
  /** Keep the two sides of stereo audio (diarization reads them). */
  stereo: boolean;
  /** Audio with no samples resolves empty instead of failing with AUDIO_EMPTY (transcription: empty text). */
  allowEmpty: boolean;
  signal: AbortSignal | undefined;
}

/** Decoded audio held against the budget until `release` is called (once; later calls do nothing). */
export interface AdmittedAudio {
  audio: DecodedAudio;
  release: () => void;
}

export class AudioAdmission {
  readonly #budget: MemoryBudget;
  readonly #options: AudioAdmissionOptions;

  constructor(options: AudioAdmissionOptions) {
    this.#options = options;
    this.#budget = new MemoryBudget('decoded audio', 'maxDecodedBytes', options.maxDecodedBytes);
  }

  /**
   * Decodes `input` and takes its share of the budget.
   * @throws what decoding throws; QueueFullError when it does not fit next to the audio others hold;
   *   AudioTooLongError when it alone exceeds the budget.
   */
  async decode(input: AudioInput, options: AdmitAudioOptions): Promise<AdmittedAudio> {
    const { decode, maxInputBytes, sampleRates } = this.#options;
    const maxDurationSeconds = this.#decodeLimit(options.maxDurationSeconds, options.copies);
    const audio = await decode(input, {
      maxDurationSeconds,
      maxInputBytes,
      ...sampleRates,
      ...(options.stereo ? { channels: 'stereo' as const } : {}),
      ...(options.allowEmpty ? { allowEmpty: true } : {}),
      ...(options.signal ? { signal: options.signal } : {}),
    });
    const release = this.#budget.take(audio.samples.byteLength * options.copies, maxDurationSeconds);
    return { audio, release };
  }

  /** The longest audio a call may decode: its own limit, and no more than the budget can ever hold. */
  #decodeLimit(maxDurationSeconds: number, copies: number): number {
    const budgetSeconds = this.#budget.limitBytes / (copies * WHISPER_SAMPLE_RATE * Float32Array.BYTES_PER_ELEMENT);
    return Math.min(maxDurationSeconds, budgetSeconds);
  }
}
