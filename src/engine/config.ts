// The engine's configuration (`createSpeech(options)`, also the server's JSON configuration file): every option
// validated with an error naming it, and every default applied, once. The rest of the engine reads the result.
import { resolve } from 'node:path';
import { DEFAULT_MAX_DURATION_SECONDS, DEFAULT_MAX_INPUT_BYTES, sampleRateRange } from '../audio/decode.js';
import { type ResolvedDiarizationConfig, resolveDiarizationConfig } from '../diarize/config.js';
import type { DiarizationConfig } from '../diarize/types.js';
import { InvalidOptionTypeError } from '../errors.js';
import { catalogDefaults } from '../models/catalog.js';
import { defaultModelsDir } from '../models/store.js';
import { defaultEngineThreads, normalizeVadOptions } from '../stt/request.js';
import type { SttModelConfig, VadOptions } from '../stt/types.js';
import {
  DECODER_PRECISIONS,
  DEFAULT_DECODER_PRECISION,
  DEFAULT_GREEDY_INT8_VOCABULARY,
  MAX_GPU_DEVICE,
} from '../stt/whisper-model.js';
import { STT_MODEL_IDS, sttTierDefaults } from '../tiers.js';
import { type ResolvedTtsOptions, resolveTtsOptions, type TtsOptions } from '../tts/config.js';
import { defaultCpuThreads } from '../util/cpu-budget.js';
import {
  booleanOption,
  enumOption,
  integerOption,
  isPlainObject,
  numberOption,
  objectOption,
  rejectUnknownKeys,
  stringOption,
} from '../util/validate.js';

/** @deprecated The values the old `onnxRuntime` option took; it selects nothing now (see SpeechOptions.onnxRuntime). */
export type OnnxRuntimeChoice = 'auto' | 'native' | 'wasm';
const ONNX_RUNTIME_CHOICES: readonly OnnxRuntimeChoice[] = ['auto', 'native', 'wasm'];

