// Messages between the engine (main thread) and a synthesis worker thread. Plain data only: they cross
// `postMessage` by structured clone, audio by transferring its ArrayBuffer. Every message about a job names it by
// `id` (the job's `jobId`), as the worker client routes them.
import type { OnnxRuntimeChoice } from '../util/onnx-runtime.js';
import type { OnnxWorkerData } from '../util/onnx-worker.js';
import type { CancelMessage } from '../util/worker-client.js';
import type { PhonemeTables } from './phoneme-ids.js';
import type { SpokenWord } from './types.js';

/** Settings of one worker thread, fixed when it starts. */
export interface SynthWorkerSettings {
  /** ONNX Runtime intra-op threads per session. */
  intraOpThreads: number;
  /** ONNX Runtime's CPU memory arena and memory patterns (TtsOptions.memoryArena). */
  memoryArena: boolean;
  /** Release a voice's session after this many ms without use; 0 keeps it. */
  sessionIdleMs: number;
  /** Which ONNX Runtime runs the voices. */
  onnxRuntime: OnnxRuntimeChoice;
}

/** What a synthesis worker receives: its settings and the shared ONNX Runtime in-flight count. */
export interface SynthWorkerData extends SynthWorkerSettings, OnnxWorkerData {}

/**
 * A piece of a job: text (whole sentences), or from SSML a chunk whose parts are text or IPA phonemes spoken at a
 * factor on the length scale, or a pause that takes the place of the pause between sentences there.
 */
export type SynthChunk =
  | string
  /**
   * `joined`: it goes on the sentence before (a rate change inside it), with no pause between. `voice`: spoken by
   * `voices[voice]` of the job (SSML `<voice>`), not the job's own.
   */
  | { parts: ChunkPart[]; lengthFactor: number; joined: boolean; voice?: number }
  | { pause: number };

/** Text to phonemize, or IPA phonemes to speak as given (standing for `text`, which word timings report). */
export type ChunkPart = { text: string } | { ipa: string; text: string };

/** What synthesis needs of a voice (and speaker): the job's own, and each other one SSML `<voice>` names. */
export type VoiceSettings = Pick<
  SynthJob,
  'modelPath' | 'espeakVoice' | 'tables' | 'sampleRate' | 'noiseScale' | 'lengthScale' | 'noiseW' | 'sid'
>;

/** One synthesis job: text chunks for one voice, speaker and speed. */
export interface SynthJob {
  jobId: number;
  /** Other voices chunks name (SSML `<voice>`); their audio is resampled to `sampleRate`. */
  voices?: VoiceSettings[];
  modelPath: string;
  espeakVoice: string;
  tables: PhonemeTables;
  sampleRate: number;
  /** Seconds of silence between sentences. */
  sentenceSilenceSeconds: number;
  noiseScale: number;
  /** The voice's length scale already divided by the requested speed. */
  lengthScale: number;
  noiseW: number;
  /** Speaker id for multi-speaker models. */
  sid: number | undefined;
  /** Normalized text, split into chunks of whole sentences; SSML input gives the richer forms of SynthChunk. */
  chunks: SynthChunk[];
  /** Sentences the worker may synthesize before waiting for more credit. */
  credit: number;
  /** Report when each word is spoken (the voice's graph is edited to return its phoneme durations). */
  wordTimes: boolean;
}

export type ToWorker =
  | { type: 'job'; job: SynthJob }
  /** The consumer took `n` more sentences: the worker may synthesize that many more. */
  | { type: 'credit'; id: number; n: number }
  | CancelMessage
  /** Stop: cancel the job, release every session, then exit the thread (never terminated inside ONNX Runtime). */
  | { type: 'shutdown' };

/** Counters a finished job reports. */
export interface SynthStats {
  sentences: number;
  phonemeIds: number;
  samples: number;
  /** Phonemes the voice has no id for, by code point, with counts. */
  missingPhonemes: Array<[number, number]>;
  phonemizeMs: number;
  inferenceMs: number;
  /** Time to create the ONNX session, when this job had to (0 when it was cached). */
  sessionLoadMs: number;
  /** Time to find or make the voice graph with its duration output, when this job loaded one (0: not asked). */
  graphEditMs: number;
}

export type FromWorker =
  /**
   * One sentence of audio at the voice's rate, after its share of silence; when the job asked, its words, timed
   * from the start of this audio (the pause included).
   */
  | { type: 'audio'; id: number; samples: Float32Array; words?: SpokenWord[] }
  | { type: 'done'; id: number; stats: SynthStats }
  /**
   * The job failed. `fatal`: the worker's state can no longer be trusted (the phonemizer's WASM trapped, and
   * piper-phonemize hangs on the next call after a trap), so the engine replaces the worker.
   */
  | { type: 'error'; id: number; code: string; message: string; fatal: boolean }
  /** Answers a cancel once the worker stopped working on the job. */
  | { type: 'cancelled'; id: number };
