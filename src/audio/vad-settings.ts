// Silero VAD settings, once: their names, ranges and defaults, shared by `detectSpeechRegions()` and the
// transcription's `vad` option. The addon gets every value filled in and re-defaults nothing (whisper.cpp's own
// defaults, which these copy, never apply).
import { integerOption, numberOption } from '../util/validate.js';

/** How speech is told from silence. Every field is optional where callers give it; see {@link VAD_DEFAULTS}. */
export interface VadSettings {
  /** Speech probability threshold, 0–1. */
  threshold: number;
  /** Shorter speech is dropped, in ms (0–60000). */
  minSpeechMs: number;
  /** Silence needed to end speech, in ms (0–60000). */
  minSilenceMs: number;
  /** Longer speech is split, in seconds (0–3600; 0 = no limit). */
  maxSpeechSeconds: number;
  /** Padding around speech, in ms (0–10000). */
  speechPadMs: number;
}

/** whisper.cpp's defaults (`whisper_vad_default_params`), with "no limit" spelled 0. */
export const VAD_DEFAULTS: Readonly<VadSettings> = {
  threshold: 0.5,
  minSpeechMs: 250,
  minSilenceMs: 100,
  maxSpeechSeconds: 0,
  speechPadMs: 30,
};

/**
 * A transcription's VAD: whisper.cpp's defaults with 300 ms of padding instead of 30, so no word is clipped. With
 * 30 ms, real base weights lost both short islands in room tone (31.3 % WER, 0.0 % with 200; BENCHMARKS.md
 * "Invented words"); 400 ms cost tiny.en a word in pink noise. 200 ms clipped the "st" of "stuff it into you"
 * (1089-134686-0001.flac, the native + OpenBLAS build: "suffered into you"); 300 ms keeps it, and on the non-speech
 * set invents nothing, with islands' WER equal (tiny.en) or one word better in all (base).
 */
export const TRANSCRIPTION_VAD_DEFAULTS: Readonly<VadSettings> = { ...VAD_DEFAULTS, speechPadMs: 300 };

/** Transcription only: audio kept past each speech end, in seconds (whisper.cpp's `samples_overlap`). */
export const DEFAULT_VAD_OVERLAP_SECONDS = 0.1;

/** [min, max, integer] of each setting. */
const VAD_RANGES: Readonly<Record<keyof VadSettings, readonly [number, number, boolean]>> = {
  threshold: [0, 1, false],
  minSpeechMs: [0, 60_000, true],
  minSilenceMs: [0, 60_000, true],
  maxSpeechSeconds: [0, 3600, false],
  speechPadMs: [0, 10_000, true],
};

export const VAD_SETTING_KEYS = Object.keys(VAD_RANGES) as ReadonlyArray<keyof VadSettings>;

/**
 * The settings a caller gave, checked (`prefix` names them in errors: `vad.threshold`); absent ones stay absent.
 * @throws InvalidOptionTypeError / InvalidOptionValueError naming the setting.
 */
export function readVadSettings(raw: Record<string, unknown>, prefix: string): Partial<VadSettings> {
  const settings: Partial<VadSettings> = {};
  for (const key of VAD_SETTING_KEYS) {
    const [min, max, integer] = VAD_RANGES[key];
    const value = (integer ? integerOption : numberOption)(`${prefix}${key}`, raw[key], min, max);
    if (value !== undefined) settings[key] = value;
  }
  return settings;
}