/** Options of `createSpeech`. Also the JSON form of the server's configuration file. */
export interface SpeechOptions {
  /** Where catalog models are installed. Default `$VOXMILL_MODELS_DIR` or `~/.cache/voxmill/models`. */
  modelsDir?: string;
  /**
   * Model ids and what serves them: a catalog id, a file path, or a {@link SttModelConfig}. `svc-stt-1` and
   * `svc-stt-1-flash` default to the catalog's defaults (`base` and `tiny-q5_1`); other ids may be added.
   */
  models?: Record<string, string | SttModelConfig>;
  /** Silero VAD model: a catalog id or a file path. Default the catalog's (`silero-v6.2.0`); null for none. */
  vadModel?: string | null;
  /**
   * VAD for calls that do not say. `'auto'` (default): on, with the transcription defaults, when the `vadModel` is
   * installed (`voxmill models pull silero-v6.2.0`), off when it is not; true or settings: on, and a missing model
   * is an error; false: off.
   */
  vad?: boolean | VadOptions | 'auto';
  /**
   * Transcriptions admitted at once per model (each then waits for its threads in the CPU budget). Default
   * ceil(cpuThreads / threads) + 1: as many as the budget can feed, and one more for short work borrowing a thread.
   */
  concurrency?: number;
  /** Transcriptions waiting per model before QueueFullError. Default 16. */
  maxQueue?: number;
  /** Unload a model after this many ms without work; 0 keeps models loaded. Default 300000 (5 minutes). */
  idleUnloadMs?: number;
  /**
   * Most CPU threads per transcription; a call gets as many of these as the CPU budget has free when its turn comes,
   * and, up to this many, the budget's extra thread while no short work could borrow it (so on up to 4 cores a call
   * alone computes on every core; the thread goes back at its next graph pass when short work arrives). Default
   * min(4, cpuThreads + 1).
   */
  threads?: number;
  /**
   * The CPU budget: threads that transcriptions, syntheses and diarizations may compute with at once, all together.
   * Work takes its threads from it before it computes and waits (first come, first served) when they are taken, so
   * concurrent calls never oversubscribe the cores. Work on at most 30 s of audio (or one synthesis of up to 500
   * characters) may borrow one thread beyond it, one at a time, so a short call does not wait behind an hour-long
   * file. Default: the number of cores less one (the event loop's), at least 1.
   */
  cpuThreads?: number;
  /**
   * The most model runs computing at once across the engine, whatever threads are free (1 to 1024): a
   * transcription, a synthesis (until its stream is read to the end, bounded by `tts.readerTimeoutMs`), a live
   * sentence, a diarization's speaker pass (a transcription with `diarize` is two runs, taking turns). Each run holds
   * its own working memory while it computes, so on a device short of memory 1 makes the peak the largest run's
   * rather than the sum of the runs at once. Work of every kind then takes turns, first come, first served, and the
   * thread short work may borrow does not let it pass: a live utterance waits behind a long file. Outside the cap:
   * decoding (bounded by `maxDecodedBytes`), the Silero VAD, and an aborted run's last ONNX or whisper pass.
   * Default: no cap (the `cpuThreads` budget and each queue's `concurrency` decide).
   */
  maxConcurrentRuns?: number;
  /** Longest audio accepted, in seconds; enforced while decoding. Default 10800 (3 hours). */
  maxDurationSeconds?: number;
  /** Largest stream input read before decoding, in bytes. Default 1 GiB. */
  maxInputBytes?: number;
  /** Audio recorded below this many Hz is refused (AudioDecodeError) before it is decoded. Default 4000. */
  minSampleRate?: number;
  /** Audio recorded above this many Hz is refused (AudioDecodeError). Default 384000. */
  maxSampleRate?: number;
  /**
   * Decoded audio all admitted transcriptions and diarizations may hold at once, in bytes (16 kHz float32: 64 KB per
   * second, 3x that with the stereo sides diarization reads, plus one more copy for the diarization worker). Work that
   * does not fit next to the rest fails with QueueFullError (retry later); audio that alone exceeds it fails with
   * AudioTooLongError, and decoding stops there. Default 2 GiB.
   */
  maxDecodedBytes?: number;
  /**
   * Run Whisper models on a GPU when the addon was built with a GPU backend (`VOXMILL_GPU=cuda` or `vulkan`) and it
   * finds one; otherwise, and with `false`, on the CPU. A GPU build that finds no device warns once
   * (`VOXMILL_GPU_FALLBACK`) and runs on the CPU. Default true.
   */
  gpu?: boolean;
  /** Which GPU, counting from 0 over the `gpu` and `igpu` entries of `devices()`. Default 0. */
  gpuDevice?: number;
  /**
   * @deprecated Piper voices and speaker-embedding models run on the ONNX Runtime the addon ships (since 0.2), whatever
   * this says; `'auto'`, `'native'` and `'wasm'` are still accepted so old configurations load, and do nothing.
   */
  onnxRuntime?: OnnxRuntimeChoice;
  /**
   * Directories scanned for Piper voices (`<name>.onnx` with `<name>.onnx.json`), in order; the first one holding
   * a variant wins. Default: the models directory, where `voxmill models pull <voice>` puts them.
   */
  voiceDirs?: string[];
  /** Text-to-speech workers, threads, queue and limits. */
  tts?: TtsOptions;
  /** Speaker diarization: features, clustering, an optional speaker-embedding model. */
  diarization?: DiarizationConfig;
}

/** Default {@link SpeechOptions.maxDecodedBytes}: 2 GiB. */
export const DEFAULT_MAX_DECODED_BYTES = 2 * 1024 ** 3;

/** One configured speech-to-text id, with its defaults applied. */
export interface ResolvedSttModel {
  id: string;
  /** A catalog id or a file path (resolved when loading: the file may be installed later). */
  spec: string;
  beamSize: number;
  threads: number;
  dtw: boolean;
  decoderPrecision: 'int8' | 'full';
  greedyInt8Vocabulary: boolean;
  suppressNonSpeech: boolean;
  conditionOnPreviousText: boolean;
  repetitionGuard: boolean;
  skipGuard: boolean;
  concurrency: number;
  maxQueue: number;
}

