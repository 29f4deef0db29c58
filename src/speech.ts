// createSpeech(): the engine behind the library and the HTTP handler. A facade: it resolves the configuration once,
// composes the model registry, the audio budget and the per-capability services, and hands each call to the flow
// that runs it (src/engine/). It holds no logic of its own beyond "closed" and lazy creation.

import type { AudioInput } from './audio/decode.js';
import type { SpeechDetector } from './audio/speech-detector.js';
import { DiarizationService } from './diarize/service.js';
import type { Diarization, DiarizeOptions } from './diarize/types.js';
import { AudioAdmission } from './engine/audio-admission.js';
import { type ResolvedSpeechConfig, resolveSpeechConfig, type SpeechOptions } from './engine/config.js';
import { defaultDependencies, type SpeechDependencies, type TtsService } from './engine/dependencies.js';
import { diarizeInput } from './engine/diarize-flow.js';
import { liveSpeakerLabels } from './engine/live-speaker-flow.js';
import { ModelLocator } from './engine/model-locator.js';
import { ModelRegistry, type SttModelStatus } from './engine/model-registry.js';
import { transcribeInput } from './engine/transcribe-flow.js';
import { ClosedError, ModelNotFoundError, type VoiceConfigError } from './errors.js';
import { catalogVoice } from './models/catalog.js';
import { type LiveTranscriberOptions, normalizeLiveTranscriberOptions } from './stt/live-options.js';
import { LiveTranscriber } from './stt/live-transcriber.js';
import type { SpeechTranscribeOptions, Transcription } from './stt/types.js';
import type { WhisperModelInfo } from './stt/whisper-model.js';
import { DEFAULT_STT_MODEL } from './tiers.js';
import type { LiveSpeech } from './tts/live-speech.js';
import type {
  ListVoicesOptions,
  LiveSpeechOptions,
  SpeechAudio,
  SpeechStream,
  SynthesizeOptions,
  TtsStatus,
  Voice,
} from './tts/types.js';
import { VoiceDirectoryScanner, voicesOf } from './tts/voices.js';
import { CpuBudget } from './util/cpu-budget.js';
import { untilAborted } from './util/job.js';
import { booleanOption, objectOption, rejectUnknownKeys } from './util/validate.js';

/** One transcription that succeeded, for {@link Speech.onTranscribed}. */
export interface TranscribedEvent {
  /** The model id it ran on. */
  model: string;
  /** Seconds of audio transcribed. */
  audioSeconds: number;
  /** Wall seconds the call took, decoding and waiting for a slot included. */
  seconds: number;
}

/**
 * The speech engine. Create one per process with {@link createSpeech} and share it: models load once
 * and are shared by every call.
 */
export class Speech {
  readonly #config: ResolvedSpeechConfig;
  readonly #dependencies: SpeechDependencies;
  readonly #transcribers = new Set<LiveTranscriber>();
  readonly #locator: ModelLocator;
  readonly #registry: ModelRegistry;
  readonly #admission: AudioAdmission;
  readonly #diarization: DiarizationService;
  /** The threads every transcription, synthesis and diarization computes with, shared. */
  readonly #cpu: CpuBudget;
  #interimsShed = 0;
  #voiceScanner: VoiceDirectoryScanner | undefined;
  readonly #transcribed = new Set<(event: TranscribedEvent) => void>();
  #tts: TtsService | undefined;
  #closed = false;

