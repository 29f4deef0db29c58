// The engine's diarization settings (`createSpeech({ diarization })`: features, clustering, model), validated with
// errors that name the option, with their defaults.

import { InvalidOptionTypeError, InvalidOptionValueError } from '../errors.js';
import { integerOption, numberOption, objectOption, rejectUnknownKeys } from '../util/validate.js';
import type { DiarizeSettings, SpeakerCounts } from './types.js';

export interface ResolvedDiarizationConfig {
  embeddingModel: string | null;
  base: Omit<DiarizeSettings, keyof SpeakerCounts>;
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
