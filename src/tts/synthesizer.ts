// One synthesis job, sentence by sentence, on the main thread: each chunk is phonemized by espeak-ng in the addon,
// its sentences' ids go through the voice's ONNX model in the addon, and each sentence's audio is handed on as soon as
// it exists. Phonemizing and inference are native jobs on libuv's pool, so the event loop only does the cheap parts
// (ids, pauses, word times), a few milliseconds a sentence at most.
//
// Flow control: the job runs at most `lookahead` sentences ahead of its consumer (a slow reader never makes audio
// pile up), and stops at once when the consumer stops or the signal aborts (an ONNX run in flight is cancelled
// between kernels).
import { StreamResampler } from '../audio/resample.js';
import { SynthesisError } from '../errors.js';
import { abortReason } from '../util/job.js';
import { OnnxFailure } from '../util/onnx-model.js';
import { PhonemeIdEncoder } from './phoneme-ids.js';
import { PhonemizerFailure, phonemizeTexts } from './phonemizer.js';
import type { ChunkPart, SynthJob, SynthStats, VoiceSettings } from './synth-job.js';
import type { SpokenWord } from './types.js';
import type { HeldVoice, VoiceSession, VoiceSessions } from './voice-sessions.js';
import { type TextWord, wordOfEachPhoneme, wordsOf } from './word-alignment.js';
import { ChunkWordTimer } from './word-times.js';

/** One sentence's audio at the job's rate, after its share of silence; with its words when the job asked. */
export interface SentenceAudio {
  samples: Float32Array;
  words: SpokenWord[] | undefined;
}

export interface SynthesizerOptions {
  /** Sentences synthesized ahead of the consumer. */
  lookahead: number;
  /** A single ONNX run or phonemizer call taking longer than this fails the job (TTS_WORKER_STALLED). */
  stallTimeoutMs: number;
}

const SPACE = 0x20;
/** Words phonemized alone, per espeak-ng voice (word timings phonemize every word of the text); bounded. */
const MAX_CACHED_WORDS = 20_000;
const wordPhonemes = new Map<string, number[]>();

/** A phonemizer or ONNX failure as the SynthesisError callers expect. */
function synthesisError(error: unknown, modelPath: string): unknown {
  if (error instanceof PhonemizerFailure) {
    return new SynthesisError(error.code === 'NO_VOICE' ? error.message : `phonemizer failed: ${error.message}`, {
      code: 'SYNTHESIS_FAILED',
    });
  }
  if (error instanceof OnnxFailure) {
    return new SynthesisError(`ONNX Runtime failed on ${modelPath}: ${error.message}`, { code: 'SYNTHESIS_FAILED' });
  }
  return error;
}

/**
 * Runs `work` with a signal that aborts with the caller's, or with TTS_WORKER_STALLED after `ms`: a native step that
 * hangs cannot hold the synthesis (and its CPU threads) for ever.
 */
async function withinStall<T>(ms: number, signal: AbortSignal, what: string, work: (s: AbortSignal) => Promise<T>) {
  const stalled = new SynthesisError(`${what} took more than ${ms} ms (tts.stallTimeoutMs); synthesis stopped`, {
    code: 'TTS_WORKER_STALLED',
  });
  const deadline = AbortSignal.timeout(ms);
  const both = AbortSignal.any([signal, deadline]);
  try {
    return await work(both);
  } catch (error) {
    if (deadline.aborted && !signal.aborted) throw stalled;
    throw error;
  }
}

/** Samples at another rate: the whole sentence through the streaming resampler, its tail flushed with silence. */
function resampled(samples: Float32Array, from: number, to: number): Float32Array {
  if (from === to) return samples;
  const resampler = new StreamResampler(from, to);
  const head = resampler.process(samples);
  // The filter lags its input by at most 16 zero crossings at the lower rate; this much silence pushes it all out.
  const tail = resampler.process(new Float32Array(Math.ceil((64 * from) / Math.min(from, to))));
  const length = Math.round((samples.length * to) / from);
  const out = new Float32Array(length);
  out.set(head.subarray(0, length));
  if (head.length < length) out.set(tail.subarray(0, length - head.length), head.length);
  return out;
}

/**
 * piper-tts's normalize_audio: the sentence scaled so its largest sample is full scale; near-silence (a peak under
 * 1e-8) becomes silence. In place: the samples are this synthesis's own copy.
 */