  /**
   * @internal Use {@link createSpeech}. `dependencies` replaces the engine's building blocks (unit tests pass
   * fakes); it is not part of the public API.
   */
  constructor(options: SpeechOptions = {}, dependencies: Partial<SpeechDependencies> = {}) {
    const config = resolveSpeechConfig(options);
    const deps = { ...defaultDependencies, ...dependencies };
    this.#config = config;
    this.#dependencies = deps;
    this.#cpu = new CpuBudget(config.cpuThreads, config.maxConcurrentRuns);
    this.#locator = new ModelLocator(config.modelsDir, deps.fileExists);
    this.#registry = new ModelRegistry({
      models: config.models,
      locator: this.#locator,
      load: deps.loadSttModel,
      gpu: config.gpu,
      gpuDevice: config.gpuDevice,
      idleUnloadMs: config.idleUnloadMs,
    });
    this.#admission = new AudioAdmission({
      decode: deps.decodeAudio,
      maxDecodedBytes: config.maxDecodedBytes,
      maxInputBytes: config.maxInputBytes,
      sampleRates: config.sampleRates,
    });
    this.#diarization = new DiarizationService({
      config: config.diarization,
      detectSpeechRegions: deps.detectSpeechRegions,
      createSpeakerWorker: deps.createSpeakerWorker,
      cpu: this.#cpu,
    });
  }

  /** The configured speech-to-text model ids. */
  get modelIds(): string[] {
    return this.#registry.ids;
  }

  /** Where catalog models are looked up. */
  get modelsDir(): string {
    return this.#config.modelsDir;
  }

  /**
   * Interim transcripts of live transcriptions skipped since the engine was made, because transcriptions were waiting
   * for CPU threads: under load interims give way so that finals keep their latency.
   */
  get interimsShed(): number {
    return this.#interimsShed;
  }

  /**
   * The CPU budget (`cpuThreads`), the most threads one transcription takes (`threads`, the largest of the models')
   * and the cap on runs at once (`maxConcurrentRuns`, null for none): how many transcriptions can compute at once,
   * which a job worker's default concurrency follows.
   */
  get cpu(): { cpuThreads: number; threads: number; maxConcurrentRuns: number | null } {
    const { cpuThreads, models, maxConcurrentRuns } = this.#config;
    return { cpuThreads, threads: Math.max(1, ...models.map((model) => model.threads)), maxConcurrentRuns };
  }

  /** The state of every configured model id. */
  status(): SttModelStatus[] {
    return this.#registry.status();
  }

  /** Loads a model now instead of on its first transcription. Resolves to its facts. */
  async loadModel(id: string, options: { signal?: AbortSignal } = {}): Promise<WhisperModelInfo> {
    const slot = this.#registry.slot(id);
    const model = await untilAborted(this.#registry.load(slot), options.signal);
    this.#registry.scheduleUnload(slot);
    return model.info;
  }

  /** Unloads a model now; running transcriptions finish first. It loads again when next used. */
  unloadModel(id: string): void {
    this.#registry.unload(this.#registry.slot(id));
  }

  /**
   * Transcribes audio: bytes in any supported format, a file path, a readable stream, or 16 kHz mono
   * Float32Array PCM. The result has `text`, `language` and `duration` always; `words` when `timestamps` is
   * `word`; `segments` when `timestamps` is `segment` (the default) or `diarize` is true.
   * @throws InvalidOptionTypeError / InvalidOptionValueError, ModelNotFoundError, QueueFullError,
   *   AudioDecodeError, AudioTooLongError, ModelLoadError, TranscriptionError, DiarizationError; the signal's
   *   reason when aborted.
   */
  async transcribe(input: AudioInput, options: SpeechTranscribeOptions = {}): Promise<Transcription> {
    const started = performance.now();
    const transcription = await transcribeInput(this.#flowContext(), input, options);
    if (this.#transcribed.size > 0) {
      const event: TranscribedEvent = {
        model: options.model ?? DEFAULT_STT_MODEL,
        audioSeconds: transcription.duration,
        seconds: (performance.now() - started) / 1000,
      };
      for (const listener of this.#transcribed) {
        try {
          listener(event);
        } catch {
          // An observer's failure is not the transcription's.
        }
      }
    }
    return transcription;
  }

  /**
   * Calls `listener` after each transcription that succeeded, with its model, audio length and wall time (what
   * metrics count). Returns the function that stops it.
   */
  onTranscribed(listener: (event: TranscribedEvent) => void): () => void {
    this.#transcribed.add(listener);
    return () => this.#transcribed.delete(listener);
  }

  /**
   * Who spoke when, without transcribing: speech regions from the Silero VAD, then two-channel energy, a
   * speaker-embedding model or built-in spectral features with clustering (see {@link Diarization.method}).
   * @throws ModelNotFoundError (no VAD model installed), AudioDecodeError, AudioTooLongError, QueueFullError,
   *   DiarizationError (also when the VAD fails); the signal's reason when aborted.
   */
  async diarize(input: AudioInput, options: DiarizeOptions = {}): Promise<Diarization> {
    if (this.#closed) throw new ClosedError();
    return diarizeInput(this.#flowContext(), input, options);
  }

  #flowContext() {
    return {
      config: this.#config,
      locator: this.#locator,
      registry: this.#registry,
      admission: this.#admission,
      diarization: this.#diarization,
      cpu: this.#cpu,
    };
  }

  /** The voice scanner, made on first use (it caches configs by mtime). */
  #voices(): VoiceDirectoryScanner {
    this.#voiceScanner ??= new VoiceDirectoryScanner(this.#config.voiceDirs);
    return this.#voiceScanner;
  }

  /** The text-to-speech service, made on first use: speech-to-text users never start its workers. */
  #ttsService(): TtsService {
    if (this.#closed) throw new ClosedError();
    const { tts } = this.#config;
    this.#tts ??= this.#dependencies.createTtsService({
      ...tts,
      size: tts.workers,
      scanner: this.#voices(),
      cpu: this.#cpu,
    });
    return this.#tts;
  }

  /**
   * The installed voices: one per single-speaker voice, one per speaker of a multi-speaker voice
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
    return this.#ttsService().synthesize(options);
  }

  /** Like {@link Speech.synthesize}, resolving to the whole audio in one Buffer with final headers. */
  async synthesizeToBuffer(options: SynthesizeOptions): Promise<SpeechAudio> {
    return this.#ttsService().synthesizeToBuffer(options);
  }

  /**
   * Live transcription of audio that arrives as it is spoken (a microphone, a call): write 16-bit PCM bytes,
   * Int16Array or Float32Array chunks at `sampleRate` to the returned {@link LiveTranscriber}; it emits
   * `speech_started` / `speech_stopped` (Silero VAD run incrementally), `interim` text while an utterance is open
   * and a `final` result per utterance with word times relative to the stream (also through `events()`), and with
   * `diarize` its speakers. Needs the engine's `vadModel` installed (unless `vad: false`: then `commit()` ends each
   * utterance), and for `diarize` a speaker-embedding model.
   * @throws InvalidOptionTypeError / InvalidOptionValueError naming the option (`diarize` when no speaker-embedding
   *   model is configured or installed), ModelNotFoundError (VAD model, `model`, or the configured embedding model),
   *   ClosedError.
   */
  createTranscriber(options: LiveTranscriberOptions = {}): LiveTranscriber {
    if (this.#closed) throw new ClosedError();
    const live = normalizeLiveTranscriberOptions(options);
    live.signal?.throwIfAborted();
    // Before the detector (a native object): a refused `diarize` must leave nothing behind.
    const speakerOf = live.diarize && liveSpeakerLabels(this.#flowContext(), live.diarize);
    let detector: SpeechDetector | undefined;
    if (live.vad) {
      if (this.#config.vadModel === null) {
        throw new ModelNotFoundError('live transcription needs a VAD model: createSpeech({ vadModel }) is null');
      }
      const vadModel = this.#locator.requireInstalled('vad', this.#config.vadModel);
      detector = this.#dependencies.createSpeechDetector({ model: vadModel, ...live.vad });
    }
    const base: SpeechTranscribeOptions = { timestamps: 'word', vad: false };
    if (live.model !== undefined) base.model = live.model;
    if (live.language !== undefined) base.language = live.language;
    if (live.prompt !== undefined) base.prompt = live.prompt;
    const transcriber = new LiveTranscriber({
      detector,
      speakerOf,
      // Interims are replaced within a second: greedy, no fallback, no word times, so they cost a fraction of a final.
      transcribe: (samples, signal, interim) =>
        this.transcribe(
          samples,
          interim ? { ...base, timestamps: 'none', beamSize: 1, temperatureIncrement: 0, signal } : { ...base, signal },
        ),
      sampleRate: live.sampleRate,
      interimIntervalMs: live.interimIntervalMs,
      maxUtteranceSeconds: live.maxUtteranceSeconds,
      maxPendingUtterances: live.maxPendingUtterances,
      signal: live.signal,
      // Interims run on idle threads only: while any work waits, or every thread is taken, they give way.
      shedInterim: () => {
        const { waiting, inUse, threads, runs, maxRuns } = this.#cpu.status();
        return waiting > 0 || inUse >= threads || (maxRuns !== null && runs >= maxRuns);
      },
      onInterimShed: () => {
        this.#interimsShed++;
      },
    });
    // close() ends the live transcriptions too.
    this.#transcribers.add(transcriber);
    transcriber.once('close', () => this.#transcribers.delete(transcriber));
    return transcriber;
  }

  /**
   * Speech from text that arrives in pieces, such as a language model's tokens: write strings to the returned
   * {@link LiveSpeech} and read one continuous audio stream in the format asked for. Each sentence is synthesized as
   * soon as it is complete (a later character confirms where it ends), on the same workers and queue as
   * {@link Speech.synthesize}; `flush()` speaks the unfinished text now, `end()` finishes, `cancel()` stops at once
   * (barge-in). Resolves once the options are valid and the voice found.
   * @throws InvalidOptionTypeError / InvalidOptionValueError (naming `voice`, `speed`, `format`, `sampleRate`,
   *   `model` or `maxPendingSentences`), VoiceNotFoundError, ClosedError.
   */
  async createLiveSpeech(options: LiveSpeechOptions): Promise<LiveSpeech> {
    return this.#ttsService().live(options);
  }

  /** Text-to-speech workers and queue. */
  ttsStatus(): TtsStatus {
    return this.#tts?.status() ?? { workers: 0, active: 0, pending: 0, replacedWorkers: 0, voices: 0 };
  }

  /** Stops accepting work and unloads every model (running transcriptions finish first). Idempotent. */
  async close(): Promise<void> {
    this.#closed = true;
    // Ended without an error (a host that attached no 'error' listener must not crash): their events() iterators end.
    for (const transcriber of this.#transcribers) transcriber.destroy();
    this.#registry.close();
    await Promise.all([this.#tts?.close(), this.#diarization.close()]);
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
