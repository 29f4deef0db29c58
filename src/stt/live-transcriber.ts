// Live transcription: audio written as it arrives (a microphone, a call) is cut into utterances by the incremental
// VAD (src/audio/speech-detector.ts) and each is transcribed when it ends; while one is open, its audio so far is
// re-decoded every `interimIntervalMs` (never two decodes at once: a tick that finds one running is skipped) for
// interim text. A Writable (audio in: 16-bit little-endian PCM bytes, Int16Array or Float32Array at `sampleRate`,
// resampled to 16 kHz inside) that emits typed events, also readable through `events()`.
// Bounded: the open utterance holds at most `maxUtteranceSeconds` (then it is finalized and a new one opens), at most
// `maxPendingUtterances` ended utterances wait for their transcription before writes are held back (write() returns
// false until 'drain': a client sending faster than the recognizer keeps up is throttled), and an `events()` reader
// that falls 1,000 events behind fails with an overflow.

import { EventEmitter } from 'node:events';
import { Writable } from 'node:stream';
import { StreamResampler } from '../audio/resample.js';
import type { SpeechDetector, SpeechEvent } from '../audio/speech-detector.js';
import type { SpeakerTurn } from '../diarize/turn.js';
import { InvalidOptionTypeError, QueueFullError, TranscriptionError } from '../errors.js';
import { abortReason } from '../util/job.js';
import type { Transcription, Word } from './types.js';

const RATE = 16000;
/** Audio kept before the detector's start (its padding reaches back into it). */
const PREROLL_SECONDS = 1;
/** Events an `events()` reader may fall behind before it fails. */
export const MAX_BUFFERED_EVENTS = 1000;

/** A commit() or clear() queued among the writes, so that it acts after the audio written before it. */
class Control {
  constructor(readonly run: () => void) {}
}

/** What happened in a live transcription; times are seconds from the start of the stream. */
export type LiveTranscriptionEvent =
  /** Speech began (VAD): `utterance` is the number of the utterance it opens. */
  | { type: 'speech_started'; at: number; utterance: number }
  /** Speech ended (VAD): `utterance`, the one it closes, gets its `final` next. */
  | { type: 'speech_stopped'; at: number; utterance: number }
  /** The open utterance's text so far (it may still change). */
  | { type: 'interim'; utterance: number; text: string; start: number }
  /** An utterance's final text, with word times when the model gives them. */
  | {
      type: 'final';
      utterance: number;
      text: string;
      start: number;
      end: number;
      language: string;
      words: Word[];
      /**
       * With `diarize`: who said most of it, `speaker_1`, `speaker_2`, ... by first appearance in the stream (a label
       * once given never changes). Absent when no turn was found (nothing the model could embed) or labelling failed.
       */
      speaker?: string;
      /**
       * With `diarize`: who spoke when within the utterance (several speakers when a turn had no pause); each word
       * then has its `speaker` (the turn holding its middle, else the nearest). Empty when none was found.
       */
      turns?: SpeakerTurn[];
      /**
       * With `diarize`: why this utterance has no speakers (`QueueFullError`: the speaker worker was busy;
       * `DiarizationError`: it failed). The text is still final; the stream goes on.
       */
      speakerError?: Error;
    }
  /**
   * An utterance that could not be transcribed because the engine's queue was full (`QueueFullError`); the stream
   * goes on. Any other failure fails the stream.
   */
  | { type: 'failed'; utterance: number; start: number; end: number; error: QueueFullError };

/**
 * Transcribes 16 kHz samples (the engine's transcribe, with the live options applied); `interim`: a cheap pass for
 * text that will be replaced (greedy, no word times).
 */
export type UtteranceTranscriber = (
  samples: Float32Array,
  signal: AbortSignal,
  interim: boolean,
) => Promise<Transcription>;

/**
 * Who spoke in an ended utterance (16 kHz samples), called in utterance order. It resolves to the labelling: a call
 * that gives the turns (seconds from the utterance's start) their labels for the whole stream, made only once the
 * utterance's text is final, so an utterance that is lost takes no label.
 */
export type UtteranceSpeaker = (samples: Float32Array, signal: AbortSignal) => Promise<() => SpeakerTurn[]>;

export interface LiveTranscriberParts {
  /** The VAD that cuts utterances; none: they end only at commit() (and at maxUtteranceSeconds). */
  detector: SpeechDetector | undefined;
  transcribe: UtteranceTranscriber;
  /** Labels each final with its speaker (diarize on); absent: finals carry no speaker. */
  speakerOf?: UtteranceSpeaker | undefined;
  sampleRate: number;
  interimIntervalMs: number;
  maxUtteranceSeconds: number;
  maxPendingUtterances: number;
  signal: AbortSignal | undefined;
  /**
   * Whether interims should give way now (the engine has transcriptions waiting for CPU threads): a skipped interim
   * is called `onInterimShed`, and the final still comes.
   */
  shedInterim?: () => boolean;
  onInterimShed?: () => void;
}

