/**
 * Typed errors. Every error voxmill raises on purpose carries a stable string `code`; validation
 * errors also name the offending option (`param`) and what was received.
 */

import { truncateText } from './util/truncate.js';

/** Base class of voxmill's own errors (not of validation errors, which extend TypeError / RangeError). */
export class VoxmillError extends Error {
  /** Stable, machine-readable error code. */
  readonly code: string;
  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
    this.code = code;
  }
}

/** Audio could not be decoded: not audio, corrupt, truncated, unsupported or empty. */
export class AudioDecodeError extends VoxmillError {
  constructor(message: string, options?: { cause?: unknown; code?: string }) {
    super(options?.code ?? 'AUDIO_DECODE_FAILED', message, options);
  }
}

/** The decoded audio would exceed the configured maximum duration; decoding stopped there. */
export class AudioTooLongError extends AudioDecodeError {
  /** The limit in seconds. */
  readonly maxDurationSeconds: number;
  constructor(message: string, maxDurationSeconds: number) {
    super(message, { code: 'AUDIO_TOO_LONG' });
    this.maxDurationSeconds = maxDurationSeconds;
  }
}

/** A model id or file that is not configured, not installed or not in the catalog. */
export class ModelNotFoundError extends VoxmillError {
  /**
   * For the operator, not in the message (which an HTTP client may read): what is installed instead and where
   * (the CLI prints it after the message).
   */
  readonly hint: string | undefined;
  constructor(message: string, hint?: string) {
    super('MODEL_NOT_FOUND', message);
    this.hint = hint;
  }
}

/** A model file exists but could not be loaded (wrong format, corrupt, out of memory). */
export class ModelLoadError extends VoxmillError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('MODEL_LOAD_FAILED', message, options);
  }
}

/** The per-model queue is full; the caller should retry later (HTTP 429/503). */
export class QueueFullError extends VoxmillError {
  constructor(message: string) {
    super('QUEUE_FULL', message);
  }
}

/** No transcription job with this id for this owner (never was, or expired). */
export class JobNotFoundError extends VoxmillError {
  constructor(id: string) {
    super('JOB_NOT_FOUND', `no job ${id}`);
  }
}

/** The job queue's store (Redis) failed or cannot be reached; the call may succeed later (HTTP 503). */
export class JobStoreError extends VoxmillError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('JOB_STORE_UNAVAILABLE', message, options);
  }
}

/** whisper.cpp failed while transcribing. */
export class TranscriptionError extends VoxmillError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('TRANSCRIPTION_FAILED', message, options);
  }
}

/** The engine was closed; no more work is accepted. */
export class ClosedError extends VoxmillError {
  constructor(message = 'this Speech instance has been closed') {
    super('SPEECH_CLOSED', message);
  }
}

/** The native addon is missing or could not be loaded. */
export class NativeAddonError extends VoxmillError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('NATIVE_ADDON_UNAVAILABLE', message, options);
  }
}

/** A model download failed (HTTP status, network error, size mismatch). */
export class DownloadError extends VoxmillError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('DOWNLOAD_FAILED', message, options);
  }
}

/** A file's sha256 does not match the catalog. The file is not installed. */
export class ChecksumMismatchError extends VoxmillError {
  readonly expected: string;
  readonly actual: string;
  constructor(file: string, expected: string, actual: string) {
    super('CHECKSUM_MISMATCH', `sha256 of ${file} is ${actual}, expected ${expected}`);
    this.expected = expected;
    this.actual = actual;
  }
}

/** PCM could not be encoded (codec or muxer failure, unsupported sample rate for the format). */
export class AudioEncodeError extends VoxmillError {
  constructor(message: string, options?: { cause?: unknown; code?: string }) {
    super(options?.code ?? 'AUDIO_ENCODE_FAILED', message, options);
  }
}

/** No installed voice has this id (or it is installed without its model file). */
export class VoiceNotFoundError extends VoxmillError {
  /** The voice id asked for. */
  readonly voice: string;
  constructor(voice: string, message: string) {
    super('VOICE_NOT_FOUND', message);
    this.voice = voice;
  }
}

/**
 * A voice's files are unusable: its `.onnx.json` is missing, not JSON or not a valid Piper config, or its
 * `.onnx` is missing. `file` names the file at fault.
 */
export class VoiceConfigError extends VoxmillError {
  readonly file: string;
  constructor(file: string, message: string, options?: { cause?: unknown }) {
    super('VOICE_CONFIG_INVALID', `${file}: ${message}`, options);
    this.file = file;
  }
}

/**
 * Speech synthesis failed: the ONNX session could not be created or run, phonemization failed, or the worker
 * thread running it died (`code` `TTS_WORKER_DIED`; the pool replaces the worker).
 */
export class SynthesisError extends VoxmillError {
  constructor(message: string, options?: { cause?: unknown; code?: string }) {
    super(options?.code ?? 'SYNTHESIS_FAILED', message, options);
  }
}

/** Speaker diarization failed (the worker died, or a speaker-embedding model could not be loaded or run). */
export class DiarizationError extends VoxmillError {
  constructor(message: string, options?: { cause?: unknown; code?: string }) {
    super(options?.code ?? 'DIARIZATION_FAILED', message, options);
  }
}

function describe(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(truncateText(value, 80));
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') return String(value);
  if (value === null) return 'null';
  if (value === undefined) return 'undefined';
  if (Array.isArray(value)) return `an array of length ${value.length}`;
  if (ArrayBuffer.isView(value)) return `a ${value.constructor.name} of ${value.byteLength} bytes`;
  if (typeof value === 'function') return 'a function';
  return `an object (${Object.prototype.toString.call(value).slice(8, -1)})`;
}

/** An option has the wrong type. `param` names it; the message says what was expected and received. */
export class InvalidOptionTypeError extends TypeError {
  readonly code = 'INVALID_OPTION_TYPE';
  readonly param: string;
  readonly received: unknown;
  constructor(param: string, expected: string, received: unknown) {
    super(`${param} must be ${expected}; received ${describe(received)}`);
    this.name = 'InvalidOptionTypeError';
    this.param = param;
    this.received = received;
  }
}

/** An option has the right type but a value out of range or not among the allowed ones. */
export class InvalidOptionValueError extends RangeError {
  readonly code = 'INVALID_OPTION_VALUE';
  readonly param: string;
  readonly received: unknown;
  constructor(param: string, expected: string, received: unknown) {
    super(`${param} must be ${expected}; received ${describe(received)}`);
    this.name = 'InvalidOptionValueError';
    this.param = param;
    this.received = received;
  }
}

/**
 * A job's callback URL that callbacks may not reach: plain http where https is required, credentials in it, a host
 * that does not resolve, or one with an address in a refused class (loopback, private, link-local, unique-local,
 * multicast, unspecified, reserved) that is not on `callbackHosts`. The message says which; HTTP answers 400
 * `invalid_callback_url`.
 */
export class CallbackUrlRefusedError extends InvalidOptionValueError {
  constructor(param: string, expected: string, received: unknown) {
    super(param, expected, received);
    this.name = 'CallbackUrlRefusedError';
  }
}

/**
 * A file's SHA-1 does not match the catalog. Used only for models whose upstream publishes a SHA-1 and no
 * sha256; it is a {@link ChecksumMismatchError} (same `code`) whose message names the right digest.
 */
export class Sha1MismatchError extends ChecksumMismatchError {
  constructor(file: string, expected: string, actual: string) {
    super(file, expected, actual);
    this.message = `sha1 of ${file} is ${actual}, expected ${expected}`;
  }
}
