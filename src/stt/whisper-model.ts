// A loaded whisper.cpp model: the weights once in memory, any number of concurrent transcriptions.
import { basename, resolve } from 'node:path';
import { type AudioInput, DEFAULT_MAX_DURATION_SECONDS, decodeAudio } from '../audio/decode.js';
import { DEFAULT_VAD_OVERLAP_SECONDS, TRANSCRIPTION_VAD_DEFAULTS } from '../audio/vad-settings.js';
import { ClosedError, InvalidOptionTypeError } from '../errors.js';
import { type NativeModelInfo, type NativeVadParams, type NativeWhisperModel, native } from '../native.js';
import { warnGpuFallback } from '../system.js';
import { CUSTOM_STT_TIER } from '../tiers.js';
import type { LiveThreadCount } from '../util/cpu-budget.js';
import { runJob } from '../util/job.js';
import {
  booleanOption,
  enumOption,
  integerOption,
  objectOption,
  rejectUnknownKeys,
  signalOption,
} from '../util/validate.js';
import { defaultThreads, type NormalizedTranscribeOptions, normalizeTranscribeOptions } from './request.js';
import { runTranscription } from './transcribe.js';
import type { TranscribeOptions, Transcription, VadOptions } from './types.js';

/** Highest {@link WhisperLoadOptions.gpuDevice} (the addon checks the same bound). */
export const MAX_GPU_DEVICE = 64;
/** WhisperLoadOptions.decoderPrecision's values, and its default. */
export const DECODER_PRECISIONS = ['int8', 'full'] as const;
export const DEFAULT_DECODER_PRECISION = 'full';
/** Default of WhisperLoadOptions.greedyInt8Vocabulary. */
export const DEFAULT_GREEDY_INT8_VOCABULARY = true;

/** Options for loading a whisper model. */
export interface WhisperLoadOptions {
  /**
   * Use a GPU backend when the addon was built with one and it finds a device; else the model runs on the CPU (with a
   * `VOXMILL_GPU_FALLBACK` warning in a GPU build). `info.device` says which. Default true.
   */
  gpu?: boolean;
  /** Which GPU, counting from 0 over the `gpu` and `igpu` entries of `devices()`. Default 0. */
  gpuDevice?: number;
  /**
   * Flash attention. Default true. Calls that ask for word times (`timestamps: 'word'`, diarization) run without it
   * when DTW is on (DTW reads the attention weights the flash kernel never forms); the others keep it.
   */
  flashAttention?: boolean;
  /**
   * DTW word timestamps where whisper.cpp has an alignment-heads preset for the model (tiny … large-v3-turbo), computed
   * only for calls that ask for word times. Default true.
   */
  dtw?: boolean;
  /**
   * The decoder's weights: `'int8'` quantizes an f16 file's decoder matrices to q8_0 as it loads (the encoder stays
   * f16): a greedy step reads every decoder weight for one token, so it runs about 1.3-1.5 times faster, and the
   * weights take less memory (tiny.en 27 MB less); transcripts can differ by a word, and on non-speech without the VAD
   * tiny.en was measured to invent a phrase the f16 decoder does not. `'full'` keeps the file's own type. A file
   * already quantized keeps its type either way. Default `'full'`.
   */
  decoderPrecision?: 'int8' | 'full';
  /**
   * A greedy step (beam size 1, temperature 0) projects its hidden state onto an int8 (q8_0) copy of the vocabulary
   * projection, which reads half the bytes of the f16 one, then recomputes from the f16 weights, exactly as the f16
   * product computes them, the logits that decide the token: the end of text, the special tokens, every timestamp,
   * and every text token left after suppression within 4 (or 4 times the step's measured error) of the best int8
   * value. So the chosen tokens and timestamps are the f16 projection's as long as no int8 logit is off by more than
   * half that margin (measured: at most 0.89, base). The softmax's normalizer still sums int8 values for the unlikely
   * tokens: reported probabilities move by up to about 0.002, and a window whose mean log probability lies that close
   * to `logprobThreshold` could take the other side of the temperature fallback. Greedy decoding of a long file 6-9 %
   * faster. Costs the copy's memory: 21 MB for tiny, 28 for base, 42 for small, 56 for medium, 71 for large. Made
   * only of an f16 projection on the CPU (`info.greedyInt8Vocabulary` says whether it was); beam search and sampling
   * at a temperature draw from the whole distribution and keep the f16 projection. Default true.
   */
  greedyInt8Vocabulary?: boolean;
  signal?: AbortSignal;
}

