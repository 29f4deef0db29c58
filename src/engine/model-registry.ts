// The speech-to-text models of one engine, by configured id: each loads lazily and once (concurrent callers share
// the load; a failed load is retried by the next call), runs its work through its own bounded queue, and unloads
// after sitting idle. It knows nothing of audio or transcription; the transcribe flow asks it for a slot.
import type { DecodedAudio } from '../audio/decode.js';
import { ClosedError, InvalidOptionTypeError, ModelNotFoundError } from '../errors.js';
import type { NativeVadParams } from '../native.js';
import type { NormalizedTranscribeOptions } from '../stt/request.js';
import type { Transcription } from '../stt/types.js';
import type { WhisperModelInfo } from '../stt/whisper-model.js';
import type { LiveThreadCount } from '../util/cpu-budget.js';
import { WorkQueue } from '../util/queue.js';
import type { ResolvedSttModel } from './config.js';
import type { ModelLocator } from './model-locator.js';

/** What the engine needs of a loaded speech-to-text model (a `WhisperModel`, or a fake in unit tests). */
export interface SttModel {
  /** False once disposed. */
  readonly loaded: boolean;
  readonly info: WhisperModelInfo;
  /** `track` receives a promise that settles when the native work has really stopped (after an abort, too). */
  transcribeDecoded(
    audio: DecodedAudio,
    options: NormalizedTranscribeOptions,
    vad: NativeVadParams | undefined,
    track?: (settled: Promise<void>) => void,
    /** The call's threads as the CPU budget changes them while it runs. */
    threads?: LiveThreadCount,
    /** A Silero VAD model the skip guard may measure speech with when the call runs without VAD. */
    speechModel?: string,
  ): Promise<Transcription>;
  /** Releases the weights once running calls finish. */
  dispose(): void;
}

/** Loads a model file (`WhisperModel.load`, or a fake). */
export type SttModelLoader = (
  path: string,
  options: {
    gpu: boolean;
    gpuDevice: number;
    dtw: boolean;
    decoderPrecision: 'int8' | 'full';
    greedyInt8Vocabulary: boolean;
  },
) => Promise<SttModel>;

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
  /** Seconds the last load of the model took (file read and backend set-up); undefined until it loaded once. */
  loadSeconds: number | undefined;
}

/** One configured id: its settings, its queue, and its model while loaded. */
export class ModelSlot {
  readonly queue: WorkQueue;
  model: SttModel | undefined;
  loading: Promise<SttModel> | undefined;
  loadSeconds: number | undefined;
  idleTimer: NodeJS.Timeout | undefined;

  constructor(readonly config: ResolvedSttModel) {
    this.queue = new WorkQueue(`model ${config.id}`, {
      concurrency: config.concurrency,
      maxQueue: config.maxQueue,
    });
  }

  get id(): string {
    return this.config.id;
  }
}

export interface ModelRegistryOptions {
  models: readonly ResolvedSttModel[];
  locator: ModelLocator;
  load: SttModelLoader;
  gpu: boolean;
  gpuDevice: number;
  /** Unload after this many ms without work; 0 never unloads. */
  idleUnloadMs: number;
}

export class ModelRegistry {
  readonly #slots = new Map<string, ModelSlot>();
  readonly #options: ModelRegistryOptions;
  #closed = false;

  constructor(options: ModelRegistryOptions) {
    this.#options = options;
    for (const config of options.models) this.#slots.set(config.id, new ModelSlot(config));
  }

  /** The configured ids, in configuration order. */
  get ids(): string[] {
    return [...this.#slots.keys()];
  }

  /**
   * The slot of a configured id.
   * @throws ClosedError after close(); InvalidOptionTypeError (`model` not a string); ModelNotFoundError (unknown id).
   */
  slot(id: unknown): ModelSlot {
    if (this.#closed) throw new ClosedError();
    if (typeof id !== 'string') throw new InvalidOptionTypeError('model', 'a string', id);
    const slot = this.#slots.get(id);
    if (!slot) throw new ModelNotFoundError(`unknown model "${id}"; configured: ${this.ids.join(', ')}`);
    return slot;
  }

  /** Throws ModelNotFoundError (saying how to install it) unless the slot's model is loaded or installed. */
  requireAvailable(slot: ModelSlot): void {
    if (!slot.model?.loaded) this.#options.locator.requireInstalled(slot.id, slot.config.spec, 'whisper');
  }

  /** The slot's model, loading it once for all concurrent callers. */
  load(slot: ModelSlot): Promise<SttModel> {
    if (slot.model?.loaded) return Promise.resolve(slot.model);
    if (!slot.loading) {
      const { locator, load, gpu, gpuDevice } = this.#options;
      slot.loading = (async () => {
        const path = locator.requireInstalled(slot.id, slot.config.spec, 'whisper');
        const started = performance.now();
        const model = await load(path, {
          gpu,
          gpuDevice,
          dtw: slot.config.dtw,
          decoderPrecision: slot.config.decoderPrecision,
          greedyInt8Vocabulary: slot.config.greedyInt8Vocabulary,
        });
        slot.loadSeconds = (performance.now() - started) / 1000;
        return model;
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

  /** Unloads now; running work finishes first (the model disposes once its calls end). */
  unload(slot: ModelSlot): void {
    clearTimeout(slot.idleTimer);
    slot.idleTimer = undefined;
    slot.model?.dispose();
    slot.model = undefined;
  }

  /** Work is about to start on the slot: it must not unload meanwhile. */
  keepLoaded(slot: ModelSlot): void {
    clearTimeout(slot.idleTimer);
    slot.idleTimer = undefined;
  }

  /** Starts the idle countdown when the slot has a model and no work. */
  scheduleUnload(slot: ModelSlot): void {
    this.keepLoaded(slot);
    const ms = this.#options.idleUnloadMs;
    if (ms === 0 || !slot.model || !idle(slot)) return;
    slot.idleTimer = setTimeout(() => {
      slot.idleTimer = undefined;
      if (idle(slot)) this.unload(slot);
    }, ms);
    // An idle model must not keep the process alive.
    slot.idleTimer.unref();
  }

  /** The state of every configured id. */
  status(): SttModelStatus[] {
    const { locator } = this.#options;
    return [...this.#slots.values()].map((slot) => {
      let path: string | undefined;
      let catalogId: string | undefined;
      try {
        ({ path, catalogId } = locator.locate(slot.config.spec));
      } catch {
        // An unknown catalog id shows as not installed.
      }
      return {
        id: slot.id,
        path,
        catalogId,
        installed: path !== undefined && locator.isInstalled(slot.config.spec),
        loaded: slot.model?.loaded === true,
        active: slot.queue.active,
        pending: slot.queue.pending,
        info: slot.model?.info,
        loadSeconds: slot.loadSeconds,
      };
    });
  }

  /** Refuses further work and unloads every model (running calls finish first). */
  close(): void {
    this.#closed = true;
    for (const slot of this.#slots.values()) this.unload(slot);
  }
}

function idle(slot: ModelSlot): boolean {
  return slot.queue.active === 0 && slot.queue.pending === 0;
}
