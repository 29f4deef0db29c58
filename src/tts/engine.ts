// Text-to-speech: resolves a voice, validates a request, runs it sentence by sentence (espeak-ng and the voice's
// ONNX model in the addon) and encodes the audio as it arrives. The first sentence's bytes leave before the second sentence is synthesized.
import { Readable } from 'node:stream';
import { StreamingEncoder } from '../audio/encode.js';
import { contentTypeOf, defaultSampleRate } from '../audio/formats.js';
import { ClosedError, InvalidOptionValueError, SynthesisError, VoiceNotFoundError } from '../errors.js';
import { type TtsModelId, type VoicePrecision, voicePreference } from '../tiers.js';
import { abortReason } from '../util/job.js';
import { LiveSpeech } from './live-speech.js';
import { normalizerFor, type TextNormalizer } from './normalize/normalizers.js';
import { type NormalizedSynthesizeOptions, normalizeLiveSpeechOptions, normalizeSynthesizeOptions } from './request.js';
import { isSsml, parseSsml, type SsmlItem, ssmlError } from './ssml/ssml.js';
import { type ChunkVoice, ssmlChunks } from './ssml/ssml-chunks.js';
import type { SynthChunk, SynthJob, VoiceSettings } from './synth-job.js';
import { type SlotLease, SynthPool, type SynthPoolOptions } from './synth-pool.js';
import { hasSpeakableText, normalizeText, splitIntoChunks } from './text.js';
import type {
  LiveSpeechOptions,
  SpeechAudio,
  SpeechAudioInfo,
  SpeechStream,
  SpokenWord,
  SynthesisProgress,
  SynthesizeOptions,
  TtsStatus,
} from './types.js';
import { type ResolvedVoice, resolveVoice, type VoiceDirectoryScanner, type VoiceVariant } from './voices.js';

/** A voice an SSML document names, resolved. */
interface NamedVoice {
  name: string;
  settings: VoiceSettings;
  normalize: (text: string) => string;
}

export interface TtsEngineConfig extends SynthPoolOptions {
  scanner: VoiceDirectoryScanner;
  readerTimeoutMs: number;
  maxInputChars: number;
  maxChunkChars: number;
  normalizers: Readonly<Record<string, TextNormalizer | null>>;
  /** Each text-to-speech id's precision when a request names none. */
  precision: Readonly<Record<TtsModelId, VoicePrecision>>;
}

interface Prepared {
  info: SpeechAudioInfo;
  job: SynthJob;
  lease: SlotLease;
  signal: AbortSignal | undefined;
}

/** Requests of at most this many characters count as short work for the CPU budget (about 30 s of speech). */
const SHORT_SYNTHESIS_CHARS = 500;

export class TtsEngine {
  readonly #config: TtsEngineConfig;
  readonly #pool: SynthPool;
  /** Streams not yet closed: close() destroys them (a stream nobody reads would not see its synthesis stop). */
  readonly #streams = new Set<Readable>();

  constructor(config: TtsEngineConfig) {
    this.#config = config;
    this.#pool = new SynthPool(config);
  }

  status(): TtsStatus {
    const pool = this.#pool;
    return {
      workers: pool.size,
      active: pool.active,
      pending: pool.pending,
      replacedWorkers: 0,
      voices: pool.loadedVoices,
    };
  }

  /**
   * Validates, resolves the voice and takes a place in the queue (QueueFullError at once when full), then
   * returns the audio stream; synthesis starts right away and runs as far ahead as the lookahead allows.
   */
  async synthesize(options: SynthesizeOptions): Promise<SpeechStream> {
    const prepared = await this.#prepare(options);
    const { info, signal } = prepared;
    const progress: SynthesisProgress = { sentences: 0, seconds: 0 };
    const words: SpokenWord[] = [];
    const holder: { stream?: Readable; started?: boolean } = {};
    const onWords = (sentence: SpokenWord[]) => {
      words.push(...sentence);
      holder.stream?.emit('words', sentence);
    };
    const stream = Readable.from(this.#produce(prepared, false, progress, holder, onWords), {
      objectMode: false,
      highWaterMark: 64 * 1024,
    });
    holder.stream = stream;
    this.#streams.add(stream);
    stream.once('close', () => this.#streams.delete(stream));
    // A stream destroyed before its first read never runs the generator, whose `finally` gives the pool place and the CPU
    // threads back: give them back here instead.
    stream.once('close', () => {
      if (!holder.started) prepared.lease.release();
    });
    if (signal) {
      // Destroy with the signal's own reason (the convention for every voxmill call), not a generic AbortError.
      const onAbort = () => stream.destroy(abortReason(signal) as Error);
      if (signal.aborted) onAbort();
      else signal.addEventListener('abort', onAbort, { once: true });
      stream.once('close', () => signal.removeEventListener('abort', onAbort));
    }
    stream.read(0); // start now: the first sentence is synthesized before anyone reads
    return Object.assign(stream, info, { progress, words });
  }

