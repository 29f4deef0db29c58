/**
 * voxmill — local speech for Node.js. The public API; nothing else is exported.
 * @packageDocumentation
 */
export {
  type AudioInput,
  type AudioSourceInfo,
  DEFAULT_MAX_DURATION_SECONDS,
  DEFAULT_MAX_INPUT_BYTES,
  type DecodedAudio,
  type DecodeOptions,
  decodeAudio,
  WHISPER_SAMPLE_RATE,
} from './audio/decode.js';
export {
  AudioDecodeError,
  AudioTooLongError,
  ChecksumMismatchError,
  ClosedError,
  DownloadError,
  InvalidOptionTypeError,
  InvalidOptionValueError,
  ModelLoadError,
  ModelNotFoundError,
  NativeAddonError,
  QueueFullError,
  TranscriptionError,
  VoxmillError,
} from './errors.js';
export { type CatalogEntry, listCatalog, type ModelKind } from './models/catalog.js';
export {
  defaultModelsDir,
  isInstalled,
  type PullOptions,
  type PullProgress,
  type PullResult,
  pullModel,
} from './models/store.js';
export {
  createSpeech,
  Speech,
  type SpeechOptions,
  type SpeechTranscribeOptions,
  STT_MODEL_IDS,
  type SttModelConfig,
  type SttModelStatus,
} from './speech.js';
export { whisperLanguages } from './stt/languages.js';
export type {
  Segment,
  TimestampGranularity,
  TranscribeOptions,
  Transcription,
  VadOptions,
  Word,
} from './stt/types.js';
export { type WhisperLoadOptions, WhisperModel, type WhisperModelInfo } from './stt/whisper-model.js';
export { devices, versions } from './system.js';
