// Reads a JSON request body under a size limit, or takes the one a host's body parser already read.
import type { IncomingMessage } from 'node:http';
import { HttpError } from './http-error.js';

/** The media type without parameters, lower-cased (`application/json; charset=utf-8` -> `application/json`). */
export function mediaTypeOf(req: IncomingMessage): string {
  return (req.headers['content-type'] ?? '').split(';', 1)[0]?.trim().toLowerCase() ?? '';
}

/** Whether a body parser in front of the handler (express.json(), body-parser) consumed the body. */
export function bodyAlreadyRead(req: IncomingMessage): boolean {
  return (req as { _body?: unknown })._body === true || req.readableEnded;
}

function tooLarge(limit: number): HttpError {
  return new HttpError(413, 'body_too_large', `the request body is larger than ${limit} bytes`);
}

/** The body's bytes; rejects with 413 as soon as `limit` is passed (from Content-Length, or while reading). */
export async function readBody(req: IncomingMessage, limit: number, signal: AbortSignal): Promise<Buffer> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limit) throw tooLarge(limit);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req.iterator({ destroyOnReturn: false })) {
    signal.throwIfAborted();
    size += (chunk as Buffer).length;
    if (size > limit) throw tooLarge(limit);
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks, size);
}

/** The parsed JSON body of a request, which must be `application/json` (or `+json`). */
export async function readJsonBody(req: IncomingMessage, limit: number, signal: AbortSignal): Promise<unknown> {
  const type = mediaTypeOf(req);
  if (type !== 'application/json' && !type.endsWith('+json')) {
    throw new HttpError(
      415,
      'unsupported_media_type',
      `the body must be JSON with Content-Type: application/json; received ${type ? `"${type}"` : 'no Content-Type'}`,
    );
  }
  if (bodyAlreadyRead(req)) {
    const parsed = (req as { body?: unknown }).body;
    if (parsed === undefined) {
      throw new HttpError(500, 'body_consumed', 'the request body was read by middleware before the voxmill handler');
    }
    return parsed;
  }
  const bytes = await readBody(req, limit, signal);
  if (bytes.length === 0) throw new HttpError(400, 'invalid_json', 'the request body is empty; expected a JSON object');
  try {
    return JSON.parse(bytes.toString('utf8'));
  } catch (error) {
    throw new HttpError(400, 'invalid_json', `the request body is not valid JSON: ${(error as Error).message}`);
  }
}
