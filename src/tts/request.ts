// Validation of synthesis requests (the rules of POST /v1/speech): every rule names the field and what was received.
import { checkSampleRate, SPEECH_FORMATS, type SpeechFormat } from '../audio/formats.js';
import { InvalidOptionTypeError, InvalidOptionValueError } from '../errors.js';
import { DEFAULT_TTS_MODEL, TTS_MODEL_IDS, type TtsModelId } from '../tiers.js';
import { enumOption, numberOption, objectOption, rejectUnknownKeys, signalOption } from '../util/validate.js';
import { MAX_NOISE_SCALE, MIN_NOISE_SCALE } from './voice-config.js';

/** The speech API's input limit (at most 5,000 characters), in Unicode code points. */
export const DEFAULT_MAX_INPUT_CHARS = 5000;
/** The library's speed range (OpenAI's); POST /v1/speech keeps the speech API's 0.5-2.0 (SPEC_SPEED_RANGE). */
export const MIN_SPEED = 0.25;
export const MAX_SPEED = 4;
/** The speed range of POST /v1/speech, as the speech API gives it. */
export const SPEC_SPEED_RANGE = [0.5, 2] as const;

/** A request with defaults applied; `sampleRate` stays undefined until the voice (and its rate) is known. */
export interface NormalizedSynthesizeOptions {
  model: TtsModelId;
  voice: string;
  input: string;
  format: SpeechFormat;
  speed: number;
  sampleRate: number | undefined;
  /** undefined: the voice's own `inference.noise_scale` / `inference.noise_w`. */
  noiseScale: number | undefined;
  noiseW: number | undefined;
  signal: AbortSignal | undefined;
}

const KEYS = ['model', 'voice', 'input', 'format', 'speed', 'sampleRate', 'noiseScale', 'noiseW', 'signal'] as const;

export function normalizeSynthesizeOptions(
  options: unknown,
  maxInputChars = DEFAULT_MAX_INPUT_CHARS,
): NormalizedSynthesizeOptions {
  const raw = objectOption('options', options);
  rejectUnknownKeys('options', raw, KEYS);
  const model = enumOption('model', raw.model, TTS_MODEL_IDS) ?? DEFAULT_TTS_MODEL;
  const voice = raw.voice;
  if (typeof voice !== 'string') throw new InvalidOptionTypeError('voice', 'a voice id string', voice);
  if (voice.length === 0 || voice.length > 256) {
    throw new InvalidOptionValueError('voice', 'a voice id of 1 to 256 characters', voice);
  }
  const input = raw.input;
  if (typeof input !== 'string') throw new InvalidOptionTypeError('input', 'a string', input);
  const length = codePointLength(input);
  if (length === 0 || length > maxInputChars) {
    throw new InvalidOptionValueError('input', `1 to ${maxInputChars} characters`, `${length} characters`);
  }
  const format = enumOption('format', raw.format, SPEECH_FORMATS) ?? 'mp3';
  const speed = numberOption('speed', raw.speed, MIN_SPEED, MAX_SPEED) ?? 1;
  if (!Number.isFinite(speed))
    throw new InvalidOptionValueError('speed', `between ${MIN_SPEED} and ${MAX_SPEED}`, speed);
  const sampleRate = raw.sampleRate === undefined ? undefined : checkSampleRate(format, raw.sampleRate);
  return {
    model,
    voice,
    input,
    format,
    speed,
    sampleRate,
    noiseScale: numberOption('noiseScale', raw.noiseScale, MIN_NOISE_SCALE, MAX_NOISE_SCALE),
    noiseW: numberOption('noiseW', raw.noiseW, MIN_NOISE_SCALE, MAX_NOISE_SCALE),
    signal: signalOption('signal', raw.signal),
  };
}

/** Length in Unicode code points (what the API's "characters" means here; an emoji counts once). */
export function codePointLength(text: string): number {
  let count = 0;
  for (const _ of text) count++;
  return count;
}
