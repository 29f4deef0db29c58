// Checks a job before either queue takes it, so that a job that could never run is refused at once, with the field
// named, instead of failing later on a worker; and the public shape of a job, built the same way by both queues.
import { randomUUID } from 'node:crypto';
import { AudioDecodeError, InvalidOptionTypeError, InvalidOptionValueError, ModelNotFoundError } from '../errors.js';
import { isPlainObject, stringOption } from '../util/validate.js';
import { checkCallbackUrl } from './callback.js';
import { resolveCallbackTarget } from './callback-target.js';
import type { ResolvedJobQueueOptions } from './options.js';
import type { JobStatus, TranscriptionJob, TranscriptionJobRequest } from './types.js';

/** Owners are opaque strings: a digest of an API key, a user id. */
const MAX_OWNER_LENGTH = 256;
export const DEFAULT_OWNER = 'default';

/** A request, checked: owner defaulted, callback URL normalised. */
export interface CheckedJobRequest extends TranscriptionJobRequest {
  owner: string;
}

/**
 * `modelIds`: the models that can run it; undefined on a queue that only adds jobs (its workers may have others).
 */
export function checkJobRequest(
  raw: TranscriptionJobRequest,
  modelIds: readonly string[] | undefined,
  options: Pick<ResolvedJobQueueOptions, 'callbacks' | 'maxAudioBytes'>,
): CheckedJobRequest {
  const { callbacks, maxAudioBytes } = options;
  if (!isPlainObject(raw)) throw new InvalidOptionTypeError('request', 'an object', raw);
  if (!Buffer.isBuffer(raw.audio)) throw new InvalidOptionTypeError('audio', 'a Buffer of audio bytes', raw.audio);
  if (raw.audio.length === 0) throw new InvalidOptionValueError('audio', 'audio bytes', '0 bytes');
  if (raw.audio.length > maxAudioBytes) {
    throw new AudioDecodeError(`the audio is ${raw.audio.length} bytes, more than maxAudioBytes ${maxAudioBytes}`, {
      code: 'AUDIO_TOO_LARGE',
    });
  }
  if (!isPlainObject(raw.options)) throw new InvalidOptionTypeError('options', 'an object', raw.options);
  const model = stringOption('options.model', raw.options.model);
  if (model === undefined) throw new InvalidOptionValueError('options.model', 'a model id', model);
  if (modelIds && !modelIds.includes(model)) {
    throw new ModelNotFoundError(`unknown model "${model}"; available: ${modelIds.join(', ')}`);
  }
  const owner = stringOption('owner', raw.owner, MAX_OWNER_LENGTH) ?? DEFAULT_OWNER;
  const filename = stringOption('filename', raw.filename, 1024);
  const url = stringOption('callbackUrl', raw.callbackUrl);
  if (url !== undefined && !callbacks.secret) {
    throw new InvalidOptionValueError(
      'callbackUrl',
      'absent: this queue has no callbacks.secret to sign callbacks with',
      url,
    );
  }
  return {
    audio: raw.audio,
    options: { ...raw.options },
    owner,
    ...(filename === undefined ? {} : { filename }),
    ...(url === undefined ? {} : { callbackUrl: checkCallbackUrl('callbackUrl', url) }),
  };
}

/**
 * The part of the check that needs a lookup: the callback URL's host must resolve to addresses callbacks may reach
 * (CallbackUrlRefusedError otherwise). Each delivery checks again, against the addresses of that moment.
 */
export async function checkCallbackTarget(
  request: CheckedJobRequest,
  options: Pick<ResolvedJobQueueOptions, 'callbacks'>,
): Promise<void> {
  if (request.callbackUrl !== undefined) {
    await resolveCallbackTarget('callbackUrl', request.callbackUrl, options.callbacks);
  }
}

export function newJobId(): string {
  return `job_${randomUUID().replaceAll('-', '')}`;
}

/** Job ids as `newJobId` makes them: anything else is no job (and never reaches the store). */
export function isJobId(id: unknown): id is string {
  return typeof id === 'string' && /^job_[0-9a-f]{32}$/.test(id);
}

export const unixSeconds = (ms: number): number => Math.floor(ms / 1000);

/** A job just queued. */
export function queuedJob(id: string, request: CheckedJobRequest, createdMs: number): TranscriptionJob {
  return {
    id,
    object: 'transcription.job',
    status: 'queued',
    progress: 0,
    model: request.options.model,
    created_at: unixSeconds(createdMs),
    started_at: null,
    finished_at: null,
    attempts: 0,
    filename: request.filename ?? null,
    callback_url: request.callbackUrl ?? null,
    result: null,
    error: null,
  };
}

export function isEnded(status: JobStatus): boolean {
  return status === 'completed' || status === 'failed' || status === 'cancelled';
}

/** At most this many jobs per `list`. */
export const MAX_LIST_LIMIT = 100;
export const DEFAULT_LIST_LIMIT = 20;
