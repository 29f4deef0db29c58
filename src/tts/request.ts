// Validation of synthesis requests (the rules of POST /v1/speech): every rule names the field and what was received.
import { checkSampleRate, SPEECH_FORMATS, type SpeechFormat } from '../audio/formats.js';
import { InvalidOptionTypeError, InvalidOptionValueError } from '../errors.js';
import { DEFAULT_TTS_MODEL, TTS_MODEL_IDS, type TtsModelId, VOICE_PRECISIONS, type VoicePrecision } from '../tiers.js';
import {
  booleanOption,
  enumOption,
  integerOption,
  numberOption,
  objectOption,
  rejectUnknownKeys,
  signalOption,
} from '../util/validate.js';
import { LENGTH_SCALE_RANGE, MAX_NOISE_SCALE, MIN_NOISE_SCALE, SENTENCE_SILENCE_RANGE } from './voice-config.js';

/** The speech API's input limit (at most 5,000 characters), in Unicode code points. */
export const DEFAULT_MAX_INPUT_CHARS = 5000;
/** The library's speed range (OpenAI's); POST /v1/speech keeps the speech API's 0.5-2.0 (SPEC_SPEED_RANGE). */
export const MIN_SPEED = 0.25;
export const MAX_SPEED = 4;
/** The speed range of POST /v1/speech, as the speech API gives it. */
export const SPEC_SPEED_RANGE = [0.5, 2] as const;
/**
 * POST /v1/speech's ranges for the voice controls that lengthen the audio, narrower than the library's: with the
 * speed's, one request can make at most 8 times the voice's own length, and its pauses at most 2 s each, so one
 * 5,000-character request cannot make hours of audio on a shared server.
 */
export const HTTP_LENGTH_SCALE_RANGE = [0.25, 4] as const;
export const HTTP_SENTENCE_SILENCE_RANGE = [0, 2] as const;

/** A request with defaults applied; `sampleRate` stays undefined until the voice (and its rate) is known. */
export interface NormalizedSynthesizeOptions {
  model: TtsModelId;
  voice: string;
  input: string;
  format: SpeechFormat;
  speed: number;
  sampleRate: number | undefined;
  /** undefined: the voice's own `inference.noise_scale` / `inference.noise_w` / `inference.length_scale`. */
  noiseScale: number | undefined;
  noiseW: number | undefined;
  lengthScale: number | undefined;
  /** undefined: the voice's own `inference.sentence_silence` (Piper's 0.2 s when it has none). */
  sentenceSilence: number | undefined;
  /** Whether to report when each word is spoken. */
  timestamps: SpeechTimestamps;
  /** Whether the voice language's text normalizer runs (numbers, dates, money, units, abbreviations in words). */
  normalize: boolean;
  /** Whether each sentence's audio is scaled to a peak of full scale, as piper-tts does. */
  normalizeAudio: boolean;
  /** undefined: the tier's (the engine's `tts.precision`). */
  precision: VoicePrecision | undefined;
  signal: AbortSignal | undefined;
}

/** What a synthesis reports about its timing: nothing, or when each word is spoken. */
export const SPEECH_TIMESTAMPS = ['none', 'word'] as const;
export type SpeechTimestamps = (typeof SPEECH_TIMESTAMPS)[number];

const KEYS = [
  'model',
  'voice',
  'input',
  'format',
  'speed',
  'sampleRate',
  'noiseScale',
  'noiseW',
  'lengthScale',
  'sentenceSilence',
  'timestamps',
  'normalize',
  'normalizeAudio',
  'precision',
  'signal',
] as const;

export function normalizeSynthesizeOptions(
  options: unknown,
  maxInputChars = DEFAULT_MAX_INPUT_CHARS,
): NormalizedSynthesizeOptions {
  const raw = objectOption('options', options);
  rejectUnknownKeys('options', raw, KEYS);
  const input = raw.input;
  if (typeof input !== 'string') throw new InvalidOptionTypeError('input', 'a string', input);
  checkTextLength('input', input, maxInputChars);
  return { ...normalizeVoiceRequest(raw), input };
}

