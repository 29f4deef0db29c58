// Diarization settings: per call (how many speakers) and per engine (features, clustering, model), validated with
// errors that name the option.

import { InvalidOptionTypeError, InvalidOptionValueError } from '../errors.js';
import {
  booleanOption,
  integerOption,
  isPlainObject,
  numberOption,
  objectOption,
  rejectUnknownKeys,
} from '../util/validate.js';
import type { DiarizeSettings } from './worker-protocol.js';

/** Per call: how many speakers to expect. */
export interface SpeakerCountOptions {
  /** At least this many speakers (1–32). Default 1. */
  minSpeakers?: number;
  /** At most this many (1–32). Default 8. */
  maxSpeakers?: number;
  /** Exactly this many, when known (1–32): the strongest hint, and the best results. */
  numSpeakers?: number;
}

/** Engine settings of diarization (`createSpeech({ diarization })`). */
export interface DiarizationConfig {
  /**
   * A speaker-embedding ONNX model (catalog id or path) taking 80-bin log-mel frames `[1, T, 80]` and returning an
   * embedding `[1, D]`; default none: built-in MFCC statistics, no download.
   */
  embeddingModel?: string | null;
  /** Clustering stops merging speakers farther apart than this cosine distance. Default 1.15 (built-in features). */
  threshold?: number;
  /** Speaker vectors are taken over windows this long (seconds). Default 1.5. */
  windowSeconds?: number;
  /** ...every this many seconds. Default 0.25. */
  hopSeconds?: number;
  /** Turns shorter than this join a neighbour (seconds). Default 0.3. */
  minTurnSeconds?: number;
  /** Without numSpeakers, a speaker needs this much speech (seconds). Default 5. */
  minSpeakerSeconds?: number;
  /** Two-channel audio whose channels differ: label by the louder channel (`auto`, default) or never (`never`). */
  channels?: 'auto' | 'never';
  /** Diarizations waiting beyond the running one; more fail with QueueFullError. Default 16. */
  maxQueue?: number;
  /** ONNX Runtime threads for the embedding model. Default 1. */
  intraOpThreads?: number;
}

export interface ResolvedDiarizationConfig {
  embeddingModel: string | null;
  base: Omit<DiarizeSettings, 'minSpeakers' | 'maxSpeakers' | 'numSpeakers'>;
  channels: 'auto' | 'never';
  maxQueue: number;
  intraOpThreads: number;
}

const CONFIG_KEYS = [
  'embeddingModel',
  'threshold',
  'windowSeconds',
  'hopSeconds',
  'minTurnSeconds',
  'minSpeakerSeconds',
  'channels',
  'maxQueue',
  'intraOpThreads',
] as const;

export function resolveDiarizationConfig(value: unknown): ResolvedDiarizationConfig {
  const raw = objectOption('diarization', value);
  rejectUnknownKeys('diarization', raw, CONFIG_KEYS);
  const model = raw.embeddingModel;
  if (model !== undefined && model !== null && (typeof model !== 'string' || model === '')) {
    throw new InvalidOptionTypeError('diarization.embeddingModel', 'a catalog id, a file path or null', model);
  }
  const channels = raw.channels ?? 'auto';
  if (channels !== 'auto' && channels !== 'never') {
    throw new InvalidOptionValueError('diarization.channels', '"auto" or "never"', channels);
  }
  const embeddingModel = (model as string | null | undefined) ?? null;
  const windowSeconds = numberOption('diarization.windowSeconds', raw.windowSeconds, 0.25, 10) ?? 1.5;
  const hopSeconds = numberOption('diarization.hopSeconds', raw.hopSeconds, 0.05, 10) ?? 0.25;
  // Frames no window covers would have no speaker.
  if (hopSeconds > windowSeconds) {
    throw new InvalidOptionValueError('diarization.hopSeconds', `at most windowSeconds (${windowSeconds})`, hopSeconds);
  }
  return {
    embeddingModel,
    channels,
    maxQueue: integerOption('diarization.maxQueue', raw.maxQueue, 0, 100_000) ?? 16,
    intraOpThreads: integerOption('diarization.intraOpThreads', raw.intraOpThreads, 1, 64) ?? 1,
    base: {
      // Embedding models give tighter speaker clusters than spectral statistics: a lower merge threshold.
      threshold: numberOption('diarization.threshold', raw.threshold, 0, 2) ?? (embeddingModel ? 0.6 : 1.15),
      windowSeconds,
      hopSeconds,
      minTurnSeconds: numberOption('diarization.minTurnSeconds', raw.minTurnSeconds, 0, 10) ?? 0.3,
      minSpeakerSeconds: numberOption('diarization.minSpeakerSeconds', raw.minSpeakerSeconds, 0, 3600) ?? 5,
      refine: true,
    },
  };
}

export const SPEAKER_COUNT_KEYS = ['minSpeakers', 'maxSpeakers', 'numSpeakers'] as const;

/** Checks the speaker counts of one call (`param` prefixes the names in errors). */
export function speakerCounts(
  raw: Record<string, unknown>,
  param = '',
): Pick<DiarizeSettings, 'minSpeakers' | 'maxSpeakers' | 'numSpeakers'> {
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
export function diarizeOption(
  value: unknown,
): Pick<DiarizeSettings, 'minSpeakers' | 'maxSpeakers' | 'numSpeakers'> | undefined {
  if (value === undefined) return undefined;
  if (isPlainObject(value)) {
    rejectUnknownKeys('diarize', value, SPEAKER_COUNT_KEYS);
    return speakerCounts(value, 'diarize');
  }
  return booleanOption('diarize', value) ? speakerCounts({}) : undefined;
}
