// The diarization domain: what callers configure and ask for, the settings the pipeline runs with, and what it
// answers. Protocol files (worker-protocol.ts) and the engine import these; these import nothing but other domain types.
import type { AudioInput } from '../audio/decode.js';
import type { SpeechRegion } from '../audio/speech-regions.js';
import type { SpeakerFrontEndKind } from './speaker-front-end.js';
import type { SpeakerTurn } from './turn.js';

/** Per call: how many speakers to expect. */
export interface SpeakerCountOptions {
  /** At least this many speakers (1–32). Default 1. */
  minSpeakers?: number;
  /** At most this many (1–32). Default 8. */
  maxSpeakers?: number;
  /** Exactly this many, when known (1–32): the strongest hint, and the best results. */
  numSpeakers?: number;
}

/**
 * A speaker to recognize by name: a short clip of only their voice (enrollment). Needs a speaker-embedding model
 * (`diarization.embeddingModel`): the clip's embedding is compared with each speaker found, and the closest one within
 * the clustering threshold takes the name. Limits: KNOWN_SPEAKER_LIMITS.
 */
export interface KnownSpeaker {
  /** The label their turns get instead of `speaker_N`: 1–64 characters, unique in the call. */
  name: string;
  /**
   * Up to 30 s of their voice alone, with at least 1 s of speech: anything `transcribe` accepts (a path, a Buffer or
   * Uint8Array, a 16 kHz Float32Array). Embedded over its speech only.
   */
  audio: AudioInput;
}

/** Per call: the speaker counts, and the speakers to recognize by name. */
export interface SpeakerOptions extends SpeakerCountOptions {
  /** Speakers to label by name when their voice is found (at most 8). Default none. */
  knownSpeakers?: KnownSpeaker[];
}

/** A known speaker's clip, decoded to 16 kHz mono, and where in it someone speaks (what the speaker worker embeds). */
export interface KnownVoice {
  name: string;
  samples: Float32Array;
  speech: SpeechRegion[];
}

/**
 * Who spoke in one utterance of a live transcription: its turns with labels local to it, the voice (unit mean
 * embedding) of each local label, and which front end the model takes (its distances have their own scale).
 */
export interface UtteranceSpeakers {
  turns: SpeakerTurn[];
  voices: Record<string, Float32Array>;
  frontEnd: SpeakerFrontEndKind;
}

/** The models a diarize job runs: installed paths, or undefined for none. */
export interface SpeakerModels {
  /** A speaker-embedding ONNX model (Kaldi fbank, SpeechBrain fbank or GE2E input); built-in features when absent. */
  embedding: string | undefined;
  /** A speaker segmentation ONNX model (segmentation-3.0); used only with an embedding model. */
  segmentation: string | undefined;
}

/** Engine settings of diarization (`createSpeech({ diarization })`). */
export interface DiarizationConfig {
  /**
   * A speaker-embedding ONNX model (catalog id or path) returning an embedding `[N, D]`: one taking Kaldi fbank
   * frames `[N, T, 80]` (WeSpeaker; 3D-Speaker, whose input is named `x`, with the Povey window), SpeechBrain's
   * ECAPA-TDNN taking `speechbrain_fbank` `[N, T, 80]` (made by scripts/models/ecapa-to-onnx.py) or Resemblyzer's
   * GE2E encoder taking `mels` `[N, T, 40]` (made by scripts/models/ge2e-to-onnx.py); the front end follows the
   * model's input. Default `'auto'`: the first
   * speaker-embedding model of the catalog that is installed in the models directory (`voxmill models pull`), else
   * built-in MFCC statistics (no download); when `threshold` is given without a model, the built-in features.
   * `null`: always the built-in features.
   */
  embeddingModel?: string | null;
  /**
   * A speaker segmentation ONNX model (catalog id or path): pyannote's segmentation-3.0, taking 10 s chunks of 16 kHz
   * audio `[N, 1, 160000]` and returning the log-probabilities of its 7 powerset classes per frame. With it (and an
   * embedding model), speakers are found per chunk, overlapped speech gets two speakers, and the chunks' speakers are
   * clustered into the recording's. Default `'auto'`: the catalog's segmentation model when installed, and an
   * embedding model is in use. `null`: never (speaker vectors over windows of the VAD's speech).
   */
  segmentationModel?: string | null;
  /**
   * With a segmentation model: its 10 s chunks start this many seconds apart (0.5–9.9: a chunk's frames reach 9.94 s,
   * and a longer step would leave frames between chunks uncovered). Default 2.5.
   */
  segmentationStepSeconds?: number;
  /**
   * With a segmentation model: each local speaker of a chunk (each stretch of it, see segmentationSplitPauseSeconds)
   * is embedded over at most this many seconds of its speech (the middle of it; 0.5–10). Default 3.
   */
  segmentationEmbedSeconds?: number;
  /**
   * With a segmentation model: a local speaker whose talk in a chunk pauses this many seconds or more is embedded,
   * clustered and labelled stretch by stretch (each stretch at least 0.5 s), so a short turn of another voice that the
   * model gave the same local speaker becomes its own speaker's (0–10; 0: never split). Default by encoder: 0.3 for
   * Kaldi-fbank models (CAM++), 0 (never) for ECAPA and GE2E, whose counts it did not help.
   */
  segmentationSplitPauseSeconds?: number;
  /**
   * Clustering stops merging speakers farther apart than this cosine distance; known speakers match within it.
   * Default by how speakers are told apart: built-in features 1.15, GE2E 0.3, Kaldi-fbank models 0.6, SpeechBrain
   * (ECAPA) 0.7; with a segmentation model GE2E 0.3, Kaldi-fbank models (CAM++) 0.7, SpeechBrain (ECAPA) 0.6.
   */
  threshold?: number;
  /**
   * After clustering, speakers whose centroids are closer than this cosine distance become one (0: none). Default by
   * method: GE2E 0.1, the others 0.
   */
  mergeDistance?: number;
  /** Speaker vectors are taken over windows this long (seconds). Default 1.5. */
  windowSeconds?: number;
  /** ...every this many seconds. Default 0.25. */
  hopSeconds?: number;
  /**
   * Turns shorter than this join a neighbour (seconds). Default 0.3. The window pipeline's only: with a segmentation
   * model every run of frames is a turn (pyannote keeps them too), and turns of different speakers may overlap.
   */
  minTurnSeconds?: number;
  /** Without numSpeakers, a speaker needs this much speech (seconds), unless kept as a short speaker. Default 5. */
  minSpeakerSeconds?: number;
  /**
   * A speaker with less than `minSpeakerSeconds` is still kept when it has at least this much speech (seconds) and
   * lies farther than `shortSpeakerDistance` from every other speaker. Default 1.
   */
  shortSpeakerSeconds?: number;
  /**
   * How far (cosine distance) a short speaker must lie from every other speaker to be kept; 2 keeps none. Default by
   * method: GE2E 0.25, Kaldi-fbank models 0.4, SpeechBrain 0.7, the built-in features 2; with a segmentation model
   * GE2E 0.3, Kaldi-fbank models 0.7, SpeechBrain 0.6.
   */
  shortSpeakerDistance?: number;
  /** Two-channel audio whose channels differ: label by the louder channel (`auto`, default) or never (`never`). */
  channels?: 'auto' | 'never';
  /** Diarizations waiting beyond the running one; more fail with QueueFullError. Default 16. */
  maxQueue?: number;
  /** ONNX Runtime threads for the embedding and segmentation models. Default 1. */
  intraOpThreads?: number;
  /**
   * A diarization whose worker sends nothing (not even its heartbeat) for this many ms per hour of audio (an hour at
   * least) fails with DiarizationError `DIARIZATION_WORKER_STALLED`, and the worker is replaced. Default 300000.
   */
  stallTimeoutMs?: number;
}

