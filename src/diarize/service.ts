// Who spoke when, over audio already decoded: speech regions from the Silero VAD, then the louder channel of
// two-channel audio, or a speaker worker (built-in features or an embedding model) with clustering; and the
// variant for tinydiarize models, whose speaker-change marks give the turns; and the speakers of an utterance for
// live labels. Owns the speaker workers (made on first use: one for files, one for live transcriptions). Every failure of the
// steps it runs is a DiarizationError, whatever the step.
import { type DecodedAudio, WHISPER_SAMPLE_RATE } from '../audio/decode.js';
import type { SpeechRegion, SpeechRegionOptions } from '../audio/speech-regions.js';
import { ClosedError, DiarizationError, TranscriptionError } from '../errors.js';
import type { Segment } from '../stt/types.js';
import { type CpuBudget, SHORT_WORK_SECONDS } from '../util/cpu-budget.js';
import { channelsDiffer, turnsByChannel } from './channels.js';
import type { ResolvedDiarizationConfig } from './config.js';
import { turnStretches } from './tinydiarize.js';
import type { SpeakerTurn } from './turn.js';
import type {
  Diarization,
  DiarizationMethod,
  DiarizeSettings,
  KnownVoice,
  SpeakerCounts,
  SpeakerModels,
  UtteranceSpeakers,
} from './types.js';

/** Installed paths of the models diarization uses, resolved once per call. */
export interface DiarizationModels extends SpeakerModels {
  vad: string;
}

/** What the service needs of a speaker worker pool (`Diarizer`, or a fake in unit tests). */
export interface SpeakerWorker {
  run(
    samples: Float32Array,
    regions: SpeechRegion[],
    settings: DiarizeSettings,
    models: SpeakerModels,
    signal?: AbortSignal,
    knownVoices?: KnownVoice[],
  ): Promise<SpeakerTurn[]>;
  /** Who spoke in one utterance, through an embedding model (`Diarizer.utterance`). */
  utterance(
    samples: Float32Array,
    settings: DiarizeSettings,
    embeddingModel: string,
    signal?: AbortSignal,
  ): Promise<UtteranceSpeakers>;
  close(): Promise<void>;
}

export interface DiarizationServiceOptions {
  config: ResolvedDiarizationConfig;
  /** Speech regions of 16 kHz mono PCM, which it may overwrite (`detectSpeechRegionsInPlace`, or a fake). */
  detectSpeechRegions: (samples: Float32Array, options: SpeechRegionOptions) => Promise<SpeechRegion[]>;
  /** Makes the speaker worker pool on first use. */
  createSpeakerWorker: (options: { maxQueue: number; intraOpThreads: number; stallTimeoutMs: number }) => SpeakerWorker;
  /** The engine's CPU budget: each speaker-worker call holds `intraOpThreads` of it. None: no limit. */
  cpu?: CpuBudget;
}

export class DiarizationService {
  readonly #options: DiarizationServiceOptions;
  #worker: SpeakerWorker | undefined;
  /** Live transcriptions' utterance voices get their own worker: never queued behind an hour-long diarization. */
  #liveWorker: SpeakerWorker | undefined;
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
          : await this.#withCpu(audio.samples.length, signal, () =>
              this.#speakerWorker().run(
                audio.samples,
                regions,
                { ...config.base, ...counts },
                { embedding: models.embedding, segmentation: models.segmentation },
                signal,
                knownVoices,
              ),
            );
      const method = models.embedding ? (models.segmentation ? 'segmentation' : 'embedding') : 'features';
      return diarization(turns, audio, method);
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
      const turns = await this.#withCpu(audio.samples.length, signal, () =>
        this.#speakerWorker().run(
          audio.samples,
          stretches,
          // One vector per stretch (a window longer than any stretch), and no minimum speech per speaker.
          { ...base, ...counts, windowSeconds: Number.MAX_SAFE_INTEGER, minSpeakerSeconds: 0, minTurnSeconds: 0 },
          // The stretches are the turns: no segmentation.
          { embedding: models.embedding, segmentation: undefined },
          signal,
          knownVoices,
        ),
      );
      return diarization(turns, audio, 'tinydiarize');
    });
  }

  /**
   * Who spoke in one utterance of a live transcription: turns with labels local to it and each one's voice (live
   * labels need a model: the built-in features are normalized per recording and cannot compare utterances).
   */
  async utteranceSpeakers(
    samples: Float32Array,
    settings: SpeakerCounts & Partial<DiarizeSettings>,
    embeddingModel: string,
    signal: AbortSignal | undefined,
  ) {
    return inDomain(() => {
      if (this.#closed) throw new ClosedError();
      this.#liveWorker ??= this.#newWorker();
      const worker = this.#liveWorker;
      return this.#withCpu(samples.length, signal, () =>
        worker.utterance(samples, { ...this.#options.config.base, ...settings }, embeddingModel, signal),
      );
    });
  }

  /** Where someone speaks in a known speaker's clip (the VAD may overwrite the samples it gets: pass a copy). */
  async speechOfClip(samples: Float32Array, models: DiarizationModels, signal: AbortSignal | undefined) {
    return inDomain(() =>
      this.#options.detectSpeechRegions(samples, { model: models.vad, ...(signal ? { signal } : {}) }),
    );
  }

  /**
   * Runs a speaker-worker call with its threads taken from the CPU budget (exactly its ONNX session's intra-op
   * threads). Taken before the worker's own queue: a second diarization waiting there holds them too.
   */
  async #withCpu<T>(samples: number, signal: AbortSignal | undefined, work: () => Promise<T>): Promise<T> {
    const grant = await this.#options.cpu?.acquire({
      threads: this.#options.config.intraOpThreads,
      exact: true,
      short: samples <= SHORT_WORK_SECONDS * WHISPER_SAMPLE_RATE,
      ...(signal ? { signal } : {}),
    });
    try {
      return await work();
    } finally {
      grant?.release();
    }
  }

  #speakerWorker(): SpeakerWorker {
    if (this.#closed) throw new ClosedError();
    this.#worker ??= this.#newWorker();
    return this.#worker;
  }

  #newWorker(): SpeakerWorker {
    const { maxQueue, intraOpThreads, stallTimeoutMs } = this.#options.config;
    return this.#options.createSpeakerWorker({ maxQueue, intraOpThreads, stallTimeoutMs });
  }

  /** Fails queued and running diarizations with ClosedError; both workers exit after their current call. */
  async close(): Promise<void> {
    this.#closed = true;
    await Promise.all([this.#worker?.close(), this.#liveWorker?.close()]);
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
