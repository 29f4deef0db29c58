// Who spoke when, over audio already decoded: speech regions from the Silero VAD, then the louder channel of
// two-channel audio, or a speaker worker (built-in features or an embedding model) with clustering; and the
// variant for tinydiarize models, whose speaker-change marks give the turns. Owns the speaker worker (made on
// first use). Every failure of the steps it runs is a DiarizationError, whatever the step.
import type { DecodedAudio } from '../audio/decode.js';
import type { SpeechRegion, SpeechRegionOptions } from '../audio/speech-regions.js';
import { ClosedError, DiarizationError, TranscriptionError } from '../errors.js';
import type { Segment } from '../stt/types.js';
import type { OnnxRuntimeChoice } from '../util/onnx-runtime.js';
import { channelsDiffer, turnsByChannel } from './channels.js';
import type { ResolvedDiarizationConfig } from './config.js';
import { turnStretches } from './tinydiarize.js';
import type { SpeakerTurn } from './turn.js';
import type { Diarization, DiarizationMethod, DiarizeSettings, KnownVoice, SpeakerCounts } from './types.js';

/** Installed paths of the models diarization uses, resolved once per call. */
export interface DiarizationModels {
  vad: string;
  embedding: string | undefined;
}

/** What the service needs of a speaker worker pool (`Diarizer`, or a fake in unit tests). */
export interface SpeakerWorker {
  run(
    samples: Float32Array,
    regions: SpeechRegion[],
    settings: DiarizeSettings,
    embeddingModel: string | undefined,
    signal?: AbortSignal,
    knownVoices?: KnownVoice[],
  ): Promise<SpeakerTurn[]>;
  close(): Promise<void>;
}

export interface DiarizationServiceOptions {
  config: ResolvedDiarizationConfig;
  /** Speech regions of 16 kHz mono PCM, which it may overwrite (`detectSpeechRegionsInPlace`, or a fake). */
  detectSpeechRegions: (samples: Float32Array, options: SpeechRegionOptions) => Promise<SpeechRegion[]>;
  /** Makes the speaker worker pool on first use. */
  createSpeakerWorker: (options: {
    maxQueue: number;
    intraOpThreads: number;
    stallTimeoutMs: number;
    onnxRuntime: OnnxRuntimeChoice;
  }) => SpeakerWorker;
  /** Which ONNX Runtime the speaker worker loads (the engine's `onnxRuntime`). */
  onnxRuntime: OnnxRuntimeChoice;
}

export class DiarizationService {
  readonly #options: DiarizationServiceOptions;
  #worker: SpeakerWorker | undefined;
  #closed = false;

  constructor(options: DiarizationServiceOptions) {
    this.#options = options;
  }

  /**
   * Speaker turns of decoded audio (its stereo sides, when it has them, may decide alone unless voices are to be
   * recognized). Speakers whose voice matches one of `knownVoices` take its name.
   */
  async diarize(
    audio: DecodedAudio,
    counts: SpeakerCounts,
    models: DiarizationModels,
    signal: AbortSignal | undefined,
    knownVoices: KnownVoice[] = [],
  ): Promise<Diarization> {
    return inDomain(async () => {
      const { config } = this.#options;
      const regions = await this.#options.detectSpeechRegions(audio.samples, {
        model: models.vad,
        ...(signal ? { signal } : {}),
      });
      const stereo = audio.channels;
      if (
        stereo &&
        knownVoices.length === 0 &&
        config.channels === 'auto' &&
        (await channelsDiffer(stereo.left, stereo.right, regions))
      ) {
        const turns = await turnsByChannel(stereo.left, stereo.right, regions, config.base.minTurnSeconds);
        return diarization(turns, audio, 'channels');
      }
      const turns =
        regions.length === 0
          ? []
          : await this.#speakerWorker().run(
              audio.samples,
              regions,
              { ...config.base, ...counts },
              models.embedding,
              signal,
              knownVoices,
            );
      return diarization(turns, audio, models.embedding ? 'embedding' : 'features');
    });
  }

  /**
   * tinydiarize models mark speaker changes between segments; the stretches between marks are the turns, and
   * clustering their features (one vector per stretch) tells whether two stretches are the same speaker. Without
   * any mark, the regular pipeline decides.
   */
  async diarizeTinydiarize(
    audio: DecodedAudio,
    segments: readonly Segment[],
    counts: SpeakerCounts,
    models: DiarizationModels,
    signal: AbortSignal | undefined,
    knownVoices: KnownVoice[] = [],
  ): Promise<Diarization> {
    const stretches = turnStretches(segments);
    if (stretches.length === 0) return this.diarize(audio, counts, models, signal, knownVoices);
    return inDomain(async () => {
      const { base } = this.#options.config;
      const turns = await this.#speakerWorker().run(
        audio.samples,
        stretches,
        // One vector per stretch (a window longer than any stretch), and no minimum speech per speaker.
        { ...base, ...counts, windowSeconds: Number.MAX_SAFE_INTEGER, minSpeakerSeconds: 0, minTurnSeconds: 0 },
        models.embedding,
        signal,
        knownVoices,
      );
      return diarization(turns, audio, 'tinydiarize');
    });
  }

  /** Where someone speaks in a known speaker's clip (the VAD may overwrite the samples it gets: pass a copy). */
  async speechOfClip(samples: Float32Array, models: DiarizationModels, signal: AbortSignal | undefined) {
    return inDomain(() =>
      this.#options.detectSpeechRegions(samples, { model: models.vad, ...(signal ? { signal } : {}) }),
    );
  }

  #speakerWorker(): SpeakerWorker {
    if (this.#closed) throw new ClosedError();
    const { maxQueue, intraOpThreads, stallTimeoutMs } = this.#options.config;
    const { onnxRuntime } = this.#options;
    this.#worker ??= this.#options.createSpeakerWorker({ maxQueue, intraOpThreads, stallTimeoutMs, onnxRuntime });
    return this.#worker;
  }

  /** Fails queued and running diarizations with ClosedError; the worker exits after its current call. */
  async close(): Promise<void> {
    this.#closed = true;
    await this.#worker?.close();
  }
}

function diarization(turns: SpeakerTurn[], audio: DecodedAudio, method: DiarizationMethod): Diarization {
  return { turns, speakers: [...new Set(turns.map((t) => t.speaker))], duration: audio.duration, method };
}

/**
 * Errors keep their domain: a step that fails with another capability's failure (the VAD's TranscriptionError) is a
 * DiarizationError with the same message and the original as its cause. Everything else passes through unchanged:
 * validation errors, ModelLoadError, QueueFullError, ClosedError and an abort's reason say what the caller must do.
 */
async function inDomain<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    if (error instanceof TranscriptionError) throw new DiarizationError(error.message, { cause: error });
    throw error;
  }
}