/**
 * ggml's file types (ggml.h `enum ggml_ftype`, the `GGML_FTYPE_ALL_F32` / `GGML_FTYPE_MOSTLY_*` names lowercased, as
 * whisper.cpp's quantize tool spells them) and their numbers in a model file's header.
 */
const GGML_FTYPES = {
  f32: 0,
  f16: 1,
  q4_0: 2,
  q4_1: 3,
  q4_1_some_f16: 4,
  q8_0: 7,
  q5_0: 8,
  q5_1: 9,
  q2_k: 10,
  q3_k: 11,
  q4_k: 12,
  q5_k: 13,
  q6_k: 14,
  iq2_xxs: 15,
  iq2_xs: 16,
  iq3_xxs: 17,
  iq1_s: 18,
  iq4_nl: 19,
  iq3_s: 20,
  iq2_s: 21,
  iq4_xs: 22,
  iq1_m: 23,
  bf16: 24,
  mxfp4: 25,
  nvfp4: 26,
  q1_0: 27,
} as const;

/**
 * How a model's weights are stored: `f32`, `f16`, `bf16`, or a ggml quantization (`q5_0`, `q8_0`, `q4_k`, ...).
 * `unknown` for a file type this version does not name.
 */
export type WhisperQuantization = keyof typeof GGML_FTYPES | 'unknown';

const QUANTIZATION_BY_FTYPE = new Map<number, WhisperQuantization>(
  Object.entries(GGML_FTYPES).map(([name, ftype]) => [ftype, name as WhisperQuantization]),
);

/** @internal The name of a ggml file type number; `unknown` for one ggml does not define. */
export function quantizationOf(ftype: number): WhisperQuantization {
  return QUANTIZATION_BY_FTYPE.get(ftype) ?? 'unknown';
}

/** Facts read from a loaded model (see NativeModelInfo for each field). */
export interface WhisperModelInfo extends Omit<NativeModelInfo, 'disposed' | 'ftype'> {
  /** How the weights are stored, e.g. `f16` or `q5_0`. */
  quantization: WhisperQuantization;
  /**
   * The raw ggml file type number behind `quantization` (0 f32, 1 f16, 8 q5_0, ...).
   * @deprecated Use `quantization`.
   */
  ftype: number;
}

function publicInfo(info: NativeModelInfo): WhisperModelInfo {
  const { disposed: _disposed, ...rest } = info;
  return { ...rest, quantization: quantizationOf(info.ftype) };
}

/** Resolves a per-call VAD request into native parameters. */
export function nativeVadParams(
  vad: VadOptions | undefined,
  fallbackModel: string | undefined,
): NativeVadParams | undefined {
  if (!vad) return undefined;
  const modelPath = vad.model ?? fallbackModel;
  if (modelPath === undefined) {
    throw new InvalidOptionTypeError('vad.model', 'a path to a ggml Silero VAD model (none is configured)', undefined);
  }
  const { model: _model, ...settings } = vad;
  // Every value filled in here: the addon applies no defaults of its own.
  return {
    modelPath: resolve(modelPath),
    ...TRANSCRIPTION_VAD_DEFAULTS,
    overlapSeconds: DEFAULT_VAD_OVERLAP_SECONDS,
    ...settings,
  };
}

/**
 * A whisper.cpp model loaded in memory. Each transcription gets its own whisper state, so several can
 * run at once on one copy of the weights; everything runs on worker threads.
 */
export class WhisperModel {
  readonly path: string;
  readonly info: WhisperModelInfo;
  #native: NativeWhisperModel | undefined;

  private constructor(path: string, model: NativeWhisperModel) {
    this.path = path;
    this.#native = model;
    this.info = publicInfo(model.info());
  }

