// Per-call diarization options (how many speakers to expect), validated with errors that name the option.
import { InvalidOptionValueError } from '../errors.js';
import { booleanOption, integerOption, isPlainObject, rejectUnknownKeys } from '../util/validate.js';
import type { SpeakerCounts } from './types.js';

export const SPEAKER_COUNT_KEYS = ['minSpeakers', 'maxSpeakers', 'numSpeakers'] as const;

/** Checks the speaker counts of one call (`param` prefixes the names in errors). */
export function speakerCounts(raw: Record<string, unknown>, param = ''): SpeakerCounts {
  const name = (key: string) => (param ? `${param}.${key}` : key);
  const minSpeakers = integerOption(name('minSpeakers'), raw.minSpeakers, 1, 32) ?? 1;
  const maxSpeakers = integerOption(name('maxSpeakers'), raw.maxSpeakers, 1, 32) ?? Math.max(8, minSpeakers);
  const numSpeakers = integerOption(name('numSpeakers'), raw.numSpeakers, 1, 32);
  if (minSpeakers > maxSpeakers) {
    throw new InvalidOptionValueError(name('maxSpeakers'), `at least minSpeakers (${minSpeakers})`, maxSpeakers);
  }
  if (numSpeakers !== undefined && (numSpeakers < minSpeakers || numSpeakers > maxSpeakers)) {
    throw new InvalidOptionValueError(
      name('numSpeakers'),
      `between minSpeakers and maxSpeakers (${minSpeakers}–${maxSpeakers})`,
      numSpeakers,
    );
  }
  return { minSpeakers, maxSpeakers, numSpeakers };
}

/** `diarize: true | false | { minSpeakers, maxSpeakers, numSpeakers }` of a transcription. */
export function diarizeOption(value: unknown): SpeakerCounts | undefined {
  if (value === undefined) return undefined;
  if (isPlainObject(value)) {
    rejectUnknownKeys('diarize', value, SPEAKER_COUNT_KEYS);
    return speakerCounts(value, 'diarize');
  }
  return booleanOption('diarize', value) ? speakerCounts({}) : undefined;
}
