// Runs a native job: wires an AbortSignal to its abort(), removes listeners when done, turns native
// error codes into typed errors, and puts the caller's stack on them (native rejections have none).
import { AudioDecodeError, AudioTooLongError, ModelLoadError, TranscriptionError, VoxmillError } from '../errors.js';
import { isNativeError, type NativeJob } from '../native.js';

/** The error an aborted operation rejects with: the signal's reason, or a standard AbortError. */
export function abortReason(signal: AbortSignal | undefined): unknown {
  return signal?.reason ?? new DOMException('The operation was aborted', 'AbortError');
}

export function toTypedError(error: unknown, maxDurationSeconds?: number): unknown {
  if (!isNativeError(error)) return error;
  switch (error.code) {
    case 'AUDIO_TOO_LONG':
      return new AudioTooLongError(error.message, maxDurationSeconds ?? Number.NaN);
    case 'AUDIO_DECODE_FAILED':
    case 'AUDIO_UNSUPPORTED':
    case 'AUDIO_EMPTY':
    case 'FILE_NOT_FOUND':
      return new AudioDecodeError(error.message, { code: error.code });
    case 'MODEL_LOAD_FAILED':
      return new ModelLoadError(error.message);
    case 'TRANSCRIPTION_FAILED':
    case 'VAD_FAILED':
      return new TranscriptionError(error.message);
    default:
      return new VoxmillError(error.code, error.message);
  }
}

export interface RunJobOptions {
  signal?: AbortSignal | undefined;
  /** Passed to AudioTooLongError. */
  maxDurationSeconds?: number;
}

/** Starts `start()` unless the signal is already aborted, and settles with typed errors. */
export async function runJob<T>(start: () => NativeJob<T>, options: RunJobOptions = {}): Promise<T> {
  const { signal } = options;
  const callerStack = new Error().stack ?? '';
  signal?.throwIfAborted();
  const job = start();
  const onAbort = () => job.abort();
  signal?.addEventListener('abort', onAbort, { once: true });
  try {
    return await job.promise;
  } catch (error) {
    if (isNativeError(error) && error.code === 'ABORTED') throw abortReason(signal);
    const typed = toTypedError(error, options.maxDurationSeconds);
    if (typed instanceof Error) typed.stack = `${typed.name}: ${typed.message}\n${callerStack.split('\n').slice(2).join('\n')}`;
    throw typed;
  } finally {
    signal?.removeEventListener('abort', onAbort);
  }
}
