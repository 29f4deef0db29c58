// The options of a live transcription (`Speech.createTranscriber`), their ranges and defaults, checked with errors
// that name the option.

import { readVadSettings, VAD_DEFAULTS, type VadSettings } from '../audio/vad-settings.js';
import { DEFAULT_DIARIZATION_THRESHOLDS } from '../diarize/config.js';
import { InvalidOptionTypeError, InvalidOptionValueError } from '../errors.js';
import {
  integerOption,
  isPlainObject,
  numberOption,
  objectOption,
  rejectUnknownKeys,
  signalOption,
  stringOption,
} from '../util/validate.js';

/** Options of `Speech.createTranscriber`. */
export interface LiveTranscriberOptions {
  /** A configured model id. Default `svc-stt-1`. */
  model?: string;
  /** Language hint (ISO 639-1, or `auto`). Default: the model's (English for `.en` models, else detected). */
  language?: string;
  /** Text that primes the decoder for each utterance (names, terms), up to 1,000 characters. */
  prompt?: string;
  /** Rate of the audio written, 8000 to 48000 Hz; resampled to 16 kHz inside. Default 16000. */
  sampleRate?: number;
  /**
   * How utterances are cut (Silero VAD): `threshold` (0.5), `minSpeechMs` (250), `minSilenceMs` (silence that ends
   * an utterance, default 500), `speechPadMs` (default 200, so no word is clipped). `false`: no VAD; an utterance
   * is all the audio between two `commit()` calls (and ends at `maxUtteranceSeconds`).
   */
  vad?: Partial<Pick<VadSettings, 'threshold' | 'minSpeechMs' | 'minSilenceMs' | 'speechPadMs'>> | false;
  /** While an utterance is open, its audio so far is re-decoded this often for interim text; 0: none. Default 1000. */
  interimIntervalMs?: number;
  /** An utterance longer than this (seconds, 1 to 120) is finalized and a new one opens. Default 30. */
  maxUtteranceSeconds?: number;
  /** Ended utterances waiting for their transcription before writes are held back (1 to 100). Default 2. */
  maxPendingUtterances?: number;
  /**
   * Label each final with its speakers (`speaker_1`, `speaker_2`, ... by first appearance; a label once given never
   * changes): `true`, or `{ maxSpeakers, threshold, minSeconds }`. Each utterance is diarized on its own (so a
   * change of speaker without a pause is found), and its speakers' voices are matched with those heard before.
   * Needs a speaker-embedding model (configured as `diarization.embeddingModel` or installed). Default off.
   */
  diarize?: boolean | LiveDiarizeOptions;
  /** Ends the transcription: the stream is destroyed with the signal's reason. */
  signal?: AbortSignal;
}

/** Speaker labels of a live transcription. */
export interface LiveDiarizeOptions {
  /** Speakers at most (1 to 32); past it, a new voice joins the closest speaker. Default 8. */
  maxSpeakers?: number;
  /**
   * Cosine distance (0 to 2) within which a voice in an utterance joins a speaker heard before, else it opens a new
   * one. Default by model: GE2E 0.2; Kaldi-fbank models (WeSpeaker, 3D-Speaker) their file default, 0.6; ECAPA 0.6.
   */
  threshold?: number;
  /** Speech shorter than this (seconds, 0 to 30) never opens a speaker nor moves one's voice. Default 2. */
  minSeconds?: number;
}

/**
 * Default live thresholds by the model's front end: GE2E's chosen on the generated development set (BENCHMARKS.md,
 * "Live speaker labels"); Kaldi-fbank models (WeSpeaker, 3D-Speaker) take their file default, none being at hand to
 * measure. ECAPA keeps 0.6, what its file default was: the file pipeline's 0.7 was chosen for average linkage over
 * 1.5 s windows, and a live utterance's one vector against a speaker's running mean was not measured with it.
 */
export const LIVE_SPEAKER_THRESHOLDS = {
  ge2e: 0.2,
  'kaldi-fbank': DEFAULT_DIARIZATION_THRESHOLDS['kaldi-fbank'],
  'speechbrain-fbank': 0.6,
} as const;
export const LIVE_SPEAKER_DEFAULTS = { maxSpeakers: 8, minSeconds: 2 } as const;
/** Ranges of the `diarize` options, [min, max] (the realtime endpoint checks its own names against them). */
export const LIVE_SPEAKER_RANGES = { maxSpeakers: [1, 32], threshold: [0, 2], minSeconds: [0, 30] } as const;

