// The service tiers of the speech API, in one table: the model ids a client may name, and what each changes. Code
// elsewhere asks this file ("how wide a beam for this id?", "which voice quality?") instead of comparing ids inline.

/** The speech-to-text model ids of the speech API. */
export const STT_MODEL_IDS = ['svc-stt-1', 'svc-stt-1-flash'] as const;
export type SttModelId = (typeof STT_MODEL_IDS)[number];
/** The id a transcription uses when it names none. */
export const DEFAULT_STT_MODEL: SttModelId = 'svc-stt-1';

/** The text-to-speech model ids of the speech API. */
export const TTS_MODEL_IDS = ['svc-tts-1', 'svc-tts-1-flash'] as const;
export type TtsModelId = (typeof TTS_MODEL_IDS)[number];
/** The id a synthesis uses when it names none. */
export const DEFAULT_TTS_MODEL: TtsModelId = 'svc-tts-1';

/** What a speech-to-text id defaults to when its configuration does not say. */
export interface SttTierDefaults {
  /** Beam width: 1 = greedy. */
  beamSize: number;
  /** DTW word timestamps (about 30% slower; see `SttModelConfig.dtw`). */
  dtw: boolean;
  /** Suppress whisper's non-speech tokens (`[BLANK_AUDIO]`, `(music)`, ♪). */
  suppressNonSpeech: boolean;
  /** Each 30 s window sees the text of the windows before it. */
  conditionOnPreviousText: boolean;
  /** Re-decode a stretch whose text loops, without the text before it. */
  repetitionGuard: boolean;
  /** Re-decode a stretch whose speech the decoder skipped. */
  skipGuard: boolean;
}

// Against invented text and lost speech, the same on every tier; measured in BENCHMARKS.md "Invented words" and
// "Skipped speech".
const GUARDS = {
  suppressNonSpeech: false,
  conditionOnPreviousText: true,
  repetitionGuard: true,
  skipGuard: true,
} as const;

const STT_TIERS: Record<SttModelId, SttTierDefaults> = {
  // Accuracy: beam search and DTW word times.
  'svc-stt-1': { beamSize: 5, dtw: true, ...GUARDS },
  // Speed: greedy decoding, token-timestamp word times (and flash attention, which DTW turns off).
  'svc-stt-1-flash': { beamSize: 1, dtw: false, ...GUARDS },
};
/**
 * One rule for every other id (an id the host adds, a model named with the CLI's -m, `WhisperModel` used alone): it
 * decodes as the default tier does (beam 5, DTW word times), so naming a model changes the weights, never the
 * decoding; only svc-stt-1-flash trades accuracy for speed. Each setting can be given per id or per call.
 */
export const CUSTOM_STT_TIER: Readonly<SttTierDefaults> = STT_TIERS[DEFAULT_STT_MODEL];

/** The defaults of a configured speech-to-text id: its tier's, or those of a custom id. */
export function sttTierDefaults(id: string): SttTierDefaults {
  return isSttModelId(id) ? STT_TIERS[id] : CUSTOM_STT_TIER;
}

export function isSttModelId(id: string): id is SttModelId {
  return (STT_MODEL_IDS as readonly string[]).includes(id);
}

export function isTtsModelId(id: string): id is TtsModelId {
  return (TTS_MODEL_IDS as readonly string[]).includes(id);
}

/** The arithmetic a voice runs in: its float weights, or its convolutions quantized to int8 (`precision`). */
export const VOICE_PRECISIONS = ['fp32', 'int8'] as const;
export type VoicePrecision = (typeof VOICE_PRECISIONS)[number];

/**
 * The precision a text-to-speech id runs voices in unless the request or the engine's `tts.precision` says: the best
 * tier in float; the fast one in int8 (en_US-joe-medium on one thread: about 1.25 times as fast, 19 MB instead of 63,
 * its words as well understood within a word in 150; BENCHMARKS.md, "int8 voices").
 */
export const TTS_TIER_PRECISION: Readonly<Record<TtsModelId, VoicePrecision>> = {
  'svc-tts-1': 'fp32',
  'svc-tts-1-flash': 'int8',
};

/** Which installed quality of a voice a text-to-speech id picks. */
export function voicePreference(model: TtsModelId): 'best' | 'fastest' {
  return model === 'svc-tts-1-flash' ? 'fastest' : 'best';
}
