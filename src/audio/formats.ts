// Output formats of synthesized speech: names, MIME types and sample rates. Kept apart from the encoder
// so validation and content negotiation can run (and be unit-tested) without loading the native addon.
import { InvalidOptionTypeError, InvalidOptionValueError } from '../errors.js';

/** Formats speech can be encoded to. */
export const SPEECH_FORMATS = ['mp3', 'wav', 'opus', 'pcm16', 'aac', 'flac'] as const;
/**
 * One of {@link SPEECH_FORMATS}: mp3, wav (16-bit PCM), opus (in Ogg), pcm16 (raw little-endian 16-bit), aac
 * (AAC-LC in ADTS frames) or flac (16-bit).
 */
export type SpeechFormat = (typeof SPEECH_FORMATS)[number];

/** The formats POST /v1/speech offers (the speech API's list); the OpenAI-compatible route offers them all. */
export const SPEC_SPEECH_FORMATS = ['mp3', 'wav', 'opus', 'pcm16'] as const satisfies readonly SpeechFormat[];

/** Output sample rates offered for speech (Hz). */
export const SPEECH_SAMPLE_RATES = [8000, 16000, 22050, 24000, 44100, 48000] as const;
/** A rate from {@link SPEECH_SAMPLE_RATES}. */
export type SpeechSampleRate = (typeof SPEECH_SAMPLE_RATES)[number];

/** The rates the Opus codec itself runs at; it has no 22050 or 44100 mode. */
export const OPUS_SAMPLE_RATES = [8000, 12000, 16000, 24000, 48000] as const;

/** Rates a format can be encoded at, ascending: Opus only where both lists agree. */
export function sampleRatesOf(format: SpeechFormat): readonly number[] {
  if (format !== 'opus') return SPEECH_SAMPLE_RATES;
  return SPEECH_SAMPLE_RATES.filter((rate) => (OPUS_SAMPLE_RATES as readonly number[]).includes(rate));
}

/** Whether `value` names a speech format. */
export function isSpeechFormat(value: unknown): value is SpeechFormat {
  return typeof value === 'string' && (SPEECH_FORMATS as readonly string[]).includes(value);
}

/**
 * The `Content-Type` of speech in `format`. Raw PCM has no header, so its type carries the rate and the
 * channel count (RFC 2586 `audio/L16`; the bytes here are little-endian, as OpenAI-style APIs send them).
 */
export function contentTypeOf(format: SpeechFormat, sampleRate: number): string {
  switch (format) {
    case 'mp3':
      return 'audio/mpeg';
    case 'wav':
      return 'audio/wav';
    case 'opus':
      return 'audio/ogg; codecs=opus';
    case 'pcm16':
      return `audio/L16; rate=${sampleRate}; channels=1`;
    case 'aac':
      return 'audio/aac';
    case 'flac':
      return 'audio/flac';
  }
}

/**
 * The rate to encode at when the caller names none: the voice's own rate, so nothing is resampled,
 * unless the format cannot carry it; then the smallest allowed rate above it (Opus: 22050 -> 24000),
 * or the highest allowed rate for voices above 48 kHz.
 */
export function defaultSampleRate(format: SpeechFormat, nativeRate: number): number {
  const rates = sampleRatesOf(format);
  return rates.find((rate) => rate >= nativeRate) ?? (rates[rates.length - 1] as number);
}

/**
 * Checks a requested output rate for `format`. Throws {@link InvalidOptionTypeError} for a non-number and
 * {@link InvalidOptionValueError} for a rate outside {@link SPEECH_SAMPLE_RATES}, or, for Opus, one the
 * codec has no mode for (22050, 44100).
 */
export function checkSampleRate(format: SpeechFormat, rate: unknown, param = 'sampleRate'): number {
  if (typeof rate !== 'number' || Number.isNaN(rate)) throw new InvalidOptionTypeError(param, 'a number (Hz)', rate);
  const allowed = sampleRatesOf(format);
  if (!allowed.includes(rate)) {
    const list = allowed.join(', ');
    const expected =
      format === 'opus'
        ? `one of ${list} for opus (Opus has no 22050 or 44100 Hz mode)`
        : `one of ${SPEECH_SAMPLE_RATES.join(', ')}`;
    throw new InvalidOptionValueError(param, expected, rate);
  }
  return rate;
}