/** Defaults of a live transcription's VAD: an utterance ends after half a second of silence. */
export const LIVE_VAD_DEFAULTS = { ...VAD_DEFAULTS, minSilenceMs: 500, speechPadMs: 200 } as const;
const { maxSpeechSeconds: _notLive, ...LIVE_VAD_SETTINGS } = LIVE_VAD_DEFAULTS;
export const DEFAULT_INTERIM_INTERVAL_MS = 1000;
export const DEFAULT_MAX_UTTERANCE_SECONDS = 30;
export const DEFAULT_MAX_PENDING_UTTERANCES = 2;

export interface NormalizedLiveTranscriberOptions {
  model: string | undefined;
  language: string | undefined;
  prompt: string | undefined;
  sampleRate: number;
  /** false: utterances are cut by commit() alone. */
  vad: Pick<VadSettings, 'threshold' | 'minSpeechMs' | 'minSilenceMs' | 'speechPadMs'> | false;
  interimIntervalMs: number;
  maxUtteranceSeconds: number;
  maxPendingUtterances: number;
  /** Off when undefined; threshold undefined: the model's default. */
  diarize: { maxSpeakers: number; threshold: number | undefined; minSeconds: number } | undefined;
  signal: AbortSignal | undefined;
}

const KEYS = [
  'model',
  'language',
  'prompt',
  'sampleRate',
  'vad',
  'interimIntervalMs',
  'maxUtteranceSeconds',
  'maxPendingUtterances',
  'diarize',
  'signal',
] as const;
const DIARIZE_KEYS = ['maxSpeakers', 'threshold', 'minSeconds'] as const;
const VAD_KEYS = ['threshold', 'minSpeechMs', 'minSilenceMs', 'speechPadMs'] as const;

export function normalizeLiveTranscriberOptions(options: unknown): NormalizedLiveTranscriberOptions {
  const raw = objectOption('options', options ?? {});
  rejectUnknownKeys('options', raw, KEYS);
  const vad = raw.vad === false ? false : objectOption('vad', raw.vad ?? {});
  if (vad) rejectUnknownKeys('vad', vad, VAD_KEYS);
  const prompt = stringOption('prompt', raw.prompt);
  if (prompt !== undefined && prompt.length > 1000) {
    throw new InvalidOptionValueError('prompt', 'at most 1,000 characters', `${prompt.length} characters`);
  }
  return {
    model: stringOption('model', raw.model, 256),
    language: stringOption('language', raw.language, 16),
    prompt,
    sampleRate: integerOption('sampleRate', raw.sampleRate, 8000, 48000) ?? 16000,
    // The VAD's ranges are vad-settings.ts's; only maxSpeechSeconds is not taken (rejected above).
    vad: vad && { ...LIVE_VAD_SETTINGS, ...readVadSettings(vad, 'vad.') },
    interimIntervalMs:
      integerOption('interimIntervalMs', raw.interimIntervalMs, 0, 60000) ?? DEFAULT_INTERIM_INTERVAL_MS,
    maxUtteranceSeconds:
      numberOption('maxUtteranceSeconds', raw.maxUtteranceSeconds, 1, 120) ?? DEFAULT_MAX_UTTERANCE_SECONDS,
    maxPendingUtterances:
      integerOption('maxPendingUtterances', raw.maxPendingUtterances, 1, 100) ?? DEFAULT_MAX_PENDING_UTTERANCES,
    diarize: liveDiarize(raw.diarize),
    signal: signalOption('signal', raw.signal),
  };
}

function liveDiarize(value: unknown): NormalizedLiveTranscriberOptions['diarize'] {
  if (value === undefined || value === false) return undefined;
  if (value !== true && !isPlainObject(value)) {
    throw new InvalidOptionTypeError('diarize', 'true, false or { maxSpeakers, threshold, minSeconds }', value);
  }
  const raw = value === true ? {} : value;
  rejectUnknownKeys('diarize', raw, DIARIZE_KEYS);
  const { maxSpeakers, threshold, minSeconds } = LIVE_SPEAKER_RANGES;
  return {
    maxSpeakers:
      integerOption('diarize.maxSpeakers', raw.maxSpeakers, ...maxSpeakers) ?? LIVE_SPEAKER_DEFAULTS.maxSpeakers,
    threshold: numberOption('diarize.threshold', raw.threshold, ...threshold),
    minSeconds: numberOption('diarize.minSeconds', raw.minSeconds, ...minSeconds) ?? LIVE_SPEAKER_DEFAULTS.minSeconds,
  };
}