/** Sentences waiting for synthesis in a live speech before its writes are held back (LiveSpeechOptions). */
export const LIVE_SPEECH_PENDING_RANGE = [1, 1000] as const;
export const DEFAULT_LIVE_SPEECH_PENDING = 4;

/** A live speech request ({@link normalizeSynthesizeOptions} without `input`) with its own limit. */
export interface NormalizedLiveSpeechOptions extends Omit<NormalizedSynthesizeOptions, 'input'> {
  maxPendingSentences: number;
}

const LIVE_KEYS = [...KEYS.filter((key) => key !== 'input' && key !== 'timestamps'), 'maxPendingSentences'] as const;

export function normalizeLiveSpeechOptions(options: unknown): NormalizedLiveSpeechOptions {
  const raw = objectOption('options', options);
  rejectUnknownKeys('options', raw, LIVE_KEYS);
  const [min, max] = LIVE_SPEECH_PENDING_RANGE;
  return {
    ...normalizeVoiceRequest(raw),
    maxPendingSentences:
      integerOption('maxPendingSentences', raw.maxPendingSentences, min, max) ?? DEFAULT_LIVE_SPEECH_PENDING,
  };
}

/** Text of 1 to `max` code points, or InvalidOptionValueError naming `field`. */
export function checkTextLength(field: string, text: string, max: number): void {
  const length = codePointLength(text);
  if (length === 0 || length > max) {
    throw new InvalidOptionValueError(field, `1 to ${max} characters`, `${length} characters`);
  }
}

/** Everything of a request but its text: which voice, how it sounds, what comes out. */
function normalizeVoiceRequest(raw: Record<string, unknown>): Omit<NormalizedSynthesizeOptions, 'input'> {
  const model = enumOption('model', raw.model, TTS_MODEL_IDS) ?? DEFAULT_TTS_MODEL;
  const voice = raw.voice;
  if (typeof voice !== 'string') throw new InvalidOptionTypeError('voice', 'a voice id string', voice);
  if (voice.length === 0 || voice.length > 256) {
    throw new InvalidOptionValueError('voice', 'a voice id of 1 to 256 characters', voice);
  }
  const format = enumOption('format', raw.format, SPEECH_FORMATS) ?? 'mp3';
  const speed = numberOption('speed', raw.speed, MIN_SPEED, MAX_SPEED) ?? 1;
  if (!Number.isFinite(speed))
    throw new InvalidOptionValueError('speed', `between ${MIN_SPEED} and ${MAX_SPEED}`, speed);
  const sampleRate = raw.sampleRate === undefined ? undefined : checkSampleRate(format, raw.sampleRate);
  return {
    model,
    voice,
    format,
    speed,
    sampleRate,
    noiseScale: numberOption('noiseScale', raw.noiseScale, MIN_NOISE_SCALE, MAX_NOISE_SCALE),
    noiseW: numberOption('noiseW', raw.noiseW, MIN_NOISE_SCALE, MAX_NOISE_SCALE),
    lengthScale: numberOption('lengthScale', raw.lengthScale, ...LENGTH_SCALE_RANGE),
    sentenceSilence: numberOption('sentenceSilence', raw.sentenceSilence, ...SENTENCE_SILENCE_RANGE),
    timestamps: enumOption('timestamps', raw.timestamps, SPEECH_TIMESTAMPS) ?? 'none',
    normalize: booleanOption('normalize', raw.normalize) ?? true,
    normalizeAudio: booleanOption('normalizeAudio', raw.normalizeAudio) ?? true,
    precision: enumOption('precision', raw.precision, VOICE_PRECISIONS),
    signal: signalOption('signal', raw.signal),
  };
}

/** Length in Unicode code points (what the API's "characters" means here; an emoji counts once). */
export function codePointLength(text: string): number {
  let count = 0;
  for (const _ of text) count++;
  return count;
}