interface Utterance {
  index: number;
  /** Sample index (16 kHz, from the stream's start) where it begins. */
  start: number;
  end?: number;
}

/**
 * A live transcription (see `Speech.createTranscriber`). Write audio; listen for `speech_started`, `speech_stopped`,
 * `interim` and `final` ({@link LiveTranscriptionEvent}, also all as `event`), or iterate `events()`. `end()` closes
 * the open utterance at the end of the audio and finishes after its final text.
 */
export class LiveTranscriber extends Writable {
  readonly #parts: LiveTranscriberParts;
  readonly #resampler: StreamResampler | undefined;
  readonly #stop = new AbortController();
  readonly #events = new EventEmitter();
  /** Audio from `#offset` (16 kHz sample index) to now. */
  #audio = new Float32Array(RATE * 4);
  #length = 0;
  #offset = 0;
  /** An odd byte of 16-bit input waiting for its other half. */
  #oddByte: number | undefined;
  #open: Utterance | undefined;
  #utterances = 0;
  readonly #ended: Utterance[] = [];
  #heldWrite: ((error?: Error | null) => void) | undefined;
  #finalizing: Promise<void> = Promise.resolve();
  /** The decode running now (interim or final): never two at once. */
  #decoding: Promise<unknown> | undefined;
  /** Stops the interim decode in progress: an utterance that ended makes it useless. */
  #interimStop: AbortController | undefined;
  #interimTimer: NodeJS.Timeout | undefined;
  /** Between the detector's speech_started and speech_stopped. */
  #inSpeech = false;
  /** commit() / clear() calls queued behind writes: settled by destroy() when it comes first. */
  readonly #pendingControls = new Set<() => void>();

  constructor(parts: LiveTranscriberParts) {
    super({ decodeStrings: false, objectMode: true, highWaterMark: 1 });
    this.#parts = parts;
    this.#resampler = parts.sampleRate === RATE ? undefined : new StreamResampler(parts.sampleRate, RATE);
    const { signal } = parts;
    if (signal) {
      signal.throwIfAborted();
      const onAbort = () => this.destroy(abortReason(signal) as Error);
      signal.addEventListener('abort', onAbort, { once: true });
      this.once('close', () => signal.removeEventListener('abort', onAbort));
    }
  }

  /** Seconds of audio received (at 16 kHz). */
  get seconds(): number {
    return (this.#offset + this.#length) / RATE;
  }

  /** The events as an async iterator: it ends when the transcription finishes and throws its error. */
  async *events(): AsyncGenerator<LiveTranscriptionEvent> {
    const queue: LiveTranscriptionEvent[] = [];
    let wake: (() => void) | undefined;
    let done = this.writableFinished || this.destroyed;
    let failure: unknown;
    const onEvent = (event: LiveTranscriptionEvent) => {
      if (queue.length >= MAX_BUFFERED_EVENTS) {
        failure ??= new TranscriptionError(`the events() reader fell ${MAX_BUFFERED_EVENTS} events behind`);
      } else queue.push(event);
      wake?.();
    };
    const onDone = () => {
      done = true;
      wake?.();
    };
    const onError = (error: unknown) => {
      failure ??= error;
      onDone();
    };
    this.#events.on('event', onEvent);
    this.once('finish', onDone);
    this.once('close', onDone);
    this.once('error', onError);
    try {
      for (;;) {
        const next = queue.shift();
        if (next) {
          yield next;
          continue;
        }
        if (failure !== undefined) throw failure;
        if (done) return;
        await new Promise<void>((resolve) => {
          wake = resolve;
        });
        wake = undefined;
      }
    } finally {
      this.#events.off('event', onEvent);
      this.off('finish', onDone);
      this.off('close', onDone);
      this.off('error', onError);
    }
  }

  override _write(chunk: unknown, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    if (chunk instanceof Control) {
      chunk.run();
      callback();
      return;
    }
    let samples: Float32Array;
    try {
      samples = this.#toFloat(chunk);
    } catch (error) {
      callback(error as Error);
      return;
    }
    const at16k = this.#resampler ? this.#resampler.process(samples) : samples;
    const { detector } = this.#parts;
    if (!detector) {
      // Without a VAD every sample belongs to an utterance: one opens at the first audio after a commit.
      if (!this.#open && at16k.length > 0) this.#openAt(this.#offset + this.#length);
      this.#append(at16k);
      this.#holdOrContinue(callback);
      return;
    }
    this.#append(at16k);
    detector.push(at16k).then(
      (events) => {
        if (this.destroyed) return callback();
        // A listener that throws fails the stream (its error), never an unhandled rejection.
        try {
          for (const event of events) this.#onSpeech(event);
        } catch (error) {
          return callback(error as Error);
        }
        this.#holdOrContinue(callback);
      },
      (error: unknown) => callback(error as Error),
    );
  }

  /**
   * Ends the open utterance after the audio written so far (its `final` follows), as a client's "commit" does; with a
   * VAD that still hears speech, a new utterance opens at once so that nothing said next is lost. Resolves to the
   * ended utterance's number, or undefined when none was open (or the transcription has ended).
   */
  commit(): Promise<number | undefined> {
    return this.#control(undefined, () => {
      const utterance = this.#open;
      if (!utterance) return undefined;
      const now = this.#offset + this.#length;
      this.#close(now);
      if (this.#inSpeech && this.#parts.detector) this.#openAt(now);
      return utterance.index;
    });
  }

  /**
   * Drops the open utterance's audio written so far without transcribing it (no `final`), as a client's "clear"
   * does; with a VAD that still hears speech, a new utterance opens at once. Resolves to the dropped utterance's
   * number, or undefined when none was open.
   */
  clear(): Promise<number | undefined> {
    return this.#control(undefined, () => {
      const utterance = this.#open;
      if (!utterance) return undefined;
      this.#open = undefined;
      this.#stopInterims();
      if (this.#inSpeech && this.#parts.detector) this.#openAt(this.#offset + this.#length);
      return utterance.index;
    });
  }

