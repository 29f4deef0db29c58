// Per-call diarization options (how many speakers to expect, who to recognize by name), validated with errors that
// name the option.
import { InvalidOptionTypeError, InvalidOptionValueError } from '../errors.js';
import { booleanOption, integerOption, isPlainObject, rejectUnknownKeys } from '../util/validate.js';
import type { KnownSpeaker, SpeakerCounts } from './types.js';

export const SPEAKER_COUNT_KEYS = ['minSpeakers', 'maxSpeakers', 'numSpeakers'] as const;
export const SPEAKER_KEYS = [...SPEAKER_COUNT_KEYS, 'knownSpeakers'] as const;

/**
 * Limits of `knownSpeakers`. A clip needs a second of speech (`minSeconds`, as the VAD finds it) for a stable
 * embedding; 30 s of audio (`maxSeconds`) is ample (OpenAI asks for 2–10 s) and bounds what one call decodes for them
 * (8 x 30 s of 16 kHz float32 is 15 MB, twice over with the worker's copy).
 */
export const KNOWN_SPEAKER_LIMITS = { maxSpeakers: 8, maxNameLength: 64, minSeconds: 1, maxSeconds: 30 } as const;

/** One call's speaker request: the counts, and the speakers to recognize (not yet decoded). */
export interface SpeakerRequest {
  counts: SpeakerCounts;
  knownSpeakers: KnownSpeaker[];
}

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

/**
 * Checks `knownSpeakers`: an array of `{ name, audio }` with unique names. The audio is checked when it is decoded
 * (engine/known-speakers.ts), where its length is known.
 */
export function knownSpeakers(param: string, value: unknown): KnownSpeaker[] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) throw new InvalidOptionTypeError(param, 'an array of { name, audio }', value);
  const { maxSpeakers, maxNameLength } = KNOWN_SPEAKER_LIMITS;
  if (value.length > maxSpeakers) {
    throw new InvalidOptionValueError(param, `at most ${maxSpeakers} speakers`, value);
  }
  const seen = new Set<string>();
  return value.map((entry: unknown, index) => {
    const at = `${param}[${index}]`;
    if (!isPlainObject(entry)) throw new InvalidOptionTypeError(at, 'an object { name, audio }', entry);
    rejectUnknownKeys(at, entry, ['name', 'audio']);
    const { name, audio } = entry;
    if (typeof name !== 'string') throw new InvalidOptionTypeError(`${at}.name`, 'a string', name);
    if (name.trim().length === 0 || name.length > maxNameLength) {
      throw new InvalidOptionValueError(`${at}.name`, `1–${maxNameLength} characters, not only spaces`, name);
    }
    if (seen.has(name)) throw new InvalidOptionValueError(`${at}.name`, 'a name no other known speaker has', name);
    seen.add(name);
    if (audio === undefined || audio === null) {
      throw new InvalidOptionTypeError(
        `${at}.audio`,
        'audio (a path, a Buffer, a Uint8Array or a Float32Array)',
        audio,
      );
    }
    return { name, audio: audio as KnownSpeaker['audio'] };
  });
}

/** The speaker options of one call: counts and known speakers (`param` prefixes the names in errors). */
export function speakerRequest(raw: Record<string, unknown>, param = ''): SpeakerRequest {
  return {
    counts: speakerCounts(raw, param),
    knownSpeakers: knownSpeakers(param ? `${param}.knownSpeakers` : 'knownSpeakers', raw.knownSpeakers),
  };
}

/** `diarize: true | false | { minSpeakers, maxSpeakers, numSpeakers, knownSpeakers }` of a transcription. */
export function diarizeOption(value: unknown): SpeakerRequest | undefined {
  if (value === undefined) return undefined;
  if (isPlainObject(value)) {
    rejectUnknownKeys('diarize', value, SPEAKER_KEYS);
    return speakerRequest(value, 'diarize');
  }
  return booleanOption('diarize', value) ? speakerRequest({}) : undefined;
}
