// The settings the diarization worker gets from an engine with default options and a call that names no counts.
import { resolveDiarizationConfig, speakerCounts } from '../../src/diarize/options.js';
import type { DiarizeSettings } from '../../src/diarize/worker-protocol.js';

export const defaultDiarizeSettings: DiarizeSettings = {
  ...resolveDiarizationConfig(undefined).base,
  ...speakerCounts({}),
};
