// Reads and validates a Piper voice config (`<voice>.onnx.json`). A config that would make a broken voice
// (no phoneme map, no pad/start/end symbols, ids beyond the model's symbol table, speaker ids out of range) is
// refused here with a VoiceConfigError naming the file, so it never reaches ONNX Runtime.
import { VoiceConfigError } from '../errors.js';
import { isPlainObject } from '../util/validate.js';

/** Piper quality tiers, fastest first. */
export const VOICE_QUALITIES = ['x_low', 'low', 'medium', 'high'] as const;
export type VoiceQuality = (typeof VOICE_QUALITIES)[number];

/** Piper's own sentence pause (piper `SynthesisConfig.sentence_silence`) when a config does not set one. */
export const DEFAULT_SENTENCE_SILENCE_SECONDS = 0.2;

/** Range of Piper's noise scales (`noise_scale`, `noise_w`), in a voice config and in a synthesis request. */
export const MIN_NOISE_SCALE = 0;
export const MAX_NOISE_SCALE = 10;
/** Range of Piper's `length_scale` (seconds per phoneme relative to training), in a config and in a request. */
export const LENGTH_SCALE_RANGE = [0.05, 20] as const;
/** Range of the pause between sentences, in seconds, in a config and in a request. */
export const SENTENCE_SILENCE_RANGE = [0, 10] as const;

/** The parts of a Piper config synthesis needs, validated. */
export interface VoiceConfig {
  /** Native output rate of the model. */
  readonly sampleRate: number;
  readonly quality: VoiceQuality | undefined;
  /** espeak-ng voice used to phonemize (`en-us`, `de`, ...). */
  readonly espeakVoice: string;
  /** Piper language code as written in the config (`en_US`). */
  readonly languageCode: string;
  readonly noiseScale: number;
  readonly lengthScale: number;
  readonly noiseW: number;
  readonly sentenceSilenceSeconds: number;
  /** Phoneme (one code point) -> ids. */
  readonly phonemeIdMap: ReadonlyMap<number, readonly number[]>;
  /** Phoneme -> replacement phonemes applied before the id map (config `phoneme_map`). */
  readonly phonemeMap: ReadonlyMap<number, readonly number[]>;
  readonly numSpeakers: number;
  /** Speaker name -> sid, in config order. Empty for single-speaker voices. */
  readonly speakers: ReadonlyMap<string, number>;
  readonly dataset: string | undefined;
}

const SAMPLE_RATE_RANGE = [4000, 192_000] as const;

/** Validates a parsed `.onnx.json` document. `file` names it in errors. */
export function parseVoiceConfig(document: unknown, file: string): VoiceConfig {
  const fail = (message: string): never => {
    throw new VoiceConfigError(file, message);
  };
  if (!isPlainObject(document)) return fail('not a JSON object');
  const audio = isPlainObject(document.audio) ? document.audio : fail('"audio" must be an object');
  const sampleRate = audio.sample_rate;
  if (
    typeof sampleRate !== 'number' ||
    !Number.isInteger(sampleRate) ||
    sampleRate < SAMPLE_RATE_RANGE[0] ||
    sampleRate > SAMPLE_RATE_RANGE[1]
  ) {
    fail(`"audio.sample_rate" must be an integer between 4000 and 192000; received ${JSON.stringify(sampleRate)}`);
  }
  const quality = audio.quality;
  if (quality !== undefined && !VOICE_QUALITIES.includes(quality as VoiceQuality)) {
    fail(`"audio.quality" must be one of ${VOICE_QUALITIES.join(', ')}; received ${JSON.stringify(quality)}`);
  }
  const phonemeType = document.phoneme_type ?? 'espeak';
  if (phonemeType !== 'espeak') {
    fail(`"phoneme_type" ${JSON.stringify(phonemeType)} is not supported (only espeak voices are)`);
  }
  const espeak = isPlainObject(document.espeak) ? document.espeak : fail('"espeak" must be an object');
  const espeakVoice = espeak.voice;
  if (typeof espeakVoice !== 'string' || !/^[A-Za-z0-9_+-]{1,40}$/.test(espeakVoice)) {
    fail(`"espeak.voice" must be an espeak-ng voice name; received ${JSON.stringify(espeakVoice)}`);
  }
  const inference = isPlainObject(document.inference) ? document.inference : {};
  const scale = (key: string, fallback: number, min: number, max: number): number => {
    const value = inference[key] ?? fallback;
    if (typeof value !== 'number' || !Number.isFinite(value) || value < min || value > max) {
      fail(`"inference.${key}" must be a number between ${min} and ${max}; received ${JSON.stringify(value)}`);
    }
    return value as number;
  };
  const numSymbols = document.num_symbols;
  const symbolLimit = typeof numSymbols === 'number' && Number.isInteger(numSymbols) ? numSymbols : undefined;
  const phonemeIdMap = readPhonemeIdMap(document.phoneme_id_map, symbolLimit, fail);
  const phonemeMap = readPhonemeMap(document.phoneme_map, fail);
  const { numSpeakers, speakers } = readSpeakers(document, fail);
  const language = isPlainObject(document.language) ? document.language : {};
  const languageCode = typeof language.code === 'string' ? language.code : espeakVoice;
  return Object.freeze({
    sampleRate: sampleRate as number,
    quality: quality as VoiceQuality | undefined,
    espeakVoice: espeakVoice as string,
    languageCode: languageCode as string,
    noiseScale: scale('noise_scale', 0.667, MIN_NOISE_SCALE, MAX_NOISE_SCALE),
    lengthScale: scale('length_scale', 1, ...LENGTH_SCALE_RANGE),
    noiseW: scale('noise_w', 0.8, MIN_NOISE_SCALE, MAX_NOISE_SCALE),
    sentenceSilenceSeconds: scale('sentence_silence', DEFAULT_SENTENCE_SILENCE_SECONDS, ...SENTENCE_SILENCE_RANGE),
    phonemeIdMap,
    phonemeMap,
    numSpeakers,
    speakers,
    dataset: typeof document.dataset === 'string' ? document.dataset : undefined,
  });
}

