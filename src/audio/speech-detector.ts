// Where speech starts and stops in a live stream: Silero VAD run incrementally (the addon's VadStream carries the
// model's state from one piece to the next, so each 32 ms window is computed once), and Silero's own streaming rule on
// its probabilities (its VADIterator): speech starts at a window at or above `threshold`, ends once the probability
// stayed below `threshold - 0.15` for `minSilenceMs`. A start is reported only once it lasted `minSpeechMs` (no event
// for a click), both times padded by `speechPadMs` and clamped to the audio.
import { resolve } from 'node:path';
import { InvalidOptionTypeError, VoxmillError } from '../errors.js';
import { type NativeVadStream, native } from '../native.js';
import { runJob } from '../util/job.js';
import { objectOption, rejectUnknownKeys, stringOption } from '../util/validate.js';
import { readVadSettings, VAD_DEFAULTS, type VadSettings } from './vad-settings.js';

const RATE = 16000;
/** Silero's window in whisper.cpp: one probability per 512 samples. */
const WINDOW = 512;
/** The addon takes at most this many samples a push. */
const MAX_PUSH = 160000;
/** Below `threshold` by this much counts as silence (Silero's `neg_threshold`), but never below MIN_SILENCE_LEVEL. */
const HYSTERESIS = 0.15;
/** whisper.cpp's floor for the silence level (`max(threshold - 0.15, 0.01)`): a low threshold still ends speech. */
const MIN_SILENCE_LEVEL = 0.01;

/** Options of {@link createSpeechDetector}: the VAD model and the settings `detectSpeechRegions` takes. */
export interface SpeechDetectorOptions extends Partial<Omit<VadSettings, 'maxSpeechSeconds'>> {
  /** Path to a ggml Silero VAD model (e.g. ggml-silero-v6.2.0.bin). */
  model: string;
}

/** A change in a live stream, at `at` seconds from its start (padding applied). */
export type SpeechEvent = { type: 'speech_started'; at: number } | { type: 'speech_stopped'; at: number };

/**
 * Live speech detection (see {@link createSpeechDetector}). `push()` samples as they arrive; each call resolves to
 * the events the new audio settled, in order. Calls are queued, so they may overlap.
 */
export class SpeechDetector {
  readonly #native: NativeVadStream;
  readonly #settings: Omit<VadSettings, 'maxSpeechSeconds'>;
  #queue: Promise<unknown> = Promise.resolve();
  #windows = 0;
  #speaking = false;
  /** Window where the current candidate speech began (speaking or not yet confirmed), or -1. */
  #candidate = -1;
  /** First window of the silence that may end the speech, or -1. */
  #silenceFrom = -1;
  #closed = false;
  #closing: Promise<SpeechEvent[]> | undefined;
  #closeReported = false;
  /** Where the last reported speech stopped (samples): a padded start never reaches back before it. */
  #lastStop = 0;

  constructor(model: NativeVadStream, settings: Omit<VadSettings, 'maxSpeechSeconds'>) {
    this.#native = model;
    this.#settings = settings;
  }

