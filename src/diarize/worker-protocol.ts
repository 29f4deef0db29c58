// Messages between the engine and the diarization worker thread.
import type { OnnxWorkerData } from '../util/onnx-worker.js';
import type { Region } from './pipeline.js';
import type { SpeakerTurn } from './turn.js';

export interface DiarizeWorkerData extends OnnxWorkerData {
  /** ONNX Runtime intra-op threads for a speaker-embedding model. */
  intraOpThreads: number;
}

/** The pipeline's settings, as plain data. */
export interface DiarizeSettings {
  minSpeakers: number;
  maxSpeakers: number;
  numSpeakers: number | undefined;
  /** Clustering threshold on cosine distance. */
  threshold: number;
  windowSeconds: number;
  hopSeconds: number;
  /** Turns shorter than this are given to a neighbour. */
  minTurnSeconds: number;
  /**
   * A speaker needs at least this much speech (seconds) unless `numSpeakers` says otherwise; smaller clusters join
   * their nearest neighbour. Spectral features split one voice by content on short clips; this prior stops that.
   */
  minSpeakerSeconds: number;
  /** Reassigns windows to their nearest speaker centroid after clustering. */
  refine: boolean;
}

export type ToDiarizeWorker =
  | {
      type: 'diarize';
      id: number;
      /** 16 kHz mono PCM over a SharedArrayBuffer (the caller keeps its own copy for transcription). */
      samples: Float32Array;
      regions: Region[];
      settings: DiarizeSettings;
      /** A speaker-embedding ONNX model taking 80-bin log-mel frames; built-in features when absent. */
      embeddingModel: string | undefined;
    }
  | { type: 'cancel'; id: number }
  | { type: 'shutdown' };

export type FromDiarizeWorker =
  | { type: 'result'; id: number; turns: SpeakerTurn[] }
  | { type: 'error'; id: number; code: string; message: string };
