// The engine's text-to-speech settings (`createSpeech({ tts: { ... } })`), validated, with defaults sized from the
// engine's CPU budget: ONNX Runtime threads per voice, and as many syntheses at once as the budget holds.
import { InvalidOptionTypeError } from '../errors.js';
import { TTS_MODEL_IDS, TTS_TIER_PRECISION, type TtsModelId, VOICE_PRECISIONS, type VoicePrecision } from '../tiers.js';
import { defaultCpuThreads } from '../util/cpu-budget.js';
import { booleanOption, enumOption, integerOption, objectOption, rejectUnknownKeys } from '../util/validate.js';
import type { TextNormalizer } from './normalize/normalizers.js';
import { DEFAULT_MAX_INPUT_CHARS } from './request.js';
import { DEFAULT_MAX_CHUNK_CODE_POINTS } from './text.js';

/** Text-to-speech settings of {@link SpeechOptions}. */
export interface TtsOptions {
  /** Syntheses running at once (each on its voice's ONNX model in the addon). Default max(1, min(4, cpuThreads / intraOpThreads)). */
  workers?: number;
  /** ONNX Runtime intra-op threads per session. Default min(4, cpuThreads). */
  intraOpThreads?: number;
  /** Syntheses waiting beyond those running; more fail with QueueFullError. Default 16. */
  maxQueue?: number;
  /**
   * ONNX Runtime's CPU memory arena and memory-pattern planning for voice sessions. On (default true), repeated
   * syntheses reuse their buffers, and a session keeps the largest it has needed until it is released; off, each run
   * allocates and returns its own (measured over four paragraphs: a 77 MB lower peak, 138 MB less held afterwards;
   * BENCHMARKS.md, "The 512 MB edge profile"), at some speed.
   * The 512 MB edge profile turns it off.
   */
  memoryArena?: boolean;
  /**
   * Release a voice's ONNX session after this many ms unused; 0 keeps it. Checked every quarter of it (at least every
   * second), and, below a second, that long after each synthesis: the edge profile's 1 lets the session go as soon
   * as a request ends, so the next one loads it again. Default 300000 (5 minutes).
   */
  sessionIdleMs?: number;
  /** Sentences synthesized ahead of the reader (bounds memory for slow readers). Default 2. */
  lookahead?: number;
  /**
   * A single native step of a synthesis (one sentence's ONNX run, one phonemizer call) that takes longer than this is
   * stopped and fails the synthesis (SynthesisError `TTS_WORKER_STALLED`). Default 120000 ms.
   */
  stallTimeoutMs?: number;
  /**
   * A stream whose reader takes nothing for this long while audio waits is destroyed (SynthesisError
   * `TTS_READER_TIMEOUT`) and its place freed, so an abandoned stream cannot hold one forever. 0 disables.
   * Default 60000 ms.
   */
  readerTimeoutMs?: number;
  /** Longest input in code points. Default 5000 (the speech API's limit). */
  maxInputChars?: number;
  /** Longest piece of text phonemized at once; long sentences are cut at commas or spaces. Default 400. */
  maxChunkChars?: number;
  /**
   * Text normalizers by voice language code (`en_GB`) or language (`en`), used before the built-in ones (English);
   * null turns a language's normalization off. A normalizer gets the text and the voice's language code and returns
   * the text to speak (at most 10 times as long); it runs on the main thread, so it must be fast. Default {}.
   */
  normalizers?: Record<string, TextNormalizer | null>;
  /**
   * The precision each text-to-speech id runs voices in when a request names none (`SynthesizeOptions.precision`):
   * `{ 'svc-tts-1': 'fp32', 'svc-tts-1-flash': 'int8' }` by default; an id left out keeps its default.
   */
  precision?: Partial<Record<TtsModelId, VoicePrecision>>;
}

export type ResolvedTtsOptions = Required<Omit<TtsOptions, 'precision'>> & {
  precision: Readonly<Record<TtsModelId, VoicePrecision>>;
};

const KEYS = [
  'workers',
  'intraOpThreads',
  'memoryArena',
  'maxQueue',
  'sessionIdleMs',
  'lookahead',
  'stallTimeoutMs',
  'readerTimeoutMs',
  'maxInputChars',
  'maxChunkChars',
  'normalizers',
  'precision',
] as const;

function precisionOption(value: unknown): Record<TtsModelId, VoicePrecision> {
  const raw = objectOption('tts.precision', value);
  rejectUnknownKeys('tts.precision', raw, TTS_MODEL_IDS);
  const resolved = { ...TTS_TIER_PRECISION };
  for (const id of TTS_MODEL_IDS)
    resolved[id] = enumOption(`tts.precision.${id}`, raw[id], VOICE_PRECISIONS) ?? resolved[id];
  return resolved;
}

function normalizersOption(value: unknown): Record<string, TextNormalizer | null> {
  const raw = objectOption('tts.normalizers', value);
  for (const [language, normalizer] of Object.entries(raw)) {
    if (normalizer !== null && typeof normalizer !== 'function') {
      throw new InvalidOptionTypeError(
        `tts.normalizers.${language}`,
        'a function (text, language) => text, or null',
        normalizer,
      );
    }
  }
  return { ...raw } as Record<string, TextNormalizer | null>;
}

export function resolveTtsOptions(value: unknown, budget = defaultCpuThreads()): ResolvedTtsOptions {
  const raw = objectOption('tts', value);
  rejectUnknownKeys('tts', raw, KEYS);
  const intraOpThreads = integerOption('tts.intraOpThreads', raw.intraOpThreads, 1, 64) ?? Math.min(4, budget);
  const fitting = Math.floor(budget / intraOpThreads);
  return {
    intraOpThreads,
    workers: integerOption('tts.workers', raw.workers, 1, 64) ?? Math.max(1, Math.min(4, fitting)),
    memoryArena: booleanOption('tts.memoryArena', raw.memoryArena) ?? true,
    maxQueue: integerOption('tts.maxQueue', raw.maxQueue, 0, 100_000) ?? 16,
    sessionIdleMs: integerOption('tts.sessionIdleMs', raw.sessionIdleMs, 0, 2 ** 31 - 1) ?? 300_000,
    lookahead: integerOption('tts.lookahead', raw.lookahead, 1, 64) ?? 2,
    stallTimeoutMs: integerOption('tts.stallTimeoutMs', raw.stallTimeoutMs, 100, 2 ** 31 - 1) ?? 120_000,
    readerTimeoutMs: integerOption('tts.readerTimeoutMs', raw.readerTimeoutMs, 0, 2 ** 31 - 1) ?? 60_000,
    maxInputChars: integerOption('tts.maxInputChars', raw.maxInputChars, 1, 1_000_000) ?? DEFAULT_MAX_INPUT_CHARS,
    maxChunkChars: integerOption('tts.maxChunkChars', raw.maxChunkChars, 16, 100_000) ?? DEFAULT_MAX_CHUNK_CODE_POINTS,
    normalizers: normalizersOption(raw.normalizers),
    precision: precisionOption(raw.precision),
  };
}
