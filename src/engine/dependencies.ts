// What the engine is built from: the pieces that touch the addon, worker threads or the file system. `Speech` takes
// them as one object so unit tests can give it fakes (no addon, no models, no threads) and check its composition.
import { existsSync } from 'node:fs';
import { decodeAudio } from '../audio/decode.js';
import { createSpeechDetector } from '../audio/speech-detector.js';
import { detectSpeechRegionsInPlace } from '../audio/speech-regions.js';
import { Diarizer } from '../diarize/diarizer.js';
import type { DiarizationServiceOptions } from '../diarize/service.js';
import { WhisperModel } from '../stt/whisper-model.js';
import { TtsEngine, type TtsEngineConfig } from '../tts/engine.js';
import type { LiveSpeech } from '../tts/live-speech.js';
import type { LiveSpeechOptions, SpeechAudio, SpeechStream, SynthesizeOptions, TtsStatus } from '../tts/types.js';
import type { AudioDecoder } from './audio-admission.js';
import type { SttModelLoader } from './model-registry.js';

/** What the engine needs of the text-to-speech service (`TtsEngine`, or a fake). */
export interface TtsService {
  synthesize(options: SynthesizeOptions): Promise<SpeechStream>;
  synthesizeToBuffer(options: SynthesizeOptions): Promise<SpeechAudio>;
  live(options: LiveSpeechOptions): Promise<LiveSpeech>;
  status(): TtsStatus;
  close(): Promise<void>;
}

/** @internal The engine's building blocks. */
export interface SpeechDependencies {
  decodeAudio: AudioDecoder;
  loadSttModel: SttModelLoader;
  detectSpeechRegions: DiarizationServiceOptions['detectSpeechRegions'];
  createSpeakerWorker: DiarizationServiceOptions['createSpeakerWorker'];
  createTtsService: (config: TtsEngineConfig) => TtsService;
  createSpeechDetector: typeof createSpeechDetector;
  fileExists: (path: string) => boolean;
}

/** The real ones: the addon, worker threads, the file system. */
export const defaultDependencies: SpeechDependencies = {
  decodeAudio,
  loadSttModel: (path, options) => WhisperModel.load(path, options),
  detectSpeechRegions: detectSpeechRegionsInPlace,
  createSpeakerWorker: (options) => new Diarizer(options),
  createTtsService: (config) => new TtsEngine(config),
  createSpeechDetector,
  fileExists: existsSync,
};