  /** Synthesizes everything and resolves to one Buffer whose headers are final. */
  async synthesizeToBuffer(options: SynthesizeOptions): Promise<SpeechAudio> {
    const prepared = await this.#prepare(options);
    const chunks: Buffer[] = [];
    const progress: SynthesisProgress = { sentences: 0, seconds: 0 };
    const words: SpokenWord[] = [];
    const onWords = (sentence: SpokenWord[]) => words.push(...sentence);
    for await (const chunk of this.#produce(prepared, true, progress, undefined, onWords)) chunks.push(chunk);
    const audio = { ...prepared.info, audio: Buffer.concat(chunks), duration: progress.seconds };
    return prepared.job.wordTimes ? { ...audio, words } : audio;
  }

  async #prepare(options: SynthesizeOptions): Promise<Prepared> {
    const request = normalizeSynthesizeOptions(options, this.#config.maxInputChars);
    // SSML is read (and refused, naming the place) before the voice is looked up; plain text is cleaned.
    const ssml = isSsml(request.input) ? parseSsml(request.input) : undefined;
    const text = ssml ? '' : normalizeText(request.input);
    if (!ssml && !hasSpeakableText(text)) {
      throw new InvalidOptionValueError('input', 'text with at least one letter or digit to speak', request.input);
    }
    const { info, job, normalize } = await this.#resolve(request);
    let voices: VoiceSettings[] | undefined;
    let chunks: SynthChunk[];
    if (ssml) {
      const named = await this.#namedVoices(request, ssml);
      voices = named.map((voice) => voice.settings);
      const voiceFor = (name: string | undefined): ChunkVoice => {
        const index = name === undefined ? -1 : named.findIndex((voice) => voice.name === name);
        return index < 0
          ? { index: undefined, normalize }
          : { index, normalize: (named[index] as NamedVoice).normalize };
      };
      chunks = ssmlChunks(ssml, voiceFor, this.#config.maxChunkChars);
    } else {
      chunks = splitIntoChunks(normalize(text), this.#config.maxChunkChars);
    }
    if (chunks.length === 0) {
      throw new InvalidOptionValueError(
        'input',
        'SSML with at least one letter, digit or break to speak',
        request.input,
      );
    }
    request.signal?.throwIfAborted();
    // A request of up to SHORT_SYNTHESIS_CHARS (about 30 s of speech) may borrow the CPU budget's extra thread.
    const lease = await this.#pool.acquire(request.signal, [...request.input].length <= SHORT_SYNTHESIS_CHARS);
    return { signal: request.signal, lease, info, job: { ...job, chunks, ...(voices?.length ? { voices } : {}) } };
  }

  /** Each voice an SSML document names with `<voice name>`, resolved like the request's (tier, controls). */
  async #namedVoices(request: NormalizedSynthesizeOptions, items: readonly SsmlItem[]): Promise<NamedVoice[]> {
    const names = new Map<string, number>();
    for (const item of items) {
      if ((item.kind === 'text' || item.kind === 'phonemes') && item.voice && !names.has(item.voice)) {
        names.set(item.voice, item.voiceAt ?? 0);
      }
    }
    if (names.size === 0) return [];
    const { variants } = await this.#config.scanner.scan();
    return [...names].map(([name, at]) => {
      let resolved: ResolvedVoice;
      try {
        resolved = resolveVoice(variants, name, voicePreference(request.model));
      } catch (error) {
        // The document is at fault, at its <voice>: the error names the input and the place, not `voice`.
        if (error instanceof VoiceNotFoundError) {
          throw ssmlError(request.input, `<voice name="${name}">: ${error.message}`, at);
        }
        throw error;
      }
      return { name, ...this.#voiceSettings(request, resolved) };
    });
  }

  /** What synthesis needs of a resolved voice under a request's controls, and its language's normalizer. */
  #voiceSettings(
    request: Omit<NormalizedSynthesizeOptions, 'input'>,
    resolved: ResolvedVoice,
  ): { settings: VoiceSettings; normalize: (text: string) => string } {
    const { config, modelPath } = resolved.variant;
    return {
      settings: {
        modelPath,
        espeakVoice: config.espeakVoice,
        tables: { idMap: [...config.phonemeIdMap], phonemeMap: [...config.phonemeMap] },
        sampleRate: config.sampleRate,
        noiseScale: request.noiseScale ?? config.noiseScale,
        lengthScale: (request.lengthScale ?? config.lengthScale) / request.speed,
        noiseW: request.noiseW ?? config.noiseW,
        sid: resolved.sid,
      },
      normalize:
        (request.normalize ? normalizerFor(config.languageCode, this.#config.normalizers) : undefined) ??
        ((text) => text),
    };
  }

  /**
   * A synthesis that takes its text as it arrives (tokens of a language model): sentences are spoken as soon as they
   * are complete, into one continuous audio stream. Validates and finds the voice now; each sentence then waits for a
   * place in the pool like any request.
   */
  async live(options: LiveSpeechOptions): Promise<LiveSpeech> {
    const request = normalizeLiveSpeechOptions(options);
    const { info, job, normalize } = await this.#resolve(request);
    request.signal?.throwIfAborted();
    return new LiveSpeech({
      info,
      job,
      normalize,
      acquire: (signal) => this.#pool.acquire(signal),
      maxPendingSentences: request.maxPendingSentences,
      maxChunkChars: this.#config.maxChunkChars,
      maxWriteChars: this.#config.maxInputChars,
      readerTimeoutMs: this.#config.readerTimeoutMs,
      signal: request.signal,
    });
  }

  /** The voice a request names and what its audio will be: everything of a job but its text. */
  async #resolve(request: Omit<NormalizedSynthesizeOptions, 'input'>): Promise<{
    info: SpeechAudioInfo;
    job: Omit<SynthJob, 'chunks'>;
    /** The voice language's text normalizer, or the identity (none, or `normalize: false`). */
    normalize: (text: string) => string;
  }> {
    const { variants } = await this.#config.scanner.scan();
    const resolved: ResolvedVoice = resolveVoice(variants, request.voice, voicePreference(request.model));
    const variant: VoiceVariant = resolved.variant;
    const { config } = variant;
    const sampleRate = request.sampleRate ?? defaultSampleRate(request.format, config.sampleRate);
    const { settings, normalize } = this.#voiceSettings(request, resolved);
    return {
      info: {
        format: request.format,
        contentType: contentTypeOf(request.format, sampleRate),
        sampleRate,
        variant: variant.variantId,
        speaker: resolved.sid,
      },
      job: {
        ...settings,
        sentenceSilenceSeconds: request.sentenceSilence ?? config.sentenceSilenceSeconds,
        wordTimes: request.timestamps === 'word',
        normalizeAudio: request.normalizeAudio,
        int8: (request.precision ?? this.#config.precision[request.model]) === 'int8',
      },
      normalize,
    };
  }

  /** Synthesis piped through the encoder. Stopping the iteration cancels the job and frees its place. */
  async *#produce(
    prepared: Prepared,
    whole: boolean,
    progress: SynthesisProgress,
    reader?: { stream?: Readable; started?: boolean },
    onWords?: (words: SpokenWord[]) => void,
  ): AsyncGenerator<Buffer> {
    if (reader) reader.started = true;
    const { lease, info, job, signal } = prepared;
    let encoder: StreamingEncoder | undefined;
    try {
      encoder = new StreamingEncoder({
        format: info.format,
        inputSampleRate: job.sampleRate,
        outputSampleRate: info.sampleRate,
        whole,
      });
      for await (const { samples, words } of lease.run(job, signal)) {
        // Word times are from the start of this sentence's audio; the audio so far puts them in place.
        const offset = progress.seconds;
        if (words && onWords)
          onWords(words.map((w) => ({ word: w.word, start: offset + w.start, end: offset + w.end })));
        progress.sentences++;
        progress.seconds += samples.length / job.sampleRate;
        const bytes = await encoder.encode(samples);
        if (bytes.length > 0) yield* this.#handOver(bytes, reader);
      }
      signal?.throwIfAborted();
      const tail = await encoder.finish();
      if (tail.length > 0) yield tail;
    } catch (error) {
      throw signal?.aborted ? abortReason(signal) : error;
    } finally {
      encoder?.dispose();
      lease.release();
    }
  }

  /**
   * Yields one chunk. The generator stays suspended here only while the stream's buffer is full, that is while
   * nobody reads; past readerTimeoutMs the stream is destroyed, which ends the generator and frees its place.
   */
  async *#handOver(bytes: Buffer, reader: { stream?: Readable } | undefined): AsyncGenerator<Buffer> {
    const ms = this.#config.readerTimeoutMs;
    const timer =
      reader && ms > 0
        ? setTimeout(() => {
            reader.stream?.destroy(
              new SynthesisError(`nothing read from the speech stream for ${ms} ms; synthesis stopped`, {
                code: 'TTS_READER_TIMEOUT',
              }),
            );
          }, ms)
        : undefined;
    timer?.unref();
    try {
      yield bytes;
    } finally {
      clearTimeout(timer);
    }
  }

  async close(): Promise<void> {
    for (const stream of this.#streams) stream.destroy(new ClosedError());
    await this.#pool.close();
  }
}
