// Validates transcription options and turns them into native parameters.

import { readVadSettings, VAD_SETTING_KEYS } from '../audio/vad-settings.js';
import { diarizeOption, type SpeakerRequest } from '../diarize/request.js';
import { InvalidOptionValueError } from '../errors.js';
import type { NativeTranscribeParams } from '../native.js';
import { defaultCpuThreads } from '../util/cpu-budget.js';
import {
  booleanOption,
  enumOption,
  functionOption,
  integerOption,
  numberOption,
  objectOption,
  rejectUnknownKeys,
  signalOption,
  stringOption,
} from '../util/validate.js';
import { isWhisperLanguage } from './languages.js';
import type { AnnotationPolicy, Segment, TimestampGranularity, VadOptions } from './types.js';

export const TIMESTAMP_GRANULARITIES: readonly TimestampGranularity[] = ['none', 'segment', 'word'];
export const ANNOTATION_POLICIES: readonly AnnotationPolicy[] = ['drop', 'keep'];
export const MAX_PROMPT_LENGTH = 2000;

const TRANSCRIBE_KEYS = [
  'model',
  'language',
  'timestamps',
  'diarize',
  'translate',
  'prompt',
  'threads',
  'beamSize',
  'bestOf',
  'temperature',
  'temperatureIncrement',
  'noSpeechThreshold',
  'entropyThreshold',
  'logprobThreshold',
  'vad',
  'tinydiarize',
  'suppressNonSpeech',
  'conditionOnPreviousText',
  'repetitionGuard',
  'skipGuard',
  'fittedContextSeconds',
  'annotations',
  'segmentDecoding',
  'maxDurationSeconds',
  'signal',
  'onProgress',
  'onSegment',
] as const;

const VAD_KEYS = ['model', ...VAD_SETTING_KEYS, 'overlapSeconds'] as const;

/**
 * Threads per transcription unless configured: at most the CPU budget (every core but one, see defaultCpuThreads),
 * and at most 4, past which whisper gains little.
 */
export function defaultThreads(budget = defaultCpuThreads()): number {
  return Math.max(1, Math.min(4, budget));
}

/**
 * The engine's threads per transcription unless configured: the CPU budget and the one thread it may lend a lone
 * call (so a call alone computes on every core), at most 4. Measured on 2 cores: jfk.wav with tiny.en in 1.4 s on two
 * threads against 1.75 s on one (BENCHMARKS.md, "Faster than faster-whisper").
 */
export function defaultEngineThreads(budget = defaultCpuThreads()): number {
  return Math.max(1, Math.min(4, budget + 1));
}

export interface NormalizedTranscribeOptions {
  /** undefined = detect. */
  language: string | undefined;
  timestamps: TimestampGranularity;
  diarize: boolean;
  /** With diarize: the speaker counts asked for, and the speakers to recognize by name. */
  speakers: SpeakerRequest | undefined;
  /** Native parameters, VAD excluded (resolved by the caller, which knows the configured model). */
  params: NativeTranscribeParams;
  /** undefined = VAD off; otherwise the per-call settings (model may still be missing). */
  vad: VadOptions | undefined;
  /** Re-decode looping stretches (stt/repetition.ts). */
  repetitionGuard: boolean;
  /** Re-decode stretches whose speech the decoder skipped (stt/skipped-speech.ts). */
  skipGuard: boolean;
  /** Audio shorter than this gets an encoder context fitted to it (0: never); undefined: the model's default. */
  fittedContextSeconds: number | undefined;
  /** What happens to segments that are only non-speech annotations. */
  annotations: AnnotationPolicy;
  /** Segments carry SegmentDecoding. */
  segmentDecoding: boolean;
  maxDurationSeconds: number | undefined;
  signal: AbortSignal | undefined;
  onProgress: ((fraction: number) => void) | undefined;
  onSegment: ((segment: Segment) => void) | undefined;
}

export function normalizeLanguage(value: unknown): string | undefined {
  const raw = stringOption('language', value);
  if (raw === undefined) return undefined;
  const code = raw.trim().toLowerCase();
  if (code === '' || code === 'auto') return undefined;
  if (!isWhisperLanguage(code)) {
    throw new InvalidOptionValueError('language', 'an ISO-639-1 code whisper knows (en, de, fr, ...) or "auto"', raw);
  }
  return code;
}