/** {@link SpeechOptions}, checked, with every default applied. */
export interface ResolvedSpeechConfig {
  modelsDir: string;
  models: ResolvedSttModel[];
  idleUnloadMs: number;
  maxDurationSeconds: number;
  maxInputBytes: number;
  sampleRates: { minSampleRate: number; maxSampleRate: number };
  maxDecodedBytes: number;
  /** Threads all work may compute with at once. */
  cpuThreads: number;
  /** Runs computing at once across the engine, or null for no cap. */
  maxConcurrentRuns: number | null;
  gpu: boolean;
  gpuDevice: number;
  onnxRuntime: OnnxRuntimeChoice;
  vadModel: string | null;
  /** 'auto': on when the VAD model is installed. */
  vad: VadOptions | 'auto' | undefined;
  voiceDirs: string[];
  tts: ResolvedTtsOptions;
  diarization: ResolvedDiarizationConfig;
}

const SPEECH_KEYS = [
  'modelsDir',
  'models',
  'vadModel',
  'vad',
  'concurrency',
  'maxQueue',
  'idleUnloadMs',
  'threads',
  'cpuThreads',
  'maxConcurrentRuns',
  'maxDurationSeconds',
  'maxInputBytes',
  'minSampleRate',
  'maxSampleRate',
  'maxDecodedBytes',
  'gpu',
  'gpuDevice',
  'onnxRuntime',
  'voiceDirs',
  'tts',
  'diarization',
] as const;

const STT_MODEL_KEYS = [
  'model',
  'beamSize',
  'threads',
  'concurrency',
  'maxQueue',
  'dtw',
  'decoderPrecision',
  'greedyInt8Vocabulary',
  'suppressNonSpeech',
  'conditionOnPreviousText',
  'repetitionGuard',
  'skipGuard',
] as const;

/** What a model id inherits from the engine-wide options. */
type SttEngineDefaults = Pick<ResolvedSttModel, 'threads' | 'concurrency' | 'maxQueue'>;

/**
 * Checks `createSpeech` options and applies every default.
 * @throws InvalidOptionTypeError / InvalidOptionValueError naming the option (`models.svc-stt-1.beamSize`, ...).
 */
export function resolveSpeechConfig(options: unknown): ResolvedSpeechConfig {
  const raw = objectOption('options', options);
  rejectUnknownKeys('options', raw, SPEECH_KEYS);
  const modelsDirOption = stringOption('modelsDir', raw.modelsDir);
  const modelsDir = modelsDirOption ? resolve(modelsDirOption) : defaultModelsDir();
  const vadModel = raw.vadModel === null ? null : stringOption('vadModel', raw.vadModel);
  const cpuThreads = integerOption('cpuThreads', raw.cpuThreads, 1, 1024) ?? defaultCpuThreads();
  const threads = integerOption('threads', raw.threads, 1, 64) ?? defaultEngineThreads(cpuThreads);
  const engineDefaults: SttEngineDefaults = {
    concurrency: integerOption('concurrency', raw.concurrency, 1, 64) ?? Math.ceil(cpuThreads / threads) + 1,
    maxQueue: integerOption('maxQueue', raw.maxQueue, 0, 100_000) ?? 16,
    threads,
  };
  return {
    modelsDir,
    models: sttModels(raw.models, engineDefaults),
    idleUnloadMs: integerOption('idleUnloadMs', raw.idleUnloadMs, 0, 2 ** 31 - 1) ?? 300_000,
    maxDurationSeconds:
      numberOption('maxDurationSeconds', raw.maxDurationSeconds, 0.001, 1e7) ?? DEFAULT_MAX_DURATION_SECONDS,
    maxInputBytes:
      integerOption('maxInputBytes', raw.maxInputBytes, 1, Number.MAX_SAFE_INTEGER) ?? DEFAULT_MAX_INPUT_BYTES,
    sampleRates: sampleRateRange(raw),
    maxDecodedBytes:
      integerOption('maxDecodedBytes', raw.maxDecodedBytes, 1024 * 1024, Number.MAX_SAFE_INTEGER) ??
      DEFAULT_MAX_DECODED_BYTES,
    cpuThreads,
    maxConcurrentRuns: integerOption('maxConcurrentRuns', raw.maxConcurrentRuns, 1, 1024) ?? null,
    gpu: booleanOption('gpu', raw.gpu) ?? true,
    gpuDevice: integerOption('gpuDevice', raw.gpuDevice, 0, MAX_GPU_DEVICE) ?? 0,
    onnxRuntime: enumOption('onnxRuntime', raw.onnxRuntime, ONNX_RUNTIME_CHOICES) ?? 'auto',
    vadModel: vadModel === undefined ? (catalogDefaults().vad ?? null) : vadModel,
    vad: raw.vad === undefined || raw.vad === 'auto' ? 'auto' : normalizeVadOptions('vad', raw.vad),
    voiceDirs: voiceDirsOption(raw.voiceDirs) ?? [modelsDir],
    tts: resolveTtsOptions(raw.tts, cpuThreads),
    diarization: resolveDiarizationConfig(raw.diarization),
  };
}

