// What one synthesis is asked to do, and what it reports: the engine builds a SynthJob from a request, the
// Synthesizer (synthesizer.ts) runs it.
import type { PhonemeTables } from './phoneme-ids.js';

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
  /** Report when each word is spoken (the voice's graph is edited to return its phoneme durations). */
  wordTimes: boolean;
  /** Run the voices with their convolutions in int8 (edited-voice.ts); a voice that cannot be runs in float. */
  int8: boolean;
  /** Scale each sentence to a peak of full scale (piper-tts's normalize_audio). */
  normalizeAudio: boolean;
}

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
