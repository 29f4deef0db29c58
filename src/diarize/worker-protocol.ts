// Messages between the engine and the diarization worker thread; every message about a job names it by `id`.

import type { SpeechRegion } from '../audio/speech-regions.js';
import type { CancelMessage } from '../util/worker-client.js';
import type { SpeakerTurn } from './turn.js';
import type { DiarizeSettings, KnownVoice, SpeakerModels, UtteranceSpeakers } from './types.js';

export interface DiarizeWorkerData {
  /** The addon the engine loaded (src/native.ts addonPath), for the worker to load too. */
  addon: { path: string; prebuilt: boolean } | undefined;
  /** ONNX Runtime intra-op threads for a speaker-embedding model. */
  intraOpThreads: number;
}

export type ToDiarizeWorker =
  | {
      type: 'diarize';
      id: number;
      /** 16 kHz mono PCM over a SharedArrayBuffer (the caller keeps its own copy for transcription). */
      samples: Float32Array;
      regions: SpeechRegion[];
      settings: DiarizeSettings;
      models: SpeakerModels;
      /** Speakers to recognize by name (only with an embedding model): short clips, copied with the message. */
      knownVoices: KnownVoice[];
    }
  | {
      /** Who spoke in one utterance (live transcription): the pipeline over it, and each speaker's voice. */
      type: 'utterance';
      id: number;
      /** 16 kHz mono PCM of the utterance, copied with the message (seconds, not hours). */
      samples: Float32Array;
      settings: DiarizeSettings;
      embeddingModel: string;
    }
  | CancelMessage
  | { type: 'shutdown' };

export type FromDiarizeWorker =
  /** A heartbeat: the job is still going (sent at the pipeline's checkpoints, at most once a second). */
  | { type: 'progress'; id: number }
  | { type: 'result'; id: number; turns: SpeakerTurn[] }
  /** An `utterance` job's answer. */
  | { type: 'utterance-speakers'; id: number; speakers: UtteranceSpeakers }
  | { type: 'error'; id: number; code: string; message: string };