/** The configured ids: the tiers' catalog defaults unless overridden, then the host's own ids, in that order. */
function sttModels(value: unknown, engine: SttEngineDefaults): ResolvedSttModel[] {
  const models = objectOption('models', value);
  const defaults = catalogDefaults();
  const resolved = new Map<string, ResolvedSttModel>();
  for (const id of STT_MODEL_IDS) {
    const catalogId = defaults[id];
    if (models[id] === undefined && catalogId !== undefined) resolved.set(id, sttModel(id, catalogId, engine));
  }
  for (const [id, config] of Object.entries(models)) resolved.set(id, sttModel(id, config, engine));
  return [...resolved.values()];
}

function sttModel(id: string, value: unknown, engine: SttEngineDefaults): ResolvedSttModel {
  const param = `models.${id}`;
  if (typeof value !== 'string' && !isPlainObject(value)) {
    throw new InvalidOptionTypeError(param, 'a catalog id, a file path or { model, ... }', value);
  }
  const config: Record<string, unknown> = typeof value === 'string' ? { model: value } : value;
  rejectUnknownKeys(param, config, STT_MODEL_KEYS);
  const spec = stringOption(`${param}.model`, config.model);
  if (spec === undefined || spec === '') {
    throw new InvalidOptionTypeError(`${param}.model`, 'a catalog id or a file path', config.model);
  }
  const tier = sttTierDefaults(id);
  return {
    id,
    spec,
    beamSize: integerOption(`${param}.beamSize`, config.beamSize, 1, 16) ?? tier.beamSize,
    threads: integerOption(`${param}.threads`, config.threads, 1, 64) ?? engine.threads,
    dtw: booleanOption(`${param}.dtw`, config.dtw) ?? tier.dtw,
    decoderPrecision:
      enumOption(`${param}.decoderPrecision`, config.decoderPrecision, DECODER_PRECISIONS) ?? DEFAULT_DECODER_PRECISION,
    greedyInt8Vocabulary:
      booleanOption(`${param}.greedyInt8Vocabulary`, config.greedyInt8Vocabulary) ?? DEFAULT_GREEDY_INT8_VOCABULARY,
    suppressNonSpeech: booleanOption(`${param}.suppressNonSpeech`, config.suppressNonSpeech) ?? tier.suppressNonSpeech,
    conditionOnPreviousText:
      booleanOption(`${param}.conditionOnPreviousText`, config.conditionOnPreviousText) ?? tier.conditionOnPreviousText,
    repetitionGuard: booleanOption(`${param}.repetitionGuard`, config.repetitionGuard) ?? tier.repetitionGuard,
    skipGuard: booleanOption(`${param}.skipGuard`, config.skipGuard) ?? tier.skipGuard,
    concurrency: integerOption(`${param}.concurrency`, config.concurrency, 1, 64) ?? engine.concurrency,
    maxQueue: integerOption(`${param}.maxQueue`, config.maxQueue, 0, 100_000) ?? engine.maxQueue,
  };
}

function voiceDirsOption(value: unknown): string[] | undefined {
  if (value === undefined) return undefined;
  if (!Array.isArray(value) || value.some((dir) => typeof dir !== 'string' || dir.length === 0)) {
    throw new InvalidOptionTypeError('voiceDirs', 'an array of directory paths', value);
  }
  return value.map((dir: string) => resolve(dir));
}