function peakNormalized(samples: Float32Array): Float32Array {
  let peak = 0;
  for (let i = 0; i < samples.length; i++) peak = Math.max(peak, Math.abs(samples[i] as number));
  if (peak < 1e-8) return samples.fill(0);
  const gain = 1 / peak;
  for (let i = 0; i < samples.length; i++) samples[i] = (samples[i] as number) * gain;
  return samples;
}

function withSilenceBefore(samples: Float32Array, silence: number): Float32Array {
  if (silence === 0) return samples;
  const out = new Float32Array(silence + samples.length);
  out.set(samples, silence);
  return out;
}

/** The words of a chunk's parts; an IPA part is one word (its text) with its phonemes given. */
function partWords(parts: readonly ChunkPart[]): TextWord[] {
  return parts.flatMap((part) =>
    'ipa' in part
      ? [{ text: part.text, token: part.text, phonemes: [...part.ipa].map((c) => c.codePointAt(0) as number) }]
      : wordsOf(part.text),
  );
}

/** A bounded queue between the producer (synthesis) and the consumer (the generator's caller). */
class SentenceQueue {
  readonly #items: SentenceAudio[] = [];
  #done = false;
  #error: unknown;
  #wakeConsumer: (() => void) | undefined;
  #wakeProducer: (() => void) | undefined;

  constructor(private readonly capacity: number) {}

  async put(item: SentenceAudio, signal: AbortSignal): Promise<void> {
    while (this.#items.length >= this.capacity && !signal.aborted) {
      await new Promise<void>((resolve) => {
        const wake = () => {
          signal.removeEventListener('abort', wake);
          resolve();
        };
        this.#wakeProducer = wake;
        signal.addEventListener('abort', wake, { once: true });
      });
    }
    signal.throwIfAborted();
    this.#items.push(item);
    this.#wakeConsumer?.();
  }

  end(error?: unknown): void {
    this.#done = true;
    this.#error = error;
    this.#wakeConsumer?.();
  }

  /** The next sentence, or undefined at the end; throws what ended the producer. */
  async take(): Promise<SentenceAudio | undefined> {
    for (;;) {
      const item = this.#items.shift();
      if (item) {
        this.#wakeProducer?.();
        return item;
      }
      if (this.#done) {
        if (this.#error !== undefined) throw this.#error;
        return undefined;
      }
      await new Promise<void>((resolve) => {
        this.#wakeConsumer = resolve;
      });
    }
  }
}

/** The synthesis of one job; see the file comment. */
export class Synthesizer {
  constructor(
    private readonly voices: VoiceSessions,
    private readonly options: SynthesizerOptions,
  ) {}

  /**
   * Yields each sentence's audio; returns the job's counters. Stopping early (return, throw, abort) stops the
   * synthesis before its next step.
   */
  async *run(job: SynthJob, signal?: AbortSignal): AsyncGenerator<SentenceAudio, SynthStats> {
    signal?.throwIfAborted();
    const stop = new AbortController();
    const onAbort = () => stop.abort(abortReason(signal));
    signal?.addEventListener('abort', onAbort, { once: true });
    const queue = new SentenceQueue(this.options.lookahead);
    const stats: SynthStats = {
      sentences: 0,
      phonemeIds: 0,
      samples: 0,
      missingPhonemes: [],
      phonemizeMs: 0,
      inferenceMs: 0,
      sessionLoadMs: 0,
      graphEditMs: 0,
    };
    const producing = this.#produce(job, stats, queue, stop.signal).then(
      () => queue.end(),
      (error: unknown) => queue.end(synthesisError(error, job.modelPath)),
    );
    try {
      for (;;) {
        const sentence = await queue.take();
        if (!sentence) break;
        yield sentence;
      }
      return stats;
    } finally {
      signal?.removeEventListener('abort', onAbort);
      if (!stop.signal.aborted) stop.abort(new SynthesisError('synthesis stopped', { code: 'ABORTED' }));
      // The producer ends at its next step (an ONNX run in flight is cancelled); its voices are released then.
      await producing;
    }
  }