type Fail = (message: string) => never;

/** One code point per key (Piper's phonemizer emits code points); the pad, start and end symbols must exist. */
function readPhonemeIdMap(value: unknown, numSymbols: number | undefined, fail: Fail): Map<number, number[]> {
  if (!isPlainObject(value)) return fail('"phoneme_id_map" must be an object');
  const map = new Map<number, number[]>();
  for (const [phoneme, ids] of Object.entries(value)) {
    const codePoints = [...phoneme];
    if (codePoints.length !== 1) {
      // Multi-code-point keys cannot be produced by espeak's per-code-point output; they are never looked up.
      continue;
    }
    if (!Array.isArray(ids) || ids.length === 0) {
      fail(`"phoneme_id_map" entry ${JSON.stringify(phoneme)} must be a non-empty array of ids`);
    }
    for (const id of ids as unknown[]) {
      if (typeof id !== 'number' || !Number.isInteger(id) || id < 0 || (numSymbols !== undefined && id >= numSymbols)) {
        fail(
          `"phoneme_id_map" entry ${JSON.stringify(phoneme)} has id ${JSON.stringify(id)}, ` +
            `outside the model's ${numSymbols ?? 'unknown number of'} symbols`,
        );
      }
    }
    map.set(phoneme.codePointAt(0) as number, ids as number[]);
  }
  for (const symbol of ['_', '^', '$']) {
    if (!map.has(symbol.codePointAt(0) as number)) {
      fail(`"phoneme_id_map" has no ${JSON.stringify(symbol)} (Piper's pad, start and end symbols are required)`);
    }
  }
  return map;
}

function readPhonemeMap(value: unknown, fail: Fail): Map<number, number[]> {
  const map = new Map<number, number[]>();
  if (value === undefined || value === null) return map;
  if (!isPlainObject(value)) return fail('"phoneme_map" must be an object');
  for (const [from, to] of Object.entries(value)) {
    if ([...from].length !== 1 || !Array.isArray(to) || !to.every((p) => typeof p === 'string')) {
      fail(`"phoneme_map" entry ${JSON.stringify(from)} must map one phoneme to an array of phonemes`);
    }
    map.set(
      from.codePointAt(0) as number,
      (to as string[]).flatMap((p) => [...p].map((c) => c.codePointAt(0) as number)),
    );
  }
  return map;
}

function readSpeakers(
  document: Record<string, unknown>,
  fail: Fail,
): { numSpeakers: number; speakers: Map<string, number> } {
  const numSpeakers = document.num_speakers ?? 1;
  if (typeof numSpeakers !== 'number' || !Number.isInteger(numSpeakers) || numSpeakers < 1) {
    return fail(`"num_speakers" must be a positive integer; received ${JSON.stringify(numSpeakers)}`);
  }
  const speakers = new Map<string, number>();
  const map = document.speaker_id_map ?? {};
  if (!isPlainObject(map)) return fail('"speaker_id_map" must be an object');
  for (const [name, sid] of Object.entries(map)) {
    if (typeof sid !== 'number' || !Number.isInteger(sid) || sid < 0 || sid >= numSpeakers) {
      fail(`"speaker_id_map" entry ${JSON.stringify(name)} is ${JSON.stringify(sid)}, outside 0..${numSpeakers - 1}`);
    }
    if (!/^[\p{L}\p{N}_.-]{1,64}$/u.test(name)) {
      fail(`"speaker_id_map" entry ${JSON.stringify(name)} is not a usable speaker name`);
    }
    speakers.set(name, sid as number);
  }
  if (numSpeakers > 1 && speakers.size === 0) {
    // Piper voices with speakers but no names: number them so each is still addressable.
    for (let sid = 0; sid < numSpeakers; sid++) speakers.set(String(sid), sid);
  }
  return { numSpeakers, speakers };
}
