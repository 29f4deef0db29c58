// The settings the diarization worker gets from an engine with default options and a call that names no counts.
import { resolveDiarizationConfig } from '../../src/diarize/config.js';
import { speakerCounts } from '../../src/diarize/request.js';
import type { DiarizeSettings } from '../../src/diarize/types.js';

export const defaultDiarizeSettings: DiarizeSettings = {
  ...resolveDiarizationConfig(undefined).base,
  ...speakerCounts({}),
};