  /** Runs `action` in order with the writes before it (they may still be queued); `ended` once the stream is. */
  #control<T>(ended: T, action: () => T): Promise<T> {
    if (this.writableEnded || this.destroyed) return Promise.resolve(ended);
    return new Promise<T>((resolve) => {
      // Settled by destroy() if the stream ends before reaching it.
      const settle = () => resolve(ended);
      this.#pendingControls.add(settle);
      this.write(
        new Control(() => {
          this.#pendingControls.delete(settle);
          resolve(this.destroyed ? ended : action());
        }),
      );
    });
  }

  /** Continues the writer, or holds it while `maxPendingUtterances` ended utterances wait for their text. */
  #holdOrContinue(callback: (error?: Error | null) => void): void {
    if (this.#ended.length >= this.#parts.maxPendingUtterances) this.#heldWrite = callback;
    else callback();
  }

  override _final(callback: (error?: Error | null) => void): void {
    const closing = this.#parts.detector?.close() ?? Promise.resolve<SpeechEvent[]>([]);
    closing.then(
      (events) => {
        try {
          if (!this.destroyed) for (const event of events) this.#onSpeech(event);
          // Without a VAD the open utterance ends with the audio.
          if (!this.destroyed && this.#open) this.#close(this.#offset + this.#length);
        } catch (error) {
          return callback(error as Error);
        }
        this.#finalizing.then(() => {
          this.#shutdown();
          callback();
        }, callback);
      },
      (error: unknown) => callback(error as Error),
    );
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    this.#stop.abort(error ?? new TranscriptionError('the live transcription was destroyed'));
    this.#shutdown();
    for (const settle of this.#pendingControls) settle();
    this.#pendingControls.clear();
    void this.#parts.detector?.close().catch(() => undefined);
    callback(error);
  }

  #shutdown(): void {
    clearInterval(this.#interimTimer);
    this.#interimTimer = undefined;
    const held = this.#heldWrite;
    this.#heldWrite = undefined;
    held?.();
  }

  #toFloat(chunk: unknown): Float32Array {
    if (chunk instanceof Float32Array) return chunk;
    if (chunk instanceof Int16Array) return Float32Array.from(chunk, (v) => v / 32768);
    if (chunk instanceof Uint8Array) {
      // Little-endian 16-bit PCM; an odd byte waits for the next chunk.
      const bytes = this.#oddByte === undefined ? chunk : Buffer.concat([Uint8Array.of(this.#oddByte), chunk]);
      const count = Math.floor(bytes.length / 2);
      this.#oddByte = bytes.length % 2 === 1 ? bytes[bytes.length - 1] : undefined;
      const view = new DataView(bytes.buffer, bytes.byteOffset, count * 2);
      const out = new Float32Array(count);
      for (let i = 0; i < count; i++) out[i] = view.getInt16(2 * i, true) / 32768;
      return out;
    }
    throw new InvalidOptionTypeError('audio', 'a Buffer of 16-bit PCM, an Int16Array or a Float32Array', chunk);
  }

  /** Keeps the audio the open utterance (or the preroll before one) needs. */
  #append(samples: Float32Array): void {
    if (this.#length + samples.length > this.#audio.length) {
      // Drop what nothing needs any more: before the open utterance, or before the preroll.
      const keepFrom = this.#open ? this.#open.start : this.#offset + this.#length - PREROLL_SECONDS * RATE;
      const drop = Math.max(0, Math.min(this.#length, keepFrom - this.#offset));
      const needed = this.#length - drop + samples.length;
      const grown =
        needed > this.#audio.length ? new Float32Array(Math.max(needed, 2 * this.#audio.length)) : this.#audio;
      grown.set(this.#audio.subarray(drop, this.#length), 0);
      this.#audio = grown;
      this.#length -= drop;
      this.#offset += drop;
    }
    this.#audio.set(samples, this.#length);
    this.#length += samples.length;
    // An utterance that runs past its limit is closed exactly there and the next one opens at once.
    const limit = this.#parts.maxUtteranceSeconds * RATE;
    while (this.#open && this.#offset + this.#length - this.#open.start >= limit) {
      const cut = this.#open.start + limit;
      this.#close(cut);
      this.#openAt(cut);
    }
  }

  #emit(event: LiveTranscriptionEvent): void {
    this.emit(event.type, event);
    this.emit('event', event);
    this.#events.emit('event', event);
  }

  #onSpeech(event: SpeechEvent): void {
    const sample = Math.round(event.at * RATE);
    this.#inSpeech = event.type === 'speech_started';
    if (event.type === 'speech_started') {
      // A commit() may have opened one already while the detector still heard the previous speech.
      if (!this.#open) this.#openAt(Math.max(this.#offset, sample));
      this.#emit({ ...event, utterance: (this.#open as Utterance).index });
      return;
    }
    const open = this.#open;
    this.#emit({ ...event, utterance: open?.index ?? this.#utterances - 1 });
    if (open) this.#close(Math.max(open.start, Math.min(sample, this.#offset + this.#length)));
  }

  #openAt(start: number): void {
    this.#open = { index: this.#utterances++, start };
    // The interim timer runs only while an utterance is open (an idle transcriber holds no timer, and can be
    // collected when abandoned).
    if (this.#parts.interimIntervalMs > 0 && this.#interimTimer === undefined) {
      this.#interimTimer = setInterval(() => this.#interim(), this.#parts.interimIntervalMs);
      this.#interimTimer.unref();
    }
  }

  /** Ends the open utterance at `end` and queues its final transcription. */
  #close(end: number): void {
    const utterance = this.#open;
    if (!utterance) return;
    this.#open = undefined;
    this.#stopInterims();
    utterance.end = end;
    const samples = this.#slice(utterance.start, end);
    this.#ended.push(utterance);
    this.#finalizing = this.#finalizing.then(async () => {
      try {
        if (this.destroyed) return;
        const offset = utterance.start / RATE;
        // Nothing to transcribe (a commit that reopened an utterance the VAD closed at once): it still ends.
        if (samples.length === 0) {
          this.#emit({
            type: 'final',
            utterance: utterance.index,
            text: '',
            start: offset,
            end: offset,
            language: '',
            words: [],
            ...(this.#parts.speakerOf ? { turns: [] } : {}),
          });
          return;
        }
        // Who spoke runs beside what was said (the speaker worker is another thread).
        const speakers = this.#speakersOf(samples);
        let result: Transcription;
        try {
          result = await this.#decode(samples, false);
        } catch (error) {
          speakers?.stop();
          // A full queue (a busy server) loses this utterance, not the stream: the next one may find room.
          if (!(error instanceof QueueFullError) || this.destroyed) throw error;
          this.#emit({ type: 'failed', utterance: utterance.index, start: offset, end: end / RATE, error });
          return;
        }
        const found = await speakers?.outcome;
        if (this.destroyed) return;
        const words = (result.words ?? []).map((w) => ({ ...w, start: w.start + offset, end: w.end + offset }));
        const turns = (found?.label?.() ?? []).map((t) => ({ ...t, start: t.start + offset, end: t.end + offset }));
        this.#emit({
          type: 'final',
          utterance: utterance.index,
          text: result.text,
          start: offset,
          end: end / RATE,
          language: result.language,
          ...(speakers ? withSpeakers(words, turns) : { words }),
          ...(found?.error ? { speakerError: found.error } : {}),
        });
      } catch (error) {
        if (!this.destroyed) this.destroy(error as Error);
      } finally {
        this.#ended.splice(this.#ended.indexOf(utterance), 1);
        if (this.#ended.length < this.#parts.maxPendingUtterances) {
          const held = this.#heldWrite;
          this.#heldWrite = undefined;
          held?.();
        }
      }
    });
  }

  /**
   * Starts finding who spoke in an utterance (diarize on): its outcome never rejects (a failure costs the labels,
   * not the text), and `stop()` cancels it when the utterance is lost.
   */
  #speakersOf(samples: Float32Array) {
    const speakerOf = this.#parts.speakerOf;
    if (!speakerOf) return undefined;
    const stop = new AbortController();
    const onStop = () => stop.abort(this.#stop.signal.reason);
    this.#stop.signal.addEventListener('abort', onStop, { once: true });
    const outcome = speakerOf(samples, stop.signal)
      .then(
        (label) => ({ label, error: undefined }),
        (error: unknown) => ({ label: undefined, error: error as Error }),
      )
      .finally(() => this.#stop.signal.removeEventListener('abort', onStop));
    return { outcome, stop: () => stop.abort(new TranscriptionError('the utterance was lost')) };
  }

  #stopInterims(): void {
    this.#interimStop?.abort();
    clearInterval(this.#interimTimer);
    this.#interimTimer = undefined;
  }

  /** Re-decodes the open utterance for interim text, unless a decode is already running. */
  #interim(): void {
    const utterance = this.#open;
    if (!utterance || this.#decoding !== undefined || this.destroyed) return;
    // The length #slice would give, without copying it yet.
    if (this.#length - Math.max(0, utterance.start - this.#offset) < RATE / 2) return;
    // Under pressure interims go first: the finals waiting (this stream's or others') get the threads.
    if (this.#parts.shedInterim?.()) {
      this.#parts.onInterimShed?.();
      return;
    }
    const samples = this.#slice(utterance.start, this.#offset + this.#length);
    const stop = new AbortController();
    this.#interimStop = stop;
    const onStop = () => stop.abort();
    this.#stop.signal.addEventListener('abort', onStop, { once: true });
    this.#decode(samples, true, stop.signal)
      .then(
        (result) => {
          if (this.#open === utterance && !this.destroyed && !stop.signal.aborted) {
            this.#emit({
              type: 'interim',
              utterance: utterance.index,
              text: result.text,
              start: utterance.start / RATE,
            });
          }
        },
        () => undefined, // an interim that fails or is stopped is skipped; the final decode reports a real failure
      )
      .catch((error: unknown) => {
        // A listener that threw.
        if (!this.destroyed) this.destroy(error as Error);
      })
      .finally(() => {
        this.#stop.signal.removeEventListener('abort', onStop);
        if (this.#interimStop === stop) this.#interimStop = undefined;
      });
  }

  /** Runs after the decode in progress (an interim one may be running when an utterance ends). */
  async #decode(samples: Float32Array, interim: boolean, signal = this.#stop.signal): Promise<Transcription> {
    while (this.#decoding !== undefined) await this.#decoding.catch(() => undefined);
    const running = this.#parts.transcribe(samples, signal, interim);
    this.#decoding = running;
    try {
      return await running;
    } finally {
      if (this.#decoding === running) this.#decoding = undefined;
    }
  }

  #slice(start: number, end: number): Float32Array {
    const from = Math.max(0, start - this.#offset);
    const to = Math.max(from, Math.min(this.#length, end - this.#offset));
    return this.#audio.slice(from, to);
  }
}

/**
 * The words with their speakers (the turn holding each word's middle, else the nearest), the turns, and the speaker
 * of most of the time.
 */
function withSpeakers(words: Word[], turns: SpeakerTurn[]): { words: Word[]; speaker?: string; turns: SpeakerTurn[] } {
  if (turns.length === 0) return { words, turns };
  const seconds = new Map<string, number>();
  for (const t of turns) seconds.set(t.speaker, (seconds.get(t.speaker) ?? 0) + t.end - t.start);
  const speaker = [...seconds].reduce((a, b) => (b[1] > a[1] ? b : a))[0];
  const distance = (t: SpeakerTurn, at: number) => (at < t.start ? t.start - at : at > t.end ? at - t.end : 0);
  const labelled = words.map((w) => {
    const middle = (w.start + w.end) / 2;
    const turn = turns.reduce((a, b) => (distance(b, middle) < distance(a, middle) ? b : a));
    return { ...w, speaker: turn.speaker };
  });
  return { words: labelled, speaker, turns };
}
