// Asynchronous transcription jobs over HTTP: POST /v1/jobs/transcriptions (the fields of /v1/transcriptions plus
// callback_url) -> 202 and the queued job; GET /v1/jobs/{id}; DELETE /v1/jobs/{id}; GET /v1/jobs?status=&limit=.
// A job belongs to the caller that created it (its API key): any other caller gets 404 for it.
import { readFile } from 'node:fs/promises';
import { CallbackUrlRefusedError } from '../../errors.js';
import { checkCallbackUrl } from '../../jobs/callback.js';
import { redactCredentials } from '../../jobs/callback-target.js';
import { DEFAULT_LIST_LIMIT, isJobId, MAX_LIST_LIMIT } from '../../jobs/job-request.js';
import { JOB_STATUSES, type JobQueue, type JobStatus } from '../../jobs/types.js';
import { invalidField } from '../form-fields.js';
import { HttpError } from '../http-error.js';
import { readTranscriptionForm } from '../multipart.js';
import { sendJson } from '../respond.js';
import type { RouteContext } from './context.js';
import { FILE_FIELD, TRANSCRIPTION_FIELDS, transcriptionOptionsOf } from './transcription-form.js';

const JOB_FIELDS = [...TRANSCRIPTION_FIELDS, 'callback_url'] as const;

function queueOf(ctx: RouteContext): JobQueue {
  if (!ctx.options.jobs) throw new HttpError(404, 'jobs_disabled', 'this server does not run transcription jobs');
  return ctx.options.jobs;
}

/** The `{id}` of `/v1/jobs/{id}`; an id that is not one of ours is no job (404), whatever it holds. */
function jobIdOf(ctx: RouteContext): string {
  const path = (ctx.req.url ?? '').split('?', 1)[0] as string;
  const id = path.replace(/\/$/u, '').split('/').pop() ?? '';
  if (!isJobId(id)) throw notFound(id);
  return id;
}

function notFound(id: string): HttpError {
  const shown = id.length > 64 ? `${id.slice(0, 64)}...` : id;
  return new HttpError(404, 'job_not_found', `no job "${shown}"`, { param: 'id' });
}

export async function createTranscriptionJobRoute(ctx: RouteContext): Promise<void> {
  const { req, res, options, signal } = ctx;
  const queue = queueOf(ctx);
  const form = await readTranscriptionForm(req, {
    fieldNames: JOB_FIELDS,
    fileField: FILE_FIELD,
    maxFileBytes: options.maxFileBytes,
    audioFormats: options.audioFormats,
    uploadDir: options.uploadDir,
    fieldLimits: { callback_url: { maxBytes: 2048 } },
    signal,
  });
  try {
    const transcribeOptions = transcriptionOptionsOf(form, options);
    const url = form.fields.get('callback_url') || undefined;
    let callbackUrl: string | undefined;
    if (url !== undefined) {
      try {
        callbackUrl = checkCallbackUrl('callback_url', url);
      } catch (error) {
        const refused = error as CallbackUrlRefusedError;
        throw invalidField(
          'callback_url',
          refused.message.includes('credentials')
            ? 'a URL without credentials (user:password@)'
            : 'an http:// or https:// URL',
          redactCredentials(url),
        );
      }
    }
    const file = form.file as NonNullable<typeof form.file>;
    // The queue keeps the bytes (in memory or in Redis) after this request's temporary file is gone.
    const audio = file.data ?? (await readFile(file.path as string));
    signal.throwIfAborted();
    const job = await queue
      .enqueue({ audio, options: transcribeOptions, owner: ctx.client, ...(callbackUrl ? { callbackUrl } : {}) })
      .catch((error: unknown) => {
        if (error instanceof CallbackUrlRefusedError) {
          // The queue names its own option (callbackUrl); over HTTP the field is callback_url.
          throw new HttpError(400, 'invalid_callback_url', error.message.replace(/^callbackUrl/, 'callback_url'), {
            param: 'callback_url',
            cause: error,
          });
        }
        if ((error as { param?: string }).param === 'callbackUrl') {
          throw new HttpError(400, 'callbacks_disabled', 'this server has no secret to sign callbacks with', {
            param: 'callback_url',
            cause: error,
          });
        }
        throw error;
      });
    // Relative to this route's URL (whatever the mount point): /v1/jobs/{id}.
    res.setHeader('Location', `./${job.id}`);
    sendJson(res, 202, job);
  } finally {
    await form.file?.dispose().catch(() => undefined);
  }
}

export async function getJobRoute(ctx: RouteContext): Promise<void> {
  const id = jobIdOf(ctx);
  const job = await queueOf(ctx).get(id, ctx.client);
  if (!job) throw notFound(id);
  sendJson(ctx.res, 200, job);
}

export async function cancelJobRoute(ctx: RouteContext): Promise<void> {
  const id = jobIdOf(ctx);
  const job = await queueOf(ctx).cancel(id, ctx.client);
  if (!job) throw notFound(id);
  sendJson(ctx.res, 200, job);
}

export async function listJobsRoute(ctx: RouteContext): Promise<void> {
  const query = new URLSearchParams((ctx.req.url ?? '').split('?')[1] ?? '');
  const status = query.get('status') || undefined;
  if (status !== undefined && !(JOB_STATUSES as readonly string[]).includes(status)) {
    throw invalidField('status', `one of ${JOB_STATUSES.join(', ')}`, status);
  }
  const rawLimit = query.get('limit') || undefined;
  const limit = rawLimit === undefined ? DEFAULT_LIST_LIMIT : Number(rawLimit);
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIST_LIMIT) {
    throw invalidField('limit', `an integer from 1 to ${MAX_LIST_LIMIT}`, rawLimit ?? '');
  }
  const jobs = await queueOf(ctx).list({
    owner: ctx.client,
    limit,
    ...(status === undefined ? {} : { status: status as JobStatus }),
  });
  sendJson(ctx.res, 200, { object: 'list', data: jobs });
}