/** The speaker counts of one call, checked (`minSpeakers` <= `numSpeakers` <= `maxSpeakers`). */
export type SpeakerCounts = Pick<DiarizeSettings, 'minSpeakers' | 'maxSpeakers' | 'numSpeakers'>;

/** The pipeline's settings, as plain data: engine settings plus one call's speaker counts. */
export interface DiarizeSettings {
  minSpeakers: number;
  maxSpeakers: number;
  numSpeakers: number | undefined;
  /** Clustering threshold on cosine distance; undefined: the default of the method (DEFAULT_DIARIZATION_THRESHOLDS). */
  threshold: number | undefined;
  /** Centroid merge distance; undefined: the method's default (DEFAULT_DIARIZATION_MERGE_DISTANCES). */
  mergeDistance: number | undefined;
  windowSeconds: number;
  hopSeconds: number;
  /** Turns shorter than this are given to a neighbour. */
  minTurnSeconds: number;
  /**
   * A speaker needs at least this much speech (seconds) unless `numSpeakers` says otherwise; smaller clusters join
   * their nearest neighbour. Spectral features split one voice by content on short clips; this prior stops that.
   */
  minSpeakerSeconds: number;
  /** A speaker with less than minSpeakerSeconds but at least this much speech may be kept (shortSpeakerDistance). */
  shortSpeakerSeconds: number;
  /**
   * ...when its centroid is farther than this cosine distance from every other speaker's; undefined: the method's
   * default (DEFAULT_DIARIZATION_SHORT_SPEAKER_DISTANCES).
   */
  shortSpeakerDistance: number | undefined;
  /** Reassigns windows to their nearest speaker centroid after clustering. */
  refine: boolean;
  /** With a segmentation model: seconds between the starts of its 10 s chunks. */
  segmentationStepSeconds: number;
  /** With a segmentation model: the most seconds of one local speaker's speech (or stretch of it) embedded per chunk. */
  segmentationEmbedSeconds: number;
  /**
   * With a segmentation model: the pause (seconds) at which a local speaker's talk is split into stretches; 0: none;
   * undefined: the encoder's default (DEFAULT_SEGMENTATION_SPLIT_PAUSE_SECONDS).
   */
  segmentationSplitPauseSeconds: number | undefined;
}

/** Options of `Speech.diarize`. */
export interface DiarizeOptions extends SpeakerOptions {
  /** Reject longer audio with AudioTooLongError. Default: the engine's. */
  maxDurationSeconds?: number;
  signal?: AbortSignal;
}

/**
 * How speakers were told apart: `channels` (two-channel audio, one speaker per channel), `features` (built-in
 * MFCC statistics), `embedding` (the configured speaker-embedding model over windows of speech), `segmentation` (a
 * speaker segmentation model's local speakers, clustered with the embedding model), `tinydiarize` (a tdrz model's
 * turns).
 */
export type DiarizationMethod = 'channels' | 'features' | 'embedding' | 'segmentation' | 'tinydiarize';

/** Who spoke when. */
export interface Diarization {
  /**
   * Speaker turns in time order; `speaker_1`, `speaker_2`, ... numbered by first appearance, or a known speaker's
   * name (see {@link KnownSpeaker}). With the `segmentation` method, turns of two speakers overlap where both talk.
   */
  turns: SpeakerTurn[];
  /** The speakers found, in order of first appearance. */
  speakers: string[];
  /** Audio length in seconds. */
  duration: number;
  /** How speakers were told apart (see {@link DiarizationMethod}). */
  method: DiarizationMethod;
}
