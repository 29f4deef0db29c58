// Live speech: text written as it arrives (a language model's tokens) is spoken sentence by sentence into one
// continuous audio stream. A Duplex, strings in and audio bytes out, so it pipes (`pipeline(tokens, live, socket)`)
// and iterates (`for await`). A sentence is cut where splitIntoChunks would cut it, once a later character confirms
// the cut; flush() speaks what is left now, end() speaks it and ends the audio, cancel() stops at once (barge-in).
// Each sentence is one synthesis in the pool, so an idle live speech holds no place there while it waits for text.
// Bounded: one write is at most maxWriteChars; at most maxPendingSentences complete sentences wait before writes are
// held back (write() returns false until 'drain'); an unfinished sentence longer than two chunks is cut like a long
// sentence; a writer that ignores 'drain' (MAX_BUFFERED_WRITES writes, or four writes' worth of characters) fails
// the stream. A sentence's place is released as soon as its audio is synthesized, before the reader takes it.

import { Duplex } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';
import { StreamingEncoder } from '../audio/encode.js';
import type { SpeechFormat } from '../audio/formats.js';
import { InvalidOptionTypeError, InvalidOptionValueError, SynthesisError } from '../errors.js';
import { abortReason } from '../util/job.js';
import { codePointLength } from './request.js';
import type { SynthJob } from './synth-job.js';
import type { SlotLease } from './synth-pool.js';
import { completeTextEnd, hasSpeakableText, normalizeText, splitIntoChunks } from './text.js';
import type { LiveSentence, SpeechAudioInfo, SynthesisProgress } from './types.js';

/** What the engine gives a live speech: the resolved voice, the pool, the limits. */
export interface LiveSpeechParts {
  info: SpeechAudioInfo;
  job: Omit<SynthJob, 'chunks'>;
  /** The voice language's text normalizer (the identity when off), applied to each complete piece of text. */
  normalize: (text: string) => string;
  acquire: (signal: AbortSignal) => Promise<SlotLease>;
  maxPendingSentences: number;
  maxChunkChars: number;
  maxWriteChars: number;
  readerTimeoutMs: number;
  signal: AbortSignal | undefined;
}

/** Writes waiting behind a held-back one before the stream fails: a writer that ignores 'drain'. */
export const MAX_BUFFERED_WRITES = 1024;
/** How far back from the end of the unfinished text the search for a sentence end resumes. */
const RESCAN_CHARS = 64;
/** Audio the stream holds for its reader: little, so that what plays on after cancel() is short. */
const READABLE_BYTES = 16 * 1024;

/**
 * Speech from text that arrives in pieces (see `Speech.createLiveSpeech`). Write strings; read the audio bytes in the
 * format asked for, one continuous stream (`format`, `contentType`, `sampleRate` are on the object). Emits
 * `sentence` ({@link LiveSentence}) when a sentence's audio starts. `flush()` speaks the unfinished text now, `end()`
 * speaks it and ends the audio, `cancel()` stops synthesis at once and ends the audio after what was already handed
 * to the stream. Errors: SynthesisError (synthesis failures; `TTS_READER_TIMEOUT` when nothing is read for the
 * engine's readerTimeoutMs; `TTS_WRITE_OVERFLOW` when writes pile up past `drain`), InvalidOptionTypeError /
 * InvalidOptionValueError naming `text` for a write that is not a string or is longer than the engine's
 * maxInputChars.
 */
export class LiveSpeech extends Duplex implements SpeechAudioInfo {
  readonly format: SpeechFormat;
  readonly contentType: string;
  readonly sampleRate: number;
  readonly variant: string;
  readonly speaker: number | undefined;
  readonly #parts: LiveSpeechParts;
  readonly #encoder: StreamingEncoder;
  readonly #stop = new AbortController();
  /** Written text that ends no sentence yet. */
  #text = '';
  /** Where the search for a sentence end resumes in `#text`. */
  #scanned = 0;
  /** Characters written and not yet taken by _write (a writer ignoring 'drain'). */
  #bufferedChars = 0;
  /** Bytes written (a piped text stream) decoded as UTF-8 across chunk edges. */
  readonly #utf8 = new StringDecoder('utf8');
  /** Complete sentences, normalized, waiting for their synthesis. */
  readonly #pending: string[] = [];
  #heldWrite: ((error?: Error | null) => void) | undefined;
  #wake: (() => void) | undefined;
  #readWanted: (() => void) | undefined;
  #ending = false;
  #cancelled = false;
  #sentences = 0;
  #seconds = 0;

