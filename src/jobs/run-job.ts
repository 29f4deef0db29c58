// Runs one transcription job on the engine, whichever queue it came from: its progress throttled, its cancelling,
// and its failure as a job error that says whether another run could succeed.
import type { EventEmitter } from 'node:events';
import { InvalidOptionTypeError, InvalidOptionValueError, VoxmillError } from '../errors.js';
import type { Transcription } from '../stt/types.js';
import type { JobEngine } from './options.js';
import type { JobError, JobTranscribeOptions } from './types.js';

/** Why a job ended when it was cancelled, as its error says. */
export const CANCELLED: JobError = { code: 'cancelled', message: 'the job was cancelled' };

/** Error codes no other run can fix: the input is what is wrong. */
const PERMANENT = new Set([
  'audio_decode_failed',
  'audio_unsupported',
  'audio_empty',
  'audio_too_long',
  'audio_too_large',
  'audio_expired',
  'model_not_found',
  'invalid_value',
  'invalid_type',
  'cancelled',
]);

/** A failure as the job records it. */
export function jobErrorOf(error: unknown): JobError {
  if (error instanceof InvalidOptionTypeError) return { code: 'invalid_type', message: error.message };
  if (error instanceof InvalidOptionValueError) return { code: 'invalid_value', message: error.message };
  if (error instanceof VoxmillError) return { code: error.code.toLowerCase(), message: error.message };
  const message = error instanceof Error ? error.message : String(error);
  return { code: 'internal_error', message };
}

/** Whether another run of the job could end differently. */
export function isRetriable(error: JobError): boolean {
  return !PERMANENT.has(error.code);
}

export interface RunJobOptions {
  signal: AbortSignal;
  /** Called with the progress, at most once per `progressIntervalMs` (and never with a value lower than before). */
  onProgress: (fraction: number) => void;
  progressIntervalMs: number;
}

export async function runTranscriptionJob(
  engine: JobEngine,
  audio: Buffer,
  options: JobTranscribeOptions,
  { signal, onProgress, progressIntervalMs }: RunJobOptions,
): Promise<Transcription> {
  let reportedAt = 0;
  let reported = 0;
  return engine.transcribe(audio, {
    ...options,
    signal,
    onProgress: (fraction) => {
      const now = performance.now();
      if (fraction <= reported || now - reportedAt < progressIntervalMs) return;
      reported = fraction;
      reportedAt = now;
      onProgress(Math.round(fraction * 1000) / 1000);
    },
  });
}

/** Emits to listeners whose failure must not become the job's (a throwing listener is the host's bug, not the run's). */
export function emitSafely(emitter: EventEmitter, event: string, ...args: unknown[]): void {
  try {
    emitter.emit(event, ...args);
  } catch {
    // a listener threw: the job's outcome stands
  }
}
