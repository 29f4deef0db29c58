// The engine's diarization settings (`createSpeech({ diarization })`: features, clustering, model), validated with
// errors that name the option, with their defaults.

import { InvalidOptionTypeError, InvalidOptionValueError } from '../errors.js';
import { integerOption, numberOption, objectOption, rejectUnknownKeys } from '../util/validate.js';
import type { SpeakerFrontEndKind } from './speaker-front-end.js';
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
 * kept after the development set (it is at its best there too); the Kaldi-fbank models' with CAM++ over windows
 * (bench/diarize-tune-encoders.mjs --pipeline windows, seed 0: 0.5 / 0.6 / 0.7 give 11.8 / 11.5 / 10.7 % DER, but
 * pyannote_sample's two speakers merge at 0.7); ECAPA's the same way on the default set (seed 1), with its
 * short-speaker distance: 0.4-0.6 give one clustering (the small-speaker rule decides the count), 0.7 counts 68.3 %
 * of the speakers right at 11.5 % DER, and from 0.75 pyannote_sample's two speakers merge (BENCHMARKS.md, "ECAPA over
 * windows, calibrated").
 */
export const DEFAULT_DIARIZATION_THRESHOLDS = {
  features: 1.15,
  ge2e: 0.3,
  'kaldi-fbank': 0.6,
  'speechbrain-fbank': 0.7,
} as const;

/**
 * With a segmentation model, the clustering threshold (cosine distance) by encoder: a vector is one local speaker of
 * a 10 s chunk (up to `segmentationEmbedSeconds` of one voice, not a 1.5 s window), so the scale is its own. Chosen on
 * the development set of seed 0 and checked on seed 2's (bench/diarize-tune-encoders.mjs; BENCHMARKS.md, "Diarization
 * at pyannote's level"). CAM++ (the Kaldi-fbank default; WeSpeaker's models share it, unmeasured), 3 s embedded,
 * local speakers split at 0.3 s pauses: 0.7 counts 95.0 % of the default set's (seed 1) speakers right, 93.3 % of seed
 * 2's and 90.0 % of seed 0's, with the short-speaker rule below (0.6 and a short-speaker distance of 0.6: 83.3 / 81.7 / 81.7 %: the
 * stretches split voices); from 0.75 pyannote_sample's two speakers merge. Without the split, 0.6 was best (91.7 / 75.0 / 78.3 %).
 */
export const DEFAULT_SEGMENTATION_THRESHOLDS = { ge2e: 0.3, 'kaldi-fbank': 0.7, 'speechbrain-fbank': 0.6 } as const;

/**
 * With a segmentation model, the short-speaker distance by encoder (see DEFAULT_DIARIZATION_SHORT_SPEAKER_DISTANCES):
 * CAM++ keeps the 2-5 s speakers of the 5-6 person conversations at 0.7 (threshold 0.7, split at 0.3 s pauses: 0.65
 * counts 91.7 / 91.7 / 91.7 % of seeds 1, 2 and 0 right, 0.7 95.0 / 93.3 / 90.0 %, 0.75 fewer; 2, none kept: under
 * half); GE2E's best, 0.3 at its threshold 0.3, counts 45.0 % right (DER 10.8 %).
 */
export const DEFAULT_SEGMENTATION_SHORT_SPEAKER_DISTANCES = {
  ge2e: 0.3,
  'kaldi-fbank': 0.7,
  'speechbrain-fbank': 0.6,
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
 * own lies farther from the others than one split off a speaker by noise or overlap. CAM++'s (the Kaldi-fbank
 * models', at their threshold 0.6) the same way with bench/diarize-tune-encoders.mjs: 0.4 counts 51.7 % of seed 0's
 * speakers right, 2 (none kept) 38.3 %. The built-in features split one voice by content, so they keep none. ECAPA's
 * (at its threshold 0.7) on the default set (seed 1): 0.7 counts 68.3 % right (DER 11.5 %), 0.6 55.0 %, 0.75 68.3 %
 * with more under-counts, 2 (none kept) 36.7 %; the defaults before it was measured (0.6 / 2) 30.0 %.
 */
export const DEFAULT_DIARIZATION_SHORT_SPEAKER_DISTANCES = {
  features: 2,
  ge2e: 0.25,
  'kaldi-fbank': 0.4,
  'speechbrain-fbank': 0.7,
} as const;

/**
 * Seconds between the segmentation model's 10 s chunks. pyannote's pipeline steps 1 s (each moment seen by 10 chunks);
 * here the chunks cost a segmentation run and an embedding per local speaker each. On seed 0's set with CAM++, 5 s
 * gave DER 9.0 % and 85-88 % of the speaker counts right against 2.5 s's 7.7 % and 96.7 % (BENCHMARKS.md).
 */
export const DEFAULT_SEGMENTATION_STEP_SECONDS = 2.5;

/**
 * The most seconds of one local speaker's speech embedded per chunk (the middle of it). Each moment is in 4 chunks
 * (10 s every 2.5 s), so embedding all of it costs the encoder 4 times the speech. Measured with CAM++ on seed 0's
 * set (BENCHMARKS.md): 3 s counts 98.3 % of the speakers right at DER 7.3 %, as 5 s does, and all of it 96.7 % at
 * 7.7 %; 2 s 90.0 % (its vectors are noisier); the first pass took 226 s for 3 s, 294 s for 5 s and 371 s for all.
 */
export const DEFAULT_SEGMENTATION_EMBED_SECONDS = 3;

/**
 * By encoder, the pause that splits a local speaker's talk within a chunk into stretches embedded and labelled on their
 * own (0: never). segmentation-3.0 often gives a short turn of one voice the local speaker of the voice beside it (a
 * 1-2 s turn among 10 s of another's), so the local speaker's one vector is mostly the other voice and the short voice
 * is never a speaker of its own (seed 2's 13 under-counts). With CAM++ at its thresholds (BENCHMARKS.md, "Splitting
 * local speakers at pauses"): the default set's count right 91.7 -> 95.0 % (DER 7.4 -> 6.5 %), seed 2's 75.0 -> 93.3 %
 * (11.0 -> 9.9 %), seed 0's 78.3 -> 90.0 % (11.0 -> 10.0 %); 0.2 s scores alike with more stretches to embed, 0.5 s
 * misses most of it (seed 2: 88.3 %). ECAPA's stretches split voices (the default set's clean conversations: DER 7.0 ->
 * 8.7 %, counts right 90 -> 75 %), and GE2E's too (the default set: 10.7 -> 11.5 %, 40.0 -> 35.0 %): both never
 * split.
 */
export const DEFAULT_SEGMENTATION_SPLIT_PAUSE_SECONDS = {
  ge2e: 0,
  'kaldi-fbank': 0.3,
  'speechbrain-fbank': 0,
} as const;

/**
 * The settings with the clustering distances the call left out taken from the defaults of how speakers are told
 * apart (`method`: the built-in features or the model's front end) and of the pipeline (`segmented`: a vector is a
 * segmentation model's local speaker, not a window, and has its own scale).
 */
export function clusteringSettings(
  settings: DiarizeSettings,
  method: 'features' | SpeakerFrontEndKind,
  segmented: boolean,
): DiarizeSettings & {
  threshold: number;
  mergeDistance: number;
  shortSpeakerDistance: number;
  segmentationSplitPauseSeconds: number;
} {
  const model = segmented && method !== 'features' ? method : undefined;
  return {
    ...settings,
    threshold:
      settings.threshold ?? (model ? DEFAULT_SEGMENTATION_THRESHOLDS[model] : DEFAULT_DIARIZATION_THRESHOLDS[method]),
    mergeDistance: settings.mergeDistance ?? DEFAULT_DIARIZATION_MERGE_DISTANCES[method],
    shortSpeakerDistance:
      settings.shortSpeakerDistance ??
      (model
        ? DEFAULT_SEGMENTATION_SHORT_SPEAKER_DISTANCES[model]
        : DEFAULT_DIARIZATION_SHORT_SPEAKER_DISTANCES[method]),
    segmentationSplitPauseSeconds:
      settings.segmentationSplitPauseSeconds ?? (model ? DEFAULT_SEGMENTATION_SPLIT_PAUSE_SECONDS[model] : 0),
  };
}

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
  'segmentationSplitPauseSeconds',
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
        numberOption('diarization.segmentationStepSeconds', raw.segmentationStepSeconds, 0.5, 9.9) ??
        DEFAULT_SEGMENTATION_STEP_SECONDS,
      segmentationEmbedSeconds:
        numberOption('diarization.segmentationEmbedSeconds', raw.segmentationEmbedSeconds, 0.5, 10) ??
        DEFAULT_SEGMENTATION_EMBED_SECONDS,
      segmentationSplitPauseSeconds: numberOption(
        'diarization.segmentationSplitPauseSeconds',
        raw.segmentationSplitPauseSeconds,
        0,
        10,
      ),
    },
  };
}
