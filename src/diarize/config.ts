// The engine's diarization settings (`createSpeech({ diarization })`: features, clustering, model), validated with
// errors that name the option, with their defaults.

import { InvalidOptionTypeError, InvalidOptionValueError } from '../errors.js';
import { integerOption, numberOption, objectOption, rejectUnknownKeys } from '../util/validate.js';
import type { DiarizeSettings, SpeakerCounts } from './types.js';

/**
 * The stall timeout per hour of audio. The worker answers a job only at its end (minutes on hours of audio), so it
 * also sends a heartbeat (`progress`) at the pipeline's checkpoints, at most once a second, and the timeout bounds
 * the gap between two messages, not the job. That gap still grows with the audio: after the last checkpoint the
 * pipeline clusters, resegments and cuts turns over every speech frame in one synchronous stretch (and one long
 * speech region's features are another). Measured with the real worker on a shared 2-core x86 machine at load 5:
 * 5.5 s for 30 minutes, 50 s for 3 hours (1,542 regions). So the timeout scales with the audio: 5 minutes per hour,
 * 15 minutes for 3 hours, 18 times the measured gap (room for an ARM board several times slower, and busy), while
 * a worker that hangs on a short clip is still replaced within 5 minutes.
 */
export const DEFAULT_DIARIZATION_STALL_TIMEOUT_MS = 300_000;

/**
 * The clustering threshold (cosine distance) of each way of telling speakers apart. GE2E's was chosen on the
 * development set (bench/diarize-tune.mjs: 60 generated 2-6 speaker conversations, clean, noise and reverb; 0.3 gave
 * the lowest mean DER, 0.35 merges pyannote_sample's two speakers); the built-in features' on pyannote_sample and
 * kept after the development set (it is at its best there too); the Kaldi-fbank models' (WeSpeaker, 3D-Speaker) is
 * not calibrated here: their weights cannot be fetched on this project's machines.
 */
export const DEFAULT_DIARIZATION_THRESHOLDS = {
  features: 1.15,
  ge2e: 0.3,
  'kaldi-fbank': 0.6,
  'speechbrain-fbank': 0.6,
} as const;

/**
 * With a segmentation model, the clustering threshold (cosine distance) by encoder: a vector is one local speaker of
 * a 10 s chunk (seconds of one voice, not a 1.5 s window), so the scale is its own. Chosen on the development set of
 * seed 0 and checked on seed 2's (bench/diarize-tune-encoders.mjs; BENCHMARKS.md, "Diarization at pyannote's level"):
 * CAM++ (the Kaldi-fbank default; WeSpeaker's models share it, unmeasured) counts 96.7 % of the speakers right from
 * 0.55 to 0.6 with the short-speaker rule below, and pyannote_sample's two speakers merge from 0.65.
 */
export const DEFAULT_SEGMENTATION_THRESHOLDS = { ge2e: 0.3, 'kaldi-fbank': 0.55, 'speechbrain-fbank': 0.6 } as const;

/**
 * With a segmentation model, the short-speaker distance by encoder (see DEFAULT_DIARIZATION_SHORT_SPEAKER_DISTANCES):
 * CAM++ keeps the 2-5 s speakers of the 5-6 person conversations from 0.5 to 0.6 (2: none kept, 46.7 % counts right).
 */
export const DEFAULT_SEGMENTATION_SHORT_SPEAKER_DISTANCES = {
  ge2e: 0.25,
  'kaldi-fbank': 0.55,
  'speechbrain-fbank': 0.55,
} as const;

/**
 * After clustering, speakers whose centroids are closer than this (cosine distance) become one; 0 merges none. GE2E's
 * from the same grid (0.1: mean DER 17.6 → 17.4 %, counts right 36.7 → 40.0 %, pyannote_sample unchanged; 0.15
 * merges pyannote_sample's two speakers); the others are not calibrated, so they merge nothing.
 */
export const DEFAULT_DIARIZATION_MERGE_DISTANCES = {
  features: 0,
  ge2e: 0.1,
  'kaldi-fbank': 0,
  'speechbrain-fbank': 0,
} as const;

/**
 * A speaker with less speech than `minSpeakerSeconds` (but at least `shortSpeakerSeconds`) is kept when every other
 * speaker's centroid is farther than this (cosine distance); 2, the largest distance, keeps none. GE2E's was chosen
 * on the development set of seed 0 and checked on a second one (seed 2) it was not chosen on (bench/diarize-tune.mjs;
 * BENCHMARKS.md): the one-off speakers of 5-6 person meetings say 2-5 s, and a short cluster that is a voice of its
 * own lies farther from the others than one split off a speaker by noise or overlap. The built-in features split
 * one voice by content, and the Kaldi-fbank models are not calibrated here, so they keep none.
 */
export const DEFAULT_DIARIZATION_SHORT_SPEAKER_DISTANCES = {
  features: 2,
  ge2e: 0.25,
  'kaldi-fbank': 2,
  'speechbrain-fbank': 2,
} as const;

/**
 * Seconds between the segmentation model's 10 s chunks. pyannote's pipeline steps 1 s (each moment seen by 10 chunks);
 * here the chunks cost a segmentation run and an embedding per local speaker each, and the step was chosen from
 * measurements on the development sets (BENCHMARKS.md, "Diarization at pyannote's level").
 */