export function normalizeVadOptions(param: string, value: unknown): VadOptions | undefined {
  if (value === undefined || value === false) return undefined;
  if (value === true) return {};
  const raw = objectOption(param, value);
  rejectUnknownKeys(param, raw, VAD_KEYS);
  const vad: VadOptions = {};
  const model = stringOption(`${param}.model`, raw.model);
  if (model !== undefined) vad.model = model;
  Object.assign(vad, readVadSettings(raw, `${param}.`));
  const overlapSeconds = numberOption(`${param}.overlapSeconds`, raw.overlapSeconds, 0, 1);
  if (overlapSeconds !== undefined) vad.overlapSeconds = overlapSeconds;
  return vad;
}

/** What the model id defaults to (its tier's values, or its configuration's). */
export interface TranscribeDefaults {
  beamSize: number;
  threads: number;
  suppressNonSpeech: boolean;
  conditionOnPreviousText: boolean;
  repetitionGuard: boolean;
  skipGuard: boolean;
}

/** Validates `options` (throws InvalidOptionTypeError / InvalidOptionValueError naming the option). */
export function normalizeTranscribeOptions(
  options: unknown,
  defaults: TranscribeDefaults,
): NormalizedTranscribeOptions {
  const raw = objectOption('options', options);
  rejectUnknownKeys('options', raw, TRANSCRIBE_KEYS);
  const language = normalizeLanguage(raw.language);
  const timestamps = enumOption('timestamps', raw.timestamps, TIMESTAMP_GRANULARITIES) ?? 'segment';
  const speakers = diarizeOption(raw.diarize);
  const diarize = speakers !== undefined;
  const beamSize = integerOption('beamSize', raw.beamSize, 1, 16) ?? defaults.beamSize;
  const temperature = numberOption('temperature', raw.temperature, 0, 1);
  const temperatureIncrement = numberOption('temperatureIncrement', raw.temperatureIncrement, 0, 1);
  const params: NativeTranscribeParams = {
    translate: booleanOption('translate', raw.translate) ?? false,
    threads: integerOption('threads', raw.threads, 1, 64) ?? defaults.threads,
    beamSize: beamSize > 1 ? beamSize : 0,
    bestOf: integerOption('bestOf', raw.bestOf, 1, 16) ?? 5,
    temperature: temperature ?? 0,
    temperatureIncrement: temperatureIncrement ?? 0.2,
    noSpeechThreshold: numberOption('noSpeechThreshold', raw.noSpeechThreshold, 0, 1) ?? 0.6,
    entropyThreshold: numberOption('entropyThreshold', raw.entropyThreshold, 0, 100) ?? 2.4,
    logprobThreshold: numberOption('logprobThreshold', raw.logprobThreshold, -100, 0) ?? -1,
    initialPrompt: stringOption('prompt', raw.prompt, MAX_PROMPT_LENGTH) ?? '',
    // Diarization places speakers word by word, so it needs word times even when they are not returned.
    tokenTimestamps: timestamps === 'word' || diarize,
    tinydiarize: booleanOption('tinydiarize', raw.tinydiarize) ?? false,
    suppressNonSpeech: booleanOption('suppressNonSpeech', raw.suppressNonSpeech) ?? defaults.suppressNonSpeech,
    conditionOnPreviousText:
      booleanOption('conditionOnPreviousText', raw.conditionOnPreviousText) ?? defaults.conditionOnPreviousText,
  };
  if (language !== undefined) params.language = language;
  return {
    language,
    timestamps,
    diarize,
    speakers,
    params,
    vad: normalizeVadOptions('vad', raw.vad),
    repetitionGuard: booleanOption('repetitionGuard', raw.repetitionGuard) ?? defaults.repetitionGuard,
    skipGuard: booleanOption('skipGuard', raw.skipGuard) ?? defaults.skipGuard,
    fittedContextSeconds: numberOption('fittedContextSeconds', raw.fittedContextSeconds, 0, 30),
    annotations: enumOption('annotations', raw.annotations, ANNOTATION_POLICIES) ?? 'drop',
    segmentDecoding: booleanOption('segmentDecoding', raw.segmentDecoding) ?? false,
    maxDurationSeconds: numberOption('maxDurationSeconds', raw.maxDurationSeconds, 0.001, 1e7),
    signal: signalOption('signal', raw.signal),
    onProgress: functionOption('onProgress', raw.onProgress),
    onSegment: functionOption('onSegment', raw.onSegment),
  };
}