  async #produce(job: SynthJob, stats: SynthStats, queue: SentenceQueue, signal: AbortSignal): Promise<void> {
    const held: HeldVoice[] = [];
    // Each voice's session and id encoder, made when its first chunk comes (the job's own at once).
    const loaded = new Map<VoiceSettings, { session: VoiceSession; encoder: PhonemeIdEncoder }>();
    const voiceOf = async (voice: VoiceSettings) => {
      let entry = loaded.get(voice);
      if (!entry) {
        const voiceHeld = await this.voices.acquire(voice.modelPath, job.wordTimes, job.int8, signal);
        held.push(voiceHeld);
        stats.sessionLoadMs += voiceHeld.loadMs;
        stats.graphEditMs += voiceHeld.graphEditMs;
        entry = { session: voiceHeld.session, encoder: new PhonemeIdEncoder(voice.tables) };
        loaded.set(voice, entry);
      }
      return entry;
    };
    // The first chunk of the job's own voice is phonemized while the voice loads (both native jobs, on libuv's pool):
    // a cold start pays the longer of the two, not their sum.
    const first = job.chunks[0];
    const firstParts =
      typeof first === 'string'
        ? [{ text: first }]
        : first && 'parts' in first && first.voice === undefined
          ? first.parts
          : undefined;
    let early: Promise<number[][]> | undefined;
    if (firstParts) {
      early = this.#phonemizeParts(firstParts, job.espeakVoice, signal);
      // Awaited with the first chunk below; should the voice fail to load first, its failure is the synthesis's.
      early.catch(() => undefined);
    }
    try {
      await voiceOf(job);
      const silence = Math.round(job.sentenceSilenceSeconds * job.sampleRate);
      // The pause before the next sentence: none before the first, and an SSML <break> takes its place.
      let lead = 0;
      for (const chunk of job.chunks) {
        signal.throwIfAborted();
        if (typeof chunk !== 'string' && 'pause' in chunk) {
          const samples = new Float32Array(Math.round(chunk.pause * job.sampleRate));
          stats.sentences++;
          stats.samples += samples.length;
          await queue.put({ samples, words: job.wordTimes ? [] : undefined }, signal);
          lead = 0;
          continue;
        }
        const {
          parts,
          lengthFactor,
          joined,
          voice: other,
        } = typeof chunk === 'string'
          ? { parts: [{ text: chunk }], lengthFactor: 1, joined: false, voice: undefined }
          : chunk;
        if (joined) lead = 0;
        const voice = other === undefined ? job : (job.voices?.[other] ?? job);
        const { session, encoder } = await voiceOf(voice);
        let started = performance.now();
        const sentences = await (early ?? this.#phonemizeParts(parts, voice.espeakVoice, signal));
        early = undefined;
        const encoded = sentences.map((phonemes) => encoder.encodeWithSources(phonemes));
        let timer: ChunkWordTimer | undefined;
        if (job.wordTimes) {
          const words = partWords(parts);
          const alone = await this.#phonemizeWords(words, voice.espeakVoice, signal);
          timer = new ChunkWordTimer(words, wordOfEachPhoneme(sentences, alone));
        }
        stats.phonemizeMs += performance.now() - started;
        const spoken = encoded.map(({ ids }) => !encoder.isEmpty(ids));
        const lastSpoken = spoken.lastIndexOf(true);
        for (let index = 0; index < encoded.length; index++) {
          if (!spoken[index]) continue;
          const { ids, sources } = encoded[index] as { ids: number[]; sources: number[] };
          signal.throwIfAborted();
          started = performance.now();
          const inferred = await this.#infer(session, voice, ids, voice.lengthScale * lengthFactor, signal);
          const { frames } = inferred;
          const audio = job.normalizeAudio ? peakNormalized(inferred.audio) : inferred.audio;
          stats.inferenceMs += performance.now() - started;
          // The pause goes before every sentence but the first, so the audio neither starts nor ends with it and each
          // sentence leaves as soon as it exists. Another voice's audio is brought to the job's rate first.
          const samples = withSilenceBefore(resampled(audio, voice.sampleRate, job.sampleRate), lead);
          let words: SpokenWord[] | undefined;
          if (timer && frames) {
            const shift = lead / job.sampleRate;
            words = timer
              .sentence({
                index,
                sources,
                frames,
                samples: audio.length,
                leadSamples: 0,
                sampleRate: voice.sampleRate,
                last: index === lastSpoken,
              })
              .map((word) => ({ word: word.word, start: word.start + shift, end: word.end + shift }));
          }
          lead = silence;
          stats.sentences++;
          stats.phonemeIds += ids.length;
          stats.samples += samples.length;
          await queue.put({ samples, words }, signal);
        }
      }
      const missing = new Map<number, number>();
      for (const { encoder } of loaded.values()) {
        for (const [phoneme, count] of encoder.missing) missing.set(phoneme, (missing.get(phoneme) ?? 0) + count);
      }
      stats.missingPhonemes = [...missing];
    } finally {
      for (const voice of held) voice.release();
    }
  }