export const DEFAULT_SEGMENTATION_STEP_SECONDS = 2.5;

/**
 * The most seconds of one local speaker's speech embedded per chunk. Each moment is in 4 chunks (10 s every 2.5 s), so
 * embedding all of it costs the encoder 4 times the speech; chosen from measurements (BENCHMARKS.md).
 */
export const DEFAULT_SEGMENTATION_EMBED_SECONDS = 3;

export interface ResolvedDiarizationConfig {
  /** A catalog id or path, `'auto'` (the first installed catalog embedding model, else none) or null (none). */
  embeddingModel: string | null;
  /** A catalog id or path, `'auto'` (the catalog's segmentation model when installed) or null (none). */
  segmentationModel: string | null;
  base: Omit<DiarizeSettings, keyof SpeakerCounts>;
  channels: 'auto' | 'never';
  maxQueue: number;
  intraOpThreads: number;
  stallTimeoutMs: number;
}

const CONFIG_KEYS = [
  'embeddingModel',
  'segmentationModel',
  'segmentationStepSeconds',
  'segmentationEmbedSeconds',
  'threshold',
  'mergeDistance',
  'windowSeconds',
  'hopSeconds',
  'minTurnSeconds',
  'minSpeakerSeconds',
  'shortSpeakerSeconds',
  'shortSpeakerDistance',
  'channels',
  'maxQueue',
  'intraOpThreads',
  'stallTimeoutMs',
] as const;

export function resolveDiarizationConfig(value: unknown): ResolvedDiarizationConfig {
  const raw = objectOption('diarization', value);
  rejectUnknownKeys('diarization', raw, CONFIG_KEYS);
  const model = raw.embeddingModel;
  if (model !== undefined && model !== null && (typeof model !== 'string' || model === '')) {
    throw new InvalidOptionTypeError('diarization.embeddingModel', "a catalog id, a file path, 'auto' or null", model);
  }
  const segmentation = raw.segmentationModel;
  if (
    segmentation !== undefined &&
    segmentation !== null &&
    (typeof segmentation !== 'string' || segmentation === '')
  ) {
    throw new InvalidOptionTypeError(
      'diarization.segmentationModel',
      "a catalog id, a file path, 'auto' or null",
      segmentation,
    );
  }
  const channels = raw.channels ?? 'auto';
  if (channels !== 'auto' && channels !== 'never') {
    throw new InvalidOptionValueError('diarization.channels', '"auto" or "never"', channels);
  }
  // A threshold given without a model was chosen for the built-in features (its scale is theirs, not a model's
  // cosine distances): then no model is picked up by itself.
  const embeddingModel = model === undefined ? (raw.threshold === undefined ? 'auto' : null) : (model as string | null);
  const windowSeconds = numberOption('diarization.windowSeconds', raw.windowSeconds, 0.25, 10) ?? 1.5;
  const hopSeconds = numberOption('diarization.hopSeconds', raw.hopSeconds, 0.05, 10) ?? 0.25;
  // Frames no window covers would have no speaker.
  if (hopSeconds > windowSeconds) {
    throw new InvalidOptionValueError('diarization.hopSeconds', `at most windowSeconds (${windowSeconds})`, hopSeconds);
  }
  return {
    embeddingModel,
    segmentationModel: segmentation === undefined ? 'auto' : (segmentation as string | null),
    channels,
    maxQueue: integerOption('diarization.maxQueue', raw.maxQueue, 0, 100_000) ?? 16,
    intraOpThreads: integerOption('diarization.intraOpThreads', raw.intraOpThreads, 1, 64) ?? 1,
    stallTimeoutMs:
      integerOption('diarization.stallTimeoutMs', raw.stallTimeoutMs, 100, 2 ** 31 - 1) ??
      DEFAULT_DIARIZATION_STALL_TIMEOUT_MS,
    base: {
      // Left undefined, the worker takes the default of the method it ends up using (DEFAULT_DIARIZATION_THRESHOLDS).
      threshold: numberOption('diarization.threshold', raw.threshold, 0, 2),
      mergeDistance: numberOption('diarization.mergeDistance', raw.mergeDistance, 0, 2),
      windowSeconds,
      hopSeconds,
      minTurnSeconds: numberOption('diarization.minTurnSeconds', raw.minTurnSeconds, 0, 10) ?? 0.3,
      minSpeakerSeconds: numberOption('diarization.minSpeakerSeconds', raw.minSpeakerSeconds, 0, 3600) ?? 5,
      shortSpeakerSeconds: numberOption('diarization.shortSpeakerSeconds', raw.shortSpeakerSeconds, 0, 3600) ?? 1,
      shortSpeakerDistance: numberOption('diarization.shortSpeakerDistance', raw.shortSpeakerDistance, 0, 2),
      refine: true,
      segmentationStepSeconds:
        numberOption('diarization.segmentationStepSeconds', raw.segmentationStepSeconds, 0.5, 10) ??
        DEFAULT_SEGMENTATION_STEP_SECONDS,
      segmentationEmbedSeconds:
        numberOption('diarization.segmentationEmbedSeconds', raw.segmentationEmbedSeconds, 0.5, 10) ??
        DEFAULT_SEGMENTATION_EMBED_SECONDS,
    },
  };
}
