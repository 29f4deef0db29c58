// Runs a native job: wires an AbortSignal to its abort(), removes listeners when done, turns native
// error codes into typed errors, and puts the caller's stack on them (native rejections have none).
import { AudioDecodeError, AudioTooLongError, ModelLoadError, TranscriptionError, VoxmillError } from '../errors.js';
import { isNativeError, type NativeJob } from '../native.js';

/** The error an aborted operation rejects with: the signal's reason, or a standard AbortError. */
export function abortReason(signal: AbortSignal | undefined): unknown {
  return signal?.reason ?? new DOMException('The operation was aborted', 'AbortError');
}

/** Waits for `promise` unless the signal aborts first, then rejects with its reason (the promise itself goes on). */
export function untilAborted<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return promise;
  if (signal.aborted) return Promise.reject(abortReason(signal));
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(abortReason(signal));
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}

/** Whether `promise` settles within `ms` (its outcome is not wanted, only whether to go on waiting). */
export async function settlesWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const settled = await Promise.race([
    promise.then(
      () => true,
      () => true,
    ),
    new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(false), ms);
    }),
  ]);
  clearTimeout(timer);
  return settled;
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
  /** Receives a promise that settles when the native work has really stopped (which may be after an abort). */
  track?: ((settled: Promise<void>) => void) | undefined;
}

/**
 * Starts `start()` unless the signal is already aborted, and settles with typed errors. On abort the
 * caller is answered at once with the signal's reason; the native work stops at its next checkpoint
 * (whisper.cpp checks between graph passes), which `track` lets a queue wait for before reusing the slot.
 */
export async function runJob<T>(start: () => NativeJob<T>, options: RunJobOptions = {}): Promise<T> {
  const { signal } = options;
  const callerStack = new Error().stack ?? '';
  signal?.throwIfAborted();
  const job = start();
  options.track?.(
    job.promise.then(
      () => undefined,
      () => undefined,
    ),
  );
  const onAbort = () => job.abort();
  signal?.addEventListener('abort', onAbort, { once: true });
  try {
    return await untilAborted(job.promise, signal);
  } catch (error) {
    if (signal?.aborted) throw abortReason(signal);
    if (isNativeError(error) && error.code === 'ABORTED') throw abortReason(signal);
    const typed = toTypedError(error, options.maxDurationSeconds);
    if (typed instanceof Error)
      typed.stack = `${typed.name}: ${typed.message}\n${callerStack.split('\n').slice(2).join('\n')}`;
    throw typed;
  } finally {
    signal?.removeEventListener('abort', onAbort);
  }
}