  /** Seconds of audio pushed and analysed so far (whole windows). */
  get seconds(): number {
    return (this.#windows * WINDOW) / RATE;
  }

  /** Whether the stream is in speech now (a start was reported and no stop yet). */
  get speaking(): boolean {
    return this.#speaking;
  }

  /** Analyses 16 kHz mono samples that follow the ones pushed before. Rejects after close(). */
  push(samples: Float32Array): Promise<SpeechEvent[]> {
    if (this.#closed) return Promise.reject(new VoxmillError('VAD_STREAM_CLOSED', 'the speech detector was closed'));
    if (!(samples instanceof Float32Array)) {
      return Promise.reject(new InvalidOptionTypeError('samples', 'a Float32Array of 16 kHz mono PCM', samples));
    }
    const run = this.#queue.then(async () => {
      const events: SpeechEvent[] = [];
      for (let start = 0; start < samples.length || start === 0; start += MAX_PUSH) {
        const piece = samples.subarray(start, Math.min(samples.length, start + MAX_PUSH));
        const probabilities = await runJob(() => this.#native.push(piece));
        for (const p of probabilities) this.#step(p, events);
        if (samples.length === 0) break;
      }
      return events;
    });
    // The queue goes on after a failure; the caller gets the failure.
    this.#queue = run.catch(() => undefined);
    return run;
  }

  /**
   * Ends the stream: a speech still open stops at the end of the audio pushed (its event is returned), and the
   * model is freed (after a push that is running).
   */
  close(): Promise<SpeechEvent[]> {
    this.#closing ??= (async () => {
      this.#closed = true;
      await this.#queue;
      this.#native.dispose();
      if (!this.#speaking) return [];
      this.#speaking = false;
      // Silence that had begun (not yet long enough to end the speech) ends it where it began, padded.
      const pad = (this.#settings.speechPadMs * RATE) / 1000;
      const end =
        this.#silenceFrom >= 0
          ? Math.min(this.#silenceFrom * WINDOW + pad, this.#windows * WINDOW)
          : this.#windows * WINDOW;
      return [{ type: 'speech_stopped', at: end / RATE } satisfies SpeechEvent];
    })();
    // Only the first caller gets the final stop.
    return this.#closing.then((events) => {
      if (this.#closeReported) return [];
      this.#closeReported = true;
      return events;
    });
  }

  #step(p: number, events: SpeechEvent[]): void {
    const window = this.#windows++;
    const { threshold, minSpeechMs, minSilenceMs, speechPadMs } = this.#settings;
    const windowsOf = (ms: number) => Math.ceil((ms * RATE) / 1000 / WINDOW);
    const pad = (speechPadMs * RATE) / 1000;
    if (p >= threshold) {
      this.#silenceFrom = -1;
      if (this.#candidate < 0) this.#candidate = window;
      if (!this.#speaking && window + 1 - this.#candidate >= Math.max(1, windowsOf(minSpeechMs))) {
        this.#speaking = true;
        events.push({ type: 'speech_started', at: Math.max(this.#lastStop, this.#candidate * WINDOW - pad) / RATE });
      }
      return;
    }
    if (!this.#speaking) {
      // Not confirmed yet: a start must hold above the threshold for minSpeechMs.
      this.#candidate = -1;
      return;
    }
    if (p >= Math.max(threshold - HYSTERESIS, MIN_SILENCE_LEVEL)) return;
    if (this.#silenceFrom < 0) this.#silenceFrom = window;
    if (window + 1 - this.#silenceFrom >= windowsOf(minSilenceMs)) {
      this.#speaking = false;
      this.#candidate = -1;
      const end = Math.min(this.#silenceFrom * WINDOW + pad, (window + 1) * WINDOW);
      this.#silenceFrom = -1;
      this.#lastStop = end;
      events.push({ type: 'speech_stopped', at: end / RATE });
    }
  }
}

const KEYS = ['model', 'threshold', 'minSpeechMs', 'minSilenceMs', 'speechPadMs'] as const;

/**
 * Detects where speech starts and stops in audio that arrives in pieces (a microphone, a call), with whisper.cpp's
 * Silero VAD run incrementally on a worker thread: each 32 ms is analysed once, whatever the pieces' sizes. The
 * model is loaded by the first push ({@link ModelLoadError} then). Settings as {@link detectSpeechRegions}'s
 * (threshold 0.5, minSpeechMs 250, minSilenceMs 100, speechPadMs 30 by default).
 * @throws InvalidOptionTypeError / InvalidOptionValueError naming the option.
 */
export function createSpeechDetector(options: SpeechDetectorOptions): SpeechDetector {
  const raw = objectOption('options', options);
  rejectUnknownKeys('options', raw, KEYS);
  const model = stringOption('model', raw.model);
  if (model === undefined || model === '') {
    throw new InvalidOptionTypeError('model', 'a path to a ggml Silero VAD model', raw.model);
  }
  const { maxSpeechSeconds: _unused, ...settings } = { ...VAD_DEFAULTS, ...readVadSettings(raw, '') };
  return new SpeechDetector(new (native().VadStream)({ modelPath: resolve(model) }), settings);
}