  /**
   * The sentences of a chunk made of parts: each text part phonemized, IPA parts taken as they are, joined into one
   * stream of sentences (a part goes on the sentence the previous part ended in, after a space).
   */
  async #phonemizeParts(parts: readonly ChunkPart[], voice: string, signal: AbortSignal): Promise<number[][]> {
    const texts = parts.flatMap((part) => ('ipa' in part ? [] : [part.text]));
    const phonemized = await withinStall(this.options.stallTimeoutMs, signal, 'phonemizing', (s) =>
      phonemizeTexts(texts, voice, s),
    );
    const sentences: number[][] = [];
    let next = 0;
    for (const part of parts) {
      const pieces =
        'ipa' in part ? [[...part.ipa].map((c) => c.codePointAt(0) as number)] : (phonemized[next++] as number[][]);
      const [first, ...rest] = pieces;
      const last = sentences.at(-1);
      if (first && last) last.push(SPACE, ...first);
      else if (first) sentences.push(first);
      sentences.push(...rest);
    }
    return sentences;
  }

  /** Each word phonemized alone (word timings), from the cache when it has been before; one native call for the rest. */
  async #phonemizeWords(words: readonly TextWord[], voice: string, signal: AbortSignal): Promise<number[][]> {
    const key = (word: string) => `${voice}\u0000${word}`;
    const wanted = [
      ...new Set(words.filter((w) => !w.phonemes && !wordPhonemes.has(key(w.token))).map((w) => w.token)),
    ];
    if (wanted.length > 0) {
      const phonemized = await withinStall(this.options.stallTimeoutMs, signal, 'phonemizing', (s) =>
        phonemizeTexts(wanted, voice, s),
      );
      if (wordPhonemes.size + wanted.length > MAX_CACHED_WORDS) wordPhonemes.clear();
      wanted.forEach((word, i) => {
        wordPhonemes.set(key(word), (phonemized[i] as number[][]).flat());
      });
    }
    return words.map((word) => word.phonemes ?? wordPhonemes.get(key(word.token)) ?? []);
  }

  /** The sentence's audio, and each id's frames when the session has the duration output. */
  async #infer(
    session: VoiceSession,
    voice: VoiceSettings,
    ids: number[],
    lengthScale: number,
    signal: AbortSignal,
  ): Promise<{ audio: Float32Array; frames: Float32Array | undefined }> {
    const { model, durations } = session;
    const feeds = [
      { name: 'input', type: 'int64', dims: [1, ids.length], data: BigInt64Array.from(ids, BigInt) },
      { name: 'input_lengths', type: 'int64', dims: [1], data: BigInt64Array.of(BigInt(ids.length)) },
      {
        name: 'scales',
        type: 'float32',
        dims: [3],
        data: Float32Array.of(voice.noiseScale, lengthScale, voice.noiseW),
      },
    ] as const;
    const all = model.hasInput('sid')
      ? [...feeds, { name: 'sid', type: 'int64', dims: [1], data: BigInt64Array.of(BigInt(voice.sid ?? 0)) } as const]
      : feeds;
    const outputs = await withinStall(this.options.stallTimeoutMs, signal, `a sentence of ${voice.modelPath}`, (s) =>
      model.run(
        all.map((feed) => ({ ...feed, dims: [...feed.dims] })),
        [],
        s,
      ),
    );
    const output = outputs.get('output') ?? [...outputs.values()][0];
    if (output?.type !== 'float32') {
      throw new SynthesisError(`${voice.modelPath} returned no float32 audio`, { code: 'SYNTHESIS_FAILED' });
    }
    const frameTensor = durations === undefined ? undefined : outputs.get(durations);
    const frames =
      frameTensor?.type === 'float32' && frameTensor.data.length === ids.length ? frameTensor.data : undefined;
    if (durations !== undefined && frames === undefined) {
      throw new SynthesisError(`${voice.modelPath} returned no duration for each phoneme`, {
        code: 'TTS_NO_WORD_TIMES',
      });
    }
    return { audio: output.data, frames };
  }
}
