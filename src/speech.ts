// createSpeech(): the engine behind the library and the HTTP handler. Maps model ids to files, loads
// each model lazily and once, runs transcriptions through a bounded queue per model, and unloads
// models that sat idle.
import { existsSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import {
  type AudioInput,
  DEFAULT_MAX_DURATION_SECONDS,
  DEFAULT_MAX_INPUT_BYTES,
  type DecodedAudio,
  decodeAudio,
  sampleRateRange,
  WHISPER_SAMPLE_RATE,
} from './audio/decode.js';
import { detectSpeechRegionsInPlace } from './audio/speech-regions.js';
import { attachSpeakers } from './diarize/attach.js';
import { channelsDiffer, turnsByChannel } from './diarize/channels.js';
import { Diarizer } from './diarize/diarizer.js';
import {
  type DiarizationConfig,
  type ResolvedDiarizationConfig,
  resolveDiarizationConfig,
  SPEAKER_COUNT_KEYS,
  type SpeakerCountOptions,
  speakerCounts,
} from './diarize/options.js';
import { turnStretches } from './diarize/tinydiarize.js';
import type { SpeakerTurn } from './diarize/turn.js';
import type { DiarizeSettings } from './diarize/worker-protocol.js';
import { ClosedError, InvalidOptionTypeError, ModelNotFoundError, type VoiceConfigError } from './errors.js';
import { catalogDefaults, catalogVoice, findCatalogEntry } from './models/catalog.js';
import { defaultModelsDir, installedPath } from './models/store.js';
import { defaultThreads, normalizeTranscribeOptions, normalizeVadOptions } from './stt/options.js';
import type { TranscribeOptions, Transcription, VadOptions } from './stt/types.js';
import { nativeVadParams, WhisperModel, type WhisperModelInfo } from './stt/whisper-model.js';
import { type ListVoicesOptions, TtsEngine, type TtsStatus } from './tts/engine.js';
import { type ResolvedTtsOptions, resolveTtsOptions, type TtsOptions } from './tts/tts-options.js';
import type { SpeechAudio, SpeechStream, SynthesizeOptions, Voice } from './tts/types.js';
import { VoiceDirectoryScanner, voicesOf } from './tts/voices.js';
import { untilAborted } from './util/job.js';
import { MemoryBudget } from './util/memory-budget.js';
import { WorkQueue } from './util/queue.js';
import {
  booleanOption,
  integerOption,
  isPlainObject,
  numberOption,
  objectOption,
  rejectUnknownKeys,
  signalOption,
  stringOption,
} from './util/validate.js';

/** The speech-to-text model ids of the speech API. */
export const STT_MODEL_IDS = ['svc-stt-1', 'svc-stt-1-flash'] as const;

/** How one speech-to-text model id is served. */
export interface SttModelConfig {
  /** A catalog id (`base.en`, `tiny-q5_1`, ...; see `voxmill models list`) or a path to a ggml model file. */
  model: string;
  /** Default beam width for this id: 1 = greedy. svc-stt-1: 5, others: 1. */
  beamSize?: number;
  /** Default CPU threads per transcription. Default: the engine's `threads`. */
  threads?: number;
  /** Transcriptions running at once on this model. Default: the engine's `concurrency`. */
  concurrency?: number;
  /** Transcriptions waiting beyond those; more fail with QueueFullError. Default: the engine's `maxQueue`. */
  maxQueue?: number;
  /**
   * DTW word timestamps (where whisper.cpp has a preset for the model). Fixed when the model loads; costs about
   * 30% more time and a 128 MB scratch buffer per running call, and turns flash attention off.
   * Default: true for svc-stt-1 and custom ids (accuracy), false for svc-stt-1-flash (speed).
   */
  dtw?: boolean;
}

/** Options of {@link createSpeech}. Also the JSON form of the server's configuration file. */
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
  /** VAD for calls that do not say: false (default), true, or settings. Needs a VAD model. */
  vad?: boolean | VadOptions;
  /** Transcriptions running at once per model. Default 1 (whisper already uses several threads per call). */
  concurrency?: number;
  /** Transcriptions waiting per model before QueueFullError. Default 16. */
  maxQueue?: number;
  /** Unload a model after this many ms without work; 0 keeps models loaded. Default 300000 (5 minutes). */
  idleUnloadMs?: number;
  /** CPU threads per transcription. Default min(4, available cores - 1), at least 1. */
  threads?: number;
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
  /** Use a GPU backend when the addon was built with one. Default true. */
  gpu?: boolean;
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
/** Copies of the 16 kHz samples a diarizing call holds: the mix, the two sides, the diarization worker's copy. */
const DIARIZE_SAMPLE_COPIES = 4;

type SpeakerCounts = Pick<DiarizeSettings, 'minSpeakers' | 'maxSpeakers' | 'numSpeakers'>;
/** Installed paths of the models diarization uses, resolved once per call. */
type DiarizationModels = { vad: string; embedding: string | undefined };

/** Options of {@link Speech.diarize}. */
export interface DiarizeOptions extends SpeakerCountOptions {
  /** Reject longer audio with AudioTooLongError. Default: the engine's. */
  maxDurationSeconds?: number;
  signal?: AbortSignal;
}

/** Who spoke when. */
export interface Diarization {
  /** Speaker turns in time order; `speaker_1`, `speaker_2`, ... numbered by first appearance. */
  turns: SpeakerTurn[];
  /** The speakers found, in order of first appearance. */
  speakers: string[];
  /** Audio length in seconds. */
  duration: number;
  /**
   * How speakers were told apart: `channels` (two-channel audio, one speaker per channel), `features` (built-in
   * MFCC statistics), `embedding` (the configured speaker-embedding model), `tinydiarize` (a tdrz model's turns).
   */
  method: 'channels' | 'features' | 'embedding' | 'tinydiarize';
}

/** A transcription request to the engine: {@link TranscribeOptions} plus the model id. */
export interface SpeechTranscribeOptions extends TranscribeOptions {
  /** A configured model id. Default `svc-stt-1`. */
  model?: string;
}

/** What the engine knows about one model id. */
export interface SttModelStatus {
  id: string;
  /** The model file (resolved; may not exist yet). */
  path: string | undefined;
  /** The catalog id behind it, when it came from the catalog. */
  catalogId: string | undefined;
  installed: boolean;
  loaded: boolean;
  active: number;
  pending: number;
  info: WhisperModelInfo | undefined;
}

interface ResolvedConfig {
  modelsDir: string;
  concurrency: number;
  maxQueue: number;
  idleUnloadMs: number;
  threads: number;
  maxDurationSeconds: number;
  maxInputBytes: number;
  sampleRates: { minSampleRate: number; maxSampleRate: number };
  gpu: boolean;
  vadModel: string | null;
  vad: VadOptions | undefined;
  voiceDirs: string[];
  tts: ResolvedTtsOptions;
  diarization: ResolvedDiarizationConfig;
}

interface ModelSlot {
  id: string;
  spec: string;
  beamSize: number;
  threads: number;
  dtw: boolean;
  queue: WorkQueue;
  model: WhisperModel | undefined;
  loading: Promise<WhisperModel> | undefined;
  idleTimer: NodeJS.Timeout | undefined;
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
  'maxDurationSeconds',
  'maxInputBytes',
  'minSampleRate',
  'maxSampleRate',
  'maxDecodedBytes',
  'gpu',
  'voiceDirs',
  'tts',
  'diarization',
] as const;

function voiceDirsOption(value: unknown): string[] | undefined {
  if (value === undefined) return undefined;
  if (!Array.isArray(value) || value.some((dir) => typeof dir !== 'string' || dir.length === 0)) {
    throw new InvalidOptionTypeError('voiceDirs', 'an array of directory paths', value);
  }
  return value.map((dir: string) => resolve(dir));
}

/** A path when it looks like one; otherwise a catalog id. */
function looksLikePath(spec: string): boolean {
  return isAbsolute(spec) || spec.startsWith('.') || spec.includes('/') || spec.includes('\\') || spec.endsWith('.bin');
}

/** Resolves a catalog id or path to a file path (which may not exist). */
function resolveSpec(spec: string, modelsDir: string): { path: string; catalogId: string | undefined } {
  if (looksLikePath(spec)) return { path: resolve(spec), catalogId: undefined };
  const entry = findCatalogEntry(spec);
  if (!entry) throw new ModelNotFoundError(`"${spec}" is neither a catalog model id nor a path to a model file`);
  return { path: installedPath(entry, modelsDir), catalogId: entry.id };
}

function requireInstalled(id: string, spec: string, modelsDir: string): string {
  const { path, catalogId } = resolveSpec(spec, modelsDir);
  if (existsSync(path)) return path;
  const hint = catalogId ? `; install it with: npx voxmill models pull ${catalogId}` : '';
  throw new ModelNotFoundError(`model ${id} (${spec}) is not installed: ${path} does not exist${hint}`);
}

/**
 * The speech engine. Create one per process with {@link createSpeech} and share it: models load once
 * and are shared by every call.
 */
export class Speech {
  readonly #config: ResolvedConfig;
  readonly #slots = new Map<string, ModelSlot>();
  #tts: TtsEngine | undefined;
  #diarizer: Diarizer | undefined;
  #voiceScanner: VoiceDirectoryScanner | undefined;
  #closed = false;
  #decodedAudio: MemoryBudget;

  /** @internal Use {@link createSpeech}. */
  constructor(options: SpeechOptions = {}) {
    const raw = objectOption('options', options);
    rejectUnknownKeys('options', raw, SPEECH_KEYS);
    const modelsDir = stringOption('modelsDir', raw.modelsDir);
    const vadModel = raw.vadModel === null ? null : stringOption('vadModel', raw.vadModel);
    this.#config = {
      modelsDir: modelsDir ? resolve(modelsDir) : defaultModelsDir(),
      concurrency: integerOption('concurrency', raw.concurrency, 1, 64) ?? 1,
      maxQueue: integerOption('maxQueue', raw.maxQueue, 0, 100_000) ?? 16,
      idleUnloadMs: integerOption('idleUnloadMs', raw.idleUnloadMs, 0, 2 ** 31 - 1) ?? 300_000,
      threads: integerOption('threads', raw.threads, 1, 64) ?? defaultThreads(),
      maxDurationSeconds:
        numberOption('maxDurationSeconds', raw.maxDurationSeconds, 0.001, 1e7) ?? DEFAULT_MAX_DURATION_SECONDS,
      maxInputBytes:
        integerOption('maxInputBytes', raw.maxInputBytes, 1, Number.MAX_SAFE_INTEGER) ?? DEFAULT_MAX_INPUT_BYTES,
      sampleRates: sampleRateRange(raw),
      gpu: booleanOption('gpu', raw.gpu) ?? true,
      vadModel: vadModel === undefined ? (catalogDefaults().vad ?? null) : vadModel,
      vad: normalizeVadOptions('vad', raw.vad),
      voiceDirs: [],
      tts: resolveTtsOptions(raw.tts),
      diarization: resolveDiarizationConfig(raw.diarization),
    };
    this.#config.voiceDirs = voiceDirsOption(raw.voiceDirs) ?? [this.#config.modelsDir];
    this.#decodedAudio = new MemoryBudget(
      'decoded audio',
      'maxDecodedBytes',
      integerOption('maxDecodedBytes', raw.maxDecodedBytes, 1024 * 1024, Number.MAX_SAFE_INTEGER) ??
        DEFAULT_MAX_DECODED_BYTES,
    );
    const models = objectOption('models', raw.models);
    const defaults = catalogDefaults();
    for (const id of STT_MODEL_IDS) {
      if (models[id] === undefined && defaults[id] !== undefined) this.#addSlot(id, defaults[id]);
    }
    for (const [id, value] of Object.entries(models)) this.#addSlot(id, value);
  }

  #addSlot(id: string, value: unknown): void {
    const param = `models.${id}`;
    if (typeof value !== 'string' && !isPlainObject(value)) {
      throw new InvalidOptionTypeError(param, 'a catalog id, a file path or { model, ... }', value);
    }
    const config: Record<string, unknown> = typeof value === 'string' ? { model: value } : value;
    rejectUnknownKeys(param, config, ['model', 'beamSize', 'threads', 'concurrency', 'maxQueue', 'dtw']);
    const spec = stringOption(`${param}.model`, config.model);
    if (spec === undefined || spec === '') {
      throw new InvalidOptionTypeError(`${param}.model`, 'a catalog id or a file path', config.model);
    }
    const c = this.#config;
    this.#slots.set(id, {
      id,
      spec,
      beamSize: integerOption(`${param}.beamSize`, config.beamSize, 1, 16) ?? (id === 'svc-stt-1' ? 5 : 1),
      threads: integerOption(`${param}.threads`, config.threads, 1, 64) ?? c.threads,
      dtw: booleanOption(`${param}.dtw`, config.dtw) ?? id !== 'svc-stt-1-flash',
      queue: new WorkQueue(`model ${id}`, {
        concurrency: integerOption(`${param}.concurrency`, config.concurrency, 1, 64) ?? c.concurrency,
        maxQueue: integerOption(`${param}.maxQueue`, config.maxQueue, 0, 100_000) ?? c.maxQueue,
      }),
      model: undefined,
      loading: undefined,
      idleTimer: undefined,
    });
  }

  #slot(id: unknown): ModelSlot {
    if (this.#closed) throw new ClosedError();
    if (typeof id !== 'string') throw new InvalidOptionTypeError('model', 'a string', id);
    const slot = this.#slots.get(id);
    if (!slot) {
      throw new ModelNotFoundError(`unknown model "${id}"; configured: ${[...this.#slots.keys()].join(', ')}`);
    }
    return slot;
  }

  /** The configured speech-to-text model ids. */
  get modelIds(): string[] {
    return [...this.#slots.keys()];
  }

  /** Where catalog models are looked up. */
  get modelsDir(): string {
    return this.#config.modelsDir;
  }

  /** The state of every configured model id. */
  status(): SttModelStatus[] {
    return [...this.#slots.values()].map((slot) => {
      let path: string | undefined;
      let catalogId: string | undefined;
      try {
        ({ path, catalogId } = resolveSpec(slot.spec, this.#config.modelsDir));
      } catch {
        // An unknown catalog id shows as not installed.
      }
      return {
        id: slot.id,
        path,
        catalogId,
        installed: path !== undefined && existsSync(path),
        loaded: slot.model?.loaded === true,
        active: slot.queue.active,
        pending: slot.queue.pending,
        info: slot.model?.info,
      };
    });
  }

  #load(slot: ModelSlot): Promise<WhisperModel> {
    if (slot.model?.loaded) return Promise.resolve(slot.model);
    if (!slot.loading) {
      const c = this.#config;
      slot.loading = (async () => {
        const path = requireInstalled(slot.id, slot.spec, c.modelsDir);
        return WhisperModel.load(path, { gpu: c.gpu, dtw: slot.dtw });
      })().then(
        (model) => {
          slot.loading = undefined;
          if (this.#closed) {
            model.dispose();
            throw new ClosedError();
          }
          slot.model = model;
          return model;
        },
        (error: unknown) => {
          // A failed load is not cached: the next call tries again (the file may have been installed since).
          slot.loading = undefined;
          throw error;
        },
      );
    }
    return slot.loading;
  }

  /** Loads a model now instead of on its first transcription. Resolves to its facts. */
  async loadModel(id: string, options: { signal?: AbortSignal } = {}): Promise<WhisperModelInfo> {
    const slot = this.#slot(id);
    const model = await untilAborted(this.#load(slot), options.signal);
    this.#scheduleUnload(slot);
    return model.info;
  }

  /** Unloads a model now; running transcriptions finish first. It loads again when next used. */
  unloadModel(id: string): void {
    const slot = this.#slot(id);
    clearTimeout(slot.idleTimer);
    slot.model?.dispose();
    slot.model = undefined;
  }

  #scheduleUnload(slot: ModelSlot): void {
    clearTimeout(slot.idleTimer);
    slot.idleTimer = undefined;
    const ms = this.#config.idleUnloadMs;
    if (ms === 0 || slot.queue.active > 0 || slot.queue.pending > 0 || !slot.model) return;
    slot.idleTimer = setTimeout(() => {
      slot.idleTimer = undefined;
      if (slot.queue.active === 0 && slot.queue.pending === 0) {
        slot.model?.dispose();
        slot.model = undefined;
      }
    }, ms);
    // An idle model must not keep the process alive.
    slot.idleTimer.unref();
  }

  /**
   * Transcribes audio: bytes in any supported format, a file path, a readable stream, or 16 kHz mono
   * Float32Array PCM. The result follows the speech API (section 4.2): `text`, `language` and `duration`
   * always; `words` when `timestamps` is `word`; `segments` when `timestamps` is `segment` (the default)
   * or `diarize` is true.
   * @throws InvalidOptionTypeError / InvalidOptionValueError, ModelNotFoundError, QueueFullError,
   *   AudioDecodeError, AudioTooLongError, ModelLoadError, TranscriptionError; the signal's reason when aborted.
   */
  async transcribe(input: AudioInput, options: SpeechTranscribeOptions = {}): Promise<Transcription> {
    const raw = objectOption('options', options);
    const slot = this.#slot(raw.model ?? 'svc-stt-1');
    const c = this.#config;
    const normalized = normalizeTranscribeOptions(raw, { beamSize: slot.beamSize, threads: slot.threads });
    if (normalized.maxDurationSeconds !== undefined && normalized.maxDurationSeconds > c.maxDurationSeconds) {
      normalized.maxDurationSeconds = c.maxDurationSeconds;
    }
    // A call that says nothing about VAD gets the engine's default.
    if (raw.vad === undefined && c.vad) normalized.vad = c.vad;
    const vadModelPath =
      normalized.vad && normalized.vad.model === undefined && c.vadModel !== null
        ? requireInstalled('vad', c.vadModel, c.modelsDir)
        : undefined;
    const vad = nativeVadParams(normalized.vad, vadModelPath);
    const { signal } = normalized;
    // Fail before decoding when the model file is missing (the error says how to install it).
    if (!slot.model?.loaded) requireInstalled(slot.id, slot.spec, c.modelsDir);
    const diarizationModels = normalized.diarize ? this.#diarizationModels() : undefined;

    // Take a place first (fails fast when full), then decode while earlier jobs still run.
    const lease = slot.queue.admit();
    clearTimeout(slot.idleTimer);
    // An aborted call answers at once, but its slot stays taken until whisper has really stopped.
    let nativeWork: Promise<void> | undefined;
    let stopDiarizing: (() => void) | undefined;
    const release = () => {
      lease.release();
      this.#scheduleUnload(slot);
    };
    let releaseAudio: (() => void) | undefined;
    try {
      const copies = normalized.diarize ? DIARIZE_SAMPLE_COPIES : 1;
      const maxDurationSeconds = this.#decodeLimit(normalized.maxDurationSeconds ?? c.maxDurationSeconds, copies);
      const audio = await decodeAudio(input, {
        maxDurationSeconds,
        maxInputBytes: c.maxInputBytes,
        ...c.sampleRates,
        ...(normalized.diarize ? { channels: 'stereo' as const } : {}),
        ...(signal ? { signal } : {}),
      });
      releaseAudio = this.#decodedAudio.take(audio.samples.byteLength * copies, maxDurationSeconds);
      const counts = normalized.speakers;
      const tinydiarize = normalized.params.tinydiarize === true;
      // Speakers are found on their own worker thread while whisper transcribes; if the transcription fails, the
      // diarization is cancelled with it.
      const diarizing = new AbortController();
      const onAbort = () => diarizing.abort(signal?.reason);
      signal?.addEventListener('abort', onAbort, { once: true });
      stopDiarizing = () => {
        signal?.removeEventListener('abort', onAbort);
        diarizing.abort(new Error('the transcription ended'));
      };
      const early =
        counts && diarizationModels && !tinydiarize
          ? this.#diarizeDecoded(audio, counts, diarizationModels, diarizing.signal)
          : undefined;
      early?.catch(() => undefined); // awaited below; a transcription failure must not leave it unhandled
      await lease.acquire(signal);
      const model = await untilAborted(this.#load(slot), signal);
      const transcription = await model.transcribeDecoded(audio, normalized, vad, (settled) => {
        nativeWork = settled;
      });
      if (counts && diarizationModels) {
        const diarization =
          early ?? this.#diarizeTinydiarize(audio, transcription, counts, diarizationModels, diarizing.signal);
        attachSpeakers(transcription, transcription.words ?? [], (await diarization).turns);
        if (normalized.timestamps !== 'word') delete transcription.words;
      }
      return transcription;
    } finally {
      stopDiarizing?.();
      const done = () => {
        releaseAudio?.();
        release();
      };
      if (nativeWork) void nativeWork.then(done);
      else done();
    }
  }

  /**
   * Who spoke when, without transcribing: speech regions from the Silero VAD, then two-channel energy, a
   * speaker-embedding model or built-in spectral features with clustering (see {@link Diarization.method}).
   * @throws ModelNotFoundError (no VAD model installed), AudioDecodeError, AudioTooLongError, QueueFullError,
   *   DiarizationError; the signal's reason when aborted.
   */
  async diarize(input: AudioInput, options: DiarizeOptions = {}): Promise<Diarization> {
    if (this.#closed) throw new ClosedError();
    const raw = objectOption('options', options);
    rejectUnknownKeys('options', raw, [...SPEAKER_COUNT_KEYS, 'maxDurationSeconds', 'signal']);
    const counts = speakerCounts(raw);
    const signal = signalOption('signal', raw.signal);
    const c = this.#config;
    const maxDurationSeconds = this.#decodeLimit(
      Math.min(
        numberOption('maxDurationSeconds', raw.maxDurationSeconds, 0.001, 1e7) ?? c.maxDurationSeconds,
        c.maxDurationSeconds,
      ),
      DIARIZE_SAMPLE_COPIES,
    );
    const models = this.#diarizationModels();
    const audio = await decodeAudio(input, {
      maxDurationSeconds,
      maxInputBytes: c.maxInputBytes,
      ...c.sampleRates,
      channels: 'stereo',
      ...(signal ? { signal } : {}),
    });
    const releaseAudio = this.#decodedAudio.take(audio.samples.byteLength * DIARIZE_SAMPLE_COPIES, maxDurationSeconds);
    try {
      return await this.#diarizeDecoded(audio, counts, models, signal);
    } finally {
      releaseAudio();
    }
  }

  /**
   * The longest audio a call may decode: its own limit, and no more than the decoded-audio budget can ever hold,
   * so an oversized file stops decoding at the budget instead of being decoded whole and then refused.
   */
  #decodeLimit(maxDurationSeconds: number, copies: number): number {
    const budgetSeconds =
      this.#decodedAudio.limitBytes / (copies * WHISPER_SAMPLE_RATE * Float32Array.BYTES_PER_ELEMENT);
    return Math.min(maxDurationSeconds, budgetSeconds);
  }

  /** The VAD model and (when configured) the speaker-embedding model, as installed paths. */
  #diarizationModels(): DiarizationModels {
    const c = this.#config;
    if (c.vadModel === null) {
      throw new ModelNotFoundError('diarization needs the Silero VAD model, but vadModel is null');
    }
    const embedding = c.diarization.embeddingModel;
    return {
      vad: requireInstalled('vad', c.vadModel, c.modelsDir),
      embedding:
        embedding === null ? undefined : requireInstalled('diarization.embeddingModel', embedding, c.modelsDir),
    };
  }

  #diarizerWorker(): Diarizer {
    if (this.#closed) throw new ClosedError();
    const { maxQueue, intraOpThreads } = this.#config.diarization;
    this.#diarizer ??= new Diarizer({ maxQueue, intraOpThreads });
    return this.#diarizer;
  }

  async #diarizeDecoded(
    audio: DecodedAudio,
    counts: SpeakerCounts,
    models: DiarizationModels,
    signal: AbortSignal | undefined,
  ): Promise<Diarization> {
    const config = this.#config.diarization;
    const regions = await detectSpeechRegionsInPlace(audio.samples, {
      model: models.vad,
      ...(signal ? { signal } : {}),
    });
    let turns: SpeakerTurn[];
    let method: Diarization['method'];
    const stereo = audio.channels;
    if (stereo && config.channels === 'auto' && (await channelsDiffer(stereo.left, stereo.right, regions))) {
      turns = await turnsByChannel(stereo.left, stereo.right, regions, config.base.minTurnSeconds);
      method = 'channels';
    } else {
      turns =
        regions.length === 0
          ? []
          : await this.#diarizerWorker().run(
              audio.samples,
              regions,
              { ...config.base, ...counts },
              models.embedding,
              signal,
            );
      method = models.embedding ? 'embedding' : 'features';
    }
    return { turns, speakers: [...new Set(turns.map((t) => t.speaker))], duration: audio.duration, method };
  }

  /**
   * tinydiarize models mark speaker changes between segments; the stretches between marks are the turns, and
   * clustering their features (one vector per stretch) tells whether two stretches are the same speaker.
   */
  async #diarizeTinydiarize(
    audio: DecodedAudio,
    transcription: Transcription,
    counts: SpeakerCounts,
    models: DiarizationModels,
    signal: AbortSignal | undefined,
  ): Promise<Diarization> {
    const stretches = turnStretches(transcription.segments ?? []);
    if (stretches.length === 0) return this.#diarizeDecoded(audio, counts, models, signal);
    const base = this.#config.diarization.base;
    const turns = await this.#diarizerWorker().run(
      audio.samples,
      stretches,
      // One vector per stretch (a window longer than any stretch), and no minimum speech per speaker.
      { ...base, ...counts, windowSeconds: Number.MAX_SAFE_INTEGER, minSpeakerSeconds: 0, minTurnSeconds: 0 },
      models.embedding,
      signal,
    );
    return {
      turns,
      speakers: [...new Set(turns.map((t) => t.speaker))],
      duration: audio.duration,
      method: 'tinydiarize',
    };
  }

  /** The voice scanner, made on first use (it caches configs by mtime). */
  #voices(): VoiceDirectoryScanner {
    this.#voiceScanner ??= new VoiceDirectoryScanner(this.#config.voiceDirs);
    return this.#voiceScanner;
  }

  /** The text-to-speech engine, made on first use: speech-to-text users never start its workers. */
  #ttsEngine(): TtsEngine {
    if (this.#closed) throw new ClosedError();
    this.#tts ??= new TtsEngine({
      ...this.#config.tts,
      size: this.#config.tts.workers,
      scanner: this.#voices(),
    });
    return this.#tts;
  }

  /**
   * The installed voices (spec section 2): one per single-speaker voice, one per speaker of a multi-speaker voice
   * (`<voice>#<speaker>`). Reads configs only; a voice's quality variants are one voice (see `synthesize`'s model).
   */
  async listVoices(options: ListVoicesOptions = {}): Promise<Voice[]> {
    if (this.#closed) throw new ClosedError();
    const raw = objectOption('options', options);
    rejectUnknownKeys('options', raw, ['includeUninstalled']);
    const includeUninstalled = booleanOption('includeUninstalled', raw.includeUninstalled) ?? false;
    const { variants } = await this.#voices().scan();
    return voicesOf(includeUninstalled ? variants : variants.filter((variant) => variant.installed), (voiceId) =>
      catalogVoice(voiceId),
    );
  }

  /** A {@link VoiceConfigError} for every voice file in the voice directories that cannot be used, naming it. */
  async voiceProblems(): Promise<VoiceConfigError[]> {
    return [...(await this.#voices().scan()).problems];
  }

  /**
   * Speaks text. Resolves, once the request is valid, the voice found and a place in the queue taken, to a
   * byte stream of audio in the requested format that fills sentence by sentence; destroy it (or abort the
   * signal) to stop synthesis. `contentType`, `sampleRate` and `format` are on the stream.
   * @throws InvalidOptionTypeError / InvalidOptionValueError (naming `input`, `voice`, `speed`, `format`,
   *   `sampleRate` or `model`), VoiceNotFoundError, QueueFullError; the stream emits SynthesisError or
   *   AudioEncodeError if synthesis fails midway.
   */
  async synthesize(options: SynthesizeOptions): Promise<SpeechStream> {
    return this.#ttsEngine().synthesize(options);
  }

  /** Like {@link Speech.synthesize}, resolving to the whole audio in one Buffer with final headers. */
  async synthesizeToBuffer(options: SynthesizeOptions): Promise<SpeechAudio> {
    return this.#ttsEngine().synthesizeToBuffer(options);
  }

  /** Text-to-speech workers and queue. */
  ttsStatus(): TtsStatus {
    return this.#tts?.status() ?? { workers: 0, active: 0, pending: 0, replacedWorkers: 0 };
  }

  /** Stops accepting work and unloads every model (running transcriptions finish first). Idempotent. */
  async close(): Promise<void> {
    this.#closed = true;
    await Promise.all([this.#tts?.close(), this.#diarizer?.close()]);
    for (const slot of this.#slots.values()) {
      clearTimeout(slot.idleTimer);
      slot.model?.dispose();
      slot.model = undefined;
    }
  }
}

/**
 * Creates the speech engine. Nothing is loaded until first use (or {@link Speech.loadModel}).
 * @example
 * const speech = createSpeech({ models: { 'svc-stt-1': 'base.en' } });
 * const { text } = await speech.transcribe('meeting.m4a', { language: 'en' });
 */
export function createSpeech(options: SpeechOptions = {}): Speech {
  return new Speech(options);
}