  constructor(parts: LiveSpeechParts) {
    // One write may wait: write() returns false as soon as a write is held back (maxPendingSentences).
    super({
      writableObjectMode: true,
      writableHighWaterMark: 1,
      decodeStrings: false,
      readableHighWaterMark: READABLE_BYTES,
    });
    this.#parts = parts;
    const { info, job, signal } = parts;
    this.format = info.format;
    this.contentType = info.contentType;
    this.sampleRate = info.sampleRate;
    this.variant = info.variant;
    this.speaker = info.speaker;
    this.#encoder = new StreamingEncoder({
      format: info.format,
      inputSampleRate: job.sampleRate,
      outputSampleRate: info.sampleRate,
      whole: false,
    });
    if (signal) {
      // Destroy with the signal's own reason (the convention for every voxmill call).
      const onAbort = () => this.destroy(abortReason(signal) as Error);
      signal.addEventListener('abort', onAbort, { once: true });
      this.once('close', () => signal.removeEventListener('abort', onAbort));
    }
    void this.#run();
  }

  /** Seconds of audio synthesized so far (before encoding), and how many sentences were started. */
  get progress(): SynthesisProgress {
    return { sentences: this.#sentences, seconds: this.#seconds };
  }

  override write(chunk: unknown, ...rest: unknown[]): boolean {
    const chars = typeof chunk === 'string' || chunk instanceof Uint8Array ? chunk.length : 0;
    const limit = 4 * this.#parts.maxWriteChars;
    if (
      !this.destroyed &&
      (this.writableLength >= MAX_BUFFERED_WRITES || (this.writableLength > 0 && this.#bufferedChars + chars > limit))
    ) {
      const error = new SynthesisError(
        `more than ${MAX_BUFFERED_WRITES} writes or ${limit} characters waiting: the writer ignores 'drain'`,
        { code: 'TTS_WRITE_OVERFLOW' },
      );
      this.destroy(error);
      const callback = rest.find((value) => typeof value === 'function') as ((error: Error) => void) | undefined;
      if (callback) process.nextTick(callback, error);
      return false;
    }
    this.#bufferedChars += chars;
    return (super.write as (...args: unknown[]) => boolean)(chunk, ...rest);
  }

  override _write(chunk: unknown, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    const text = typeof chunk === 'string' ? chunk : chunk instanceof Uint8Array ? this.#utf8.write(chunk) : undefined;
    this.#bufferedChars -= typeof chunk === 'string' || chunk instanceof Uint8Array ? chunk.length : 0;
    if (text === undefined) {
      callback(new InvalidOptionTypeError('text', 'a string (or UTF-8 bytes)', chunk));
      return;
    }
    const max = this.#parts.maxWriteChars;
    if (text.length > max && codePointLength(text) > max) {
      callback(new InvalidOptionValueError('text', `at most ${max} characters a write`, `${codePointLength(text)}`));
      return;
    }
    // After cancel() the text is dropped: a language model may still be streaming the answer that was cut off.
    if (this.#cancelled) {
      callback();
      return;
    }
    this.#text += text;
    this.#take(false);
    if (this.#pending.length >= this.#parts.maxPendingSentences) this.#heldWrite = callback;
    else callback();
  }

  override _final(callback: (error?: Error | null) => void): void {
    this.#ending = true;
    if (!this.#cancelled) {
      this.#text += this.#utf8.end();
      this.#take(true);
    }
    this.#wakeUp();
    callback();
  }

  override _read(): void {
    const wanted = this.#readWanted;
    this.#readWanted = undefined;
    wanted?.();
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    this.#stop.abort(error ?? new SynthesisError('the live speech was destroyed', { code: 'TTS_CANCELLED' }));
    this.#pending.length = 0;
    this.#releaseWrite();
    this.#wakeUp();
    this._read();
    callback(error);
  }

  /** Speaks the written text that ends no sentence yet now, as a sentence of its own. */
  flush(): void {
    if (this.#cancelled || this.destroyed) return;
    this.#take(true);
    this.#wakeUp();
  }

  /**
   * Barge-in: drops the text not yet spoken, stops the sentence being synthesized (it stops before its next
   * ONNX Runtime call) and ends the audio after what was already handed to the stream. Later writes are dropped.
   */
  cancel(): void {
    if (this.#cancelled || this.destroyed) return;
    this.#cancelled = true;
    this.#text = '';
    this.#pending.length = 0;
    this.#stop.abort(new SynthesisError('the live speech was cancelled', { code: 'TTS_CANCELLED' }));
    this.#releaseWrite();
    this.#wakeUp();
    this._read();
  }

  /** Moves complete sentences (`all`: all the text) from the written text to the queue. */
  #take(all: boolean): void {
    const end = all ? this.#text.length : completeTextEnd(this.#text, this.#scanned);
    if (end > 0) {
      this.#queue(this.#text.slice(0, end));
      this.#text = this.#text.slice(end);
    }
    // The next search starts a little before the end: an unconfirmed cut (a full stop, spaces, markup) lies there.
    this.#scanned = Math.max(0, this.#text.length - RESCAN_CHARS);
    // A sentence that never ends is cut like a long one, up to its last space (a word may still be arriving); the
    // last piece, normalized, waits for more text with the raw rest after it, so no two words are joined.
    if (!all && this.#text.length > 2 * this.#parts.maxChunkChars) {
      const space = this.#text.search(/\s\S*$/u);
      if (space > 0) {
        const pieces = splitIntoChunks(
          this.#parts.normalize(normalizeText(this.#text.slice(0, space))),
          this.#parts.maxChunkChars,
        );
        const last = pieces.pop() ?? '';
        for (const piece of pieces) if (hasSpeakableText(piece)) this.#pending.push(piece);
        this.#text = last + this.#text.slice(space);
        this.#scanned = 0;
      }
    }
    if (this.#pending.length > 0) this.#wakeUp();
  }

  #queue(text: string): void {
    for (const chunk of splitIntoChunks(this.#parts.normalize(normalizeText(text)), this.#parts.maxChunkChars)) {
      if (hasSpeakableText(chunk)) this.#pending.push(chunk);
    }
  }

  #wakeUp(): void {
    const wake = this.#wake;
    this.#wake = undefined;
    wake?.();
  }

  #releaseWrite(): void {
    const held = this.#heldWrite;
    this.#heldWrite = undefined;
    held?.();
  }

  /** Speaks queued sentences one after another until the writer ends, cancel() or destroy(). */
  async #run(): Promise<void> {
    try {
      for (;;) {
        if (this.destroyed || this.#cancelled) break;
        const sentence = this.#pending.shift();
        if (sentence === undefined) {
          if (this.#ending) break;
          await new Promise<void>((resolve) => {
            this.#wake = resolve;
          });
          continue;
        }
        if (this.#pending.length < this.#parts.maxPendingSentences) this.#releaseWrite();
        await this.#speak(sentence);
      }
      if (!this.#cancelled && !this.destroyed) {
        const tail = await this.#encoder.finish();
        if (tail.length > 0) await this.#hand(tail);
      }
      if (!this.destroyed) this.push(null);
    } catch (error) {
      // cancel() aborts the sentence being spoken: that ends the audio, it is no failure.
      if (this.destroyed) return;
      if (this.#cancelled) this.push(null);
      else this.destroy(error as Error);
    } finally {
      this.#encoder.dispose();
    }
  }

  async #speak(text: string): Promise<void> {
    const signal = this.#stop.signal;
    const { job } = this.#parts;
    // The place is released as soon as the sentence is synthesized: a slow reader must not hold it.
    const parts: Float32Array[] = [];
    const lease = await this.#parts.acquire(signal);
    try {
      const run = lease.run({ ...job, chunks: [text] }, signal);
      for await (const { samples } of run) parts.push(samples);
    } finally {
      lease.release();
    }
    signal.throwIfAborted();
    if (parts.length === 0) return;
    const index = this.#sentences++;
    // The voice's pause between sentences, which one job per sentence does not make itself.
    if (index > 0) await this.#play(new Float32Array(Math.round(job.sentenceSilenceSeconds * job.sampleRate)));
    const sentence: LiveSentence = { index, text, start: this.#seconds };
    this.emit('sentence', sentence);
    for (const samples of parts) await this.#play(samples);
  }

  async #play(samples: Float32Array): Promise<void> {
    this.#seconds += samples.length / this.#parts.job.sampleRate;
    const bytes = await this.#encoder.encode(samples);
    if (bytes.length > 0) await this.#hand(bytes);
  }

  /** Hands bytes to the reader, waiting while its buffer is full (at most readerTimeoutMs, then the stream fails). */
  async #hand(bytes: Buffer): Promise<void> {
    this.#stop.signal.throwIfAborted();
    if (this.push(bytes)) return;
    const ms = this.#parts.readerTimeoutMs;
    let timer: NodeJS.Timeout | undefined;
    await new Promise<void>((resolve) => {
      this.#readWanted = resolve;
      if (ms > 0) {
        timer = setTimeout(() => {
          this.destroy(
            new SynthesisError(`nothing read from the live speech for ${ms} ms; synthesis stopped`, {
              code: 'TTS_READER_TIMEOUT',
            }),
          );
        }, ms);
        timer.unref();
      }
    });
    clearTimeout(timer);
    this.#stop.signal.throwIfAborted();
  }
}
