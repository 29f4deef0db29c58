/**
 * voxmill — local speech for Node.js. The public API; nothing else is exported.
 * @packageDocumentation
 */

export {
  type AudioInput,
  type AudioSourceInfo,
  type ChannelMode,
  DEFAULT_MAX_DURATION_SECONDS,
  DEFAULT_MAX_INPUT_BYTES,
  type DecodedAudio,
  type DecodeOptions,
  decodeAudio,
  type StereoChannels,
  WHISPER_SAMPLE_RATE,
} from './audio/decode.js';
export {
  type EncoderOptions,
  StreamingEncoder,
} from './audio/encode.js';
export {
  contentTypeOf,
  defaultSampleRate,
  OPUS_SAMPLE_RATES,
  SPEECH_FORMATS,
  SPEECH_SAMPLE_RATES,
  type SpeechFormat,
  sampleRatesOf,
} from './audio/formats.js';
export {
  createSpeechDetector,
  SpeechDetector,
  type SpeechDetectorOptions,
  type SpeechEvent,
} from './audio/speech-detector.js';
export {
  detectSpeechRegions,
  type SpeechRegion,
  type SpeechRegionOptions,
} from './audio/speech-regions.js';
export { type DiarizationScore, type SpeakerTurns, scoreDiarization } from './diarize/der.js';
export { formatRttm, parseRttm } from './diarize/rttm.js';
export type { SpeakerTurn } from './diarize/turn.js';
export type {
  Diarization,
  DiarizationConfig,
  DiarizationMethod,
  DiarizeOptions,
  KnownSpeaker,
  SpeakerCountOptions,
  SpeakerOptions,
} from './diarize/types.js';
export type { SpeechOptions } from './engine/config.js';
export type { SttModelStatus } from './engine/model-registry.js';
export {
  AudioDecodeError,
  AudioEncodeError,
  AudioTooLongError,
  CallbackUrlRefusedError,
  ChecksumMismatchError,
  ClosedError,
  DiarizationError,
  DownloadError,
  InvalidOptionTypeError,
  InvalidOptionValueError,
  JobNotFoundError,
  JobStoreError,
  ModelLoadError,
  ModelNotFoundError,
  NativeAddonError,
  QueueFullError,
  SynthesisError,
  TranscriptionError,
  VoiceConfigError,
  VoiceNotFoundError,
  VoxmillError,
} from './errors.js';
export type { AudioContainer } from './http/audio-sniff.js';
export type { ApiKey, AuthorizeFunction } from './http/auth.js';
export { createSpeechHandler, type NextFunction, type SpeechHandler } from './http/handler.js';
export { HttpError, type HttpErrorBody, type HttpErrorType } from './http/http-error.js';
export {
  createOpsHandler,
  type OpsHandler,
  type OpsHandlerOptions,
  type ReadinessEngine,
} from './http/ops-handler.js';
export type {
  SpeechEngine,
  SpeechHandlerLimits,
  SpeechHandlerOptions,
} from './http/options.js';
export type { RealtimeOptions } from './http/realtime/realtime-options.js';
export type { UpgradeHandler } from './http/realtime/realtime-upgrade.js';
export type { RequestLogEntry } from './http/request-log.js';
export {
  createSpeechServer,
  type SpeechServer,
  type SpeechServerOptions,
  type SpeechServerTls,
} from './http/server.js';
export { type JobCallbackBody, signCallback, verifyCallbackSignature } from './jobs/callback.js';
export type { CallbackLookup, ResolvedAddress } from './jobs/callback-target.js';
export { createJobQueue } from './jobs/job-queue.js';
export type { JobCallbackOptions, JobEngine, JobQueueOptions } from './jobs/options.js';
export type {
  JobCounts,
  JobError,
  JobQueue,
  JobQueueEvents,
  JobStatus,
  JobTranscribeOptions,
  ListJobsOptions,
  TranscriptionJob,
  TranscriptionJobRequest,
} from './jobs/types.js';
export {
  createSpeechMetrics,
  type MetricsEngine,
  type ObservedRequest,
  type SpeechMetrics,
  type SpeechMetricsOptions,
} from './metrics/speech-metrics.js';
export {
  type CatalogEmbedding,
  type CatalogEntry,
  type CatalogVoice,
  listCatalog,
  type ModelKind,
} from './models/catalog.js';
export {
  defaultModelsDir,
  isInstalled,
  type PullOptions,
  type PullProgress,
  type PullResult,
  pullModel,
} from './models/store.js';
export { createSpeech, Speech, type TranscribedEvent } from './speech.js';
export { whisperLanguages } from './stt/languages.js';
export type { LiveDiarizeOptions, LiveTranscriberOptions } from './stt/live-options.js';
export { LiveTranscriber, type LiveTranscriptionEvent } from './stt/live-transcriber.js';
export type {
  AnnotationPolicy,
  Segment,
  SegmentDecoding,
  SpeechTranscribeOptions,
  SttModelConfig,
  TimestampGranularity,
  TokenLogprob,
  TranscribeOptions,
  Transcription,
  VadOptions,
  Word,
} from './stt/types.js';
export {
  type WhisperLoadOptions,
  WhisperModel,
  type WhisperModelInfo,
  type WhisperQuantization,
} from './stt/whisper-model.js';
export { backends, type CpuInfo, cpuInfo, devices, gpuBackends, versions } from './system.js';
export { STT_MODEL_IDS, TTS_MODEL_IDS, type TtsModelId } from './tiers.js';
export type { TtsOptions } from './tts/config.js';
export { LiveSpeech } from './tts/live-speech.js';
export type {
  ListVoicesOptions,
  LiveSentence,
  LiveSpeechOptions,
  SpeechAudio,
  SpeechAudioInfo,
  SpeechStream,
  SpokenWord,
  SynthesisProgress,
  SynthesizeOptions,
  TtsStatus,
  Voice,
  VoiceGender,
} from './tts/types.js';