  /** Loads a ggml whisper model file on a worker thread. Rejects with ModelLoadError. */
  static async load(path: string, options: WhisperLoadOptions = {}): Promise<WhisperModel> {
    if (typeof path !== 'string' || path === '') throw new InvalidOptionTypeError('path', 'a non-empty string', path);
    const raw = objectOption('options', options);
    rejectUnknownKeys('options', raw, [
      'gpu',
      'gpuDevice',
      'flashAttention',
      'dtw',
      'decoderPrecision',
      'greedyInt8Vocabulary',
      'signal',
    ]);
    const signal = signalOption('signal', raw.signal);
    const loadOptions = {
      gpu: booleanOption('gpu', raw.gpu) ?? true,
      gpuDevice: integerOption('gpuDevice', raw.gpuDevice, 0, MAX_GPU_DEVICE) ?? 0,
      flashAttention: booleanOption('flashAttention', raw.flashAttention) ?? true,
      dtw: booleanOption('dtw', raw.dtw) ?? true,
      decoderInt8:
        (enumOption('decoderPrecision', raw.decoderPrecision, DECODER_PRECISIONS) ?? DEFAULT_DECODER_PRECISION) ===
        'int8',
      greedyInt8Vocabulary:
        booleanOption('greedyInt8Vocabulary', raw.greedyInt8Vocabulary) ?? DEFAULT_GREEDY_INT8_VOCABULARY,
    };
    const absolute = resolve(path);
    const model = await runJob(() => native().WhisperModel.load(absolute, loadOptions), { signal });
    if (signal?.aborted) {
      model.dispose();
      signal.throwIfAborted();
    }
    const loaded = new WhisperModel(absolute, model);
    if (loadOptions.gpu && !loaded.info.gpu) warnGpuFallback(absolute, loadOptions.gpuDevice);
    return loaded;
  }

  /** False once disposed. */
  get loaded(): boolean {
    return this.#native !== undefined;
  }

  /**
   * Decodes `input` and transcribes it. `options.vad` needs `vad.model` here (the `Speech` engine fills
   * in its configured VAD model).
   */
  async transcribe(input: AudioInput, options: TranscribeOptions = {}): Promise<Transcription> {
    const normalized = normalizeTranscribeOptions(options, { ...CUSTOM_STT_TIER, threads: defaultThreads() });
    const result = await this.transcribeWith(input, normalized, undefined);
    // Speaker labels need the engine's VAD and diarizer (Speech.transcribe); here diarize only keeps segments.
    if (normalized.timestamps !== 'word') delete result.words;
    return result;
  }

  /** @internal Used by the Speech engine, which validates options itself. */
  async transcribeWith(
    input: AudioInput,
    options: NormalizedTranscribeOptions,
    fallbackVadModel: string | undefined,
  ): Promise<Transcription> {
    const vad = nativeVadParams(options.vad, fallbackVadModel);
    const audio = await decodeAudio(input, {
      maxDurationSeconds: options.maxDurationSeconds ?? DEFAULT_MAX_DURATION_SECONDS,
      allowEmpty: true,
      ...(options.signal ? { signal: options.signal } : {}),
    });
    return this.transcribeDecoded(audio, options, vad);
  }

  /** @internal */
  async transcribeDecoded(
    audio: Awaited<ReturnType<typeof decodeAudio>>,
    options: NormalizedTranscribeOptions,
    vad: NativeVadParams | undefined,
    track?: (settled: Promise<void>) => void,
    threads?: LiveThreadCount,
    speechModel?: string,
  ): Promise<Transcription> {
    const model = this.#native;
    if (!model) throw new ClosedError(`the model ${this.path} has been disposed`);
    const modelName = basename(this.path);
    return runTranscription({
      model,
      info: model.info(),
      modelName,
      audio,
      options,
      vad,
      track,
      threads,
      speechModel,
    });
  }

  /** Releases the weights once running transcriptions finish. Further calls reject with ClosedError. */
  dispose(): void {
    this.#native?.dispose();
    this.#native = undefined;
  }
}
