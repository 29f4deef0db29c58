// The settings the diarization worker gets from an engine with default options and a call that names no counts.

import {
  DEFAULT_DIARIZATION_MERGE_DISTANCES,
  DEFAULT_DIARIZATION_SHORT_SPEAKER_DISTANCES,
  DEFAULT_DIARIZATION_THRESHOLDS,
  resolveDiarizationConfig,
} from '../../src/diarize/config.js';
import type { PipelineOptions } from '../../src/diarize/pipeline.js';
import { speakerCounts } from '../../src/diarize/request.js';

/** With the built-in features' threshold, which the worker would choose. */
export const defaultDiarizeSettings: PipelineOptions = {
  ...resolveDiarizationConfig(undefined).base,
  threshold: DEFAULT_DIARIZATION_THRESHOLDS.features,
  mergeDistance: DEFAULT_DIARIZATION_MERGE_DISTANCES.features,
  shortSpeakerDistance: DEFAULT_DIARIZATION_SHORT_SPEAKER_DISTANCES.features,
  ...speakerCounts({}),
};
