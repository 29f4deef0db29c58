// Request bodies: the media type check, JSON read under a size limit (or taken from a host's body parser), and the
// errors shared by the JSON and multipart routes.
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

/**
 * What a body parser that consumed the body left on `req.body`: its bytes (express.raw(): a Buffer), its text
 * (express.text(): a string), a parsed value (express.json()), or nothing the handler can use (koa-bodyparser keeps
 * it on ctx.request.body; express.urlencoded() leaves an object for a form it could not read).
 */
export function parsedBody(req: IncomingMessage): { bytes: Buffer; text: boolean } | { value: unknown } | undefined {
  const body = (req as { body?: unknown }).body;
  if (Buffer.isBuffer(body)) return { bytes: body, text: false };
  if (body instanceof Uint8Array) {
    return { bytes: Buffer.from(body.buffer, body.byteOffset, body.byteLength), text: false };
  }
  // Text is bytes decoded as UTF-8: fine for JSON, not for a binary upload (invalid bytes became U+FFFD).
  if (typeof body === 'string') return { bytes: Buffer.from(body, 'utf8'), text: true };
  if (body === undefined || body === null) return undefined;
  return { value: body };
}

/** 415 unless `accepts` takes the request's media type; `expected` says in the message what was wanted. */
export function requireMediaType(req: IncomingMessage, expected: string, accepts: (type: string) => boolean): void {
  const type = mediaTypeOf(req);
  if (accepts(type)) return;
  throw new HttpError(
    415,
    'unsupported_media_type',
    `the body must be ${expected}; received ${type ? `"${type}"` : 'no Content-Type'}`,
  );
}

/** The answer when middleware in front of the handler read a body it needed (a host misconfiguration: 500). */
export function bodyConsumedError(): HttpError {
  return new HttpError(
    500,
    'body_consumed',
    'the request body was read by middleware before the voxmill handler and not left on req.body as a Buffer, a ' +
      'string or parsed JSON; mount the handler before body parsers (app.use(handler) ahead of express.json() or ' +
      "koa-bodyparser), or let the parser keep the raw bytes (express.raw({ type: () => true, limit: '50mb' }))",
  );
}

function tooLarge(limit: number): HttpError {
  return new HttpError(413, 'body_too_large', `the request body is larger than ${limit} bytes`);
}

/**
 * The body's bytes; rejects with 413 as soon as `limit` is passed (from Content-Length, or while reading), and
 * with the signal's reason when it aborts. On rejection the request is left paused for the handler to drain.
 */
export function readBody(req: IncomingMessage, limit: number, signal: AbortSignal): Promise<Buffer> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limit) return Promise.reject(tooLarge(limit));
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const settle = (error: unknown, body?: Buffer) => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
      req.off('close', onClose);
      signal.removeEventListener('abort', onAbort);
      if (body) {
        resolve(body);
      } else {
        req.pause();
        reject(error);
      }
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) settle(tooLarge(limit));
      else chunks.push(chunk);
    };
    const onEnd = () => settle(undefined, Buffer.concat(chunks, size));
    const onError = (error: Error) => settle(error);
    const onClose = () => settle(new HttpError(400, 'invalid_body', 'the request body ended early'));
    const onAbort = () => settle(signal.reason);
    req.on('data', onData);
    req.once('end', onEnd);
    req.once('error', onError);
    req.once('close', onClose);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/** The parsed JSON body of a request, which must be `application/json` (or `+json`). */
export async function readJsonBody(req: IncomingMessage, limit: number, signal: AbortSignal): Promise<unknown> {
  requireMediaType(
    req,
    'JSON with Content-Type: application/json',
    (type) => type === 'application/json' || type.endsWith('+json'),
  );
  let bytes: Buffer;
  if (bodyAlreadyRead(req)) {
    const parsed = parsedBody(req);
    if (parsed === undefined) throw bodyConsumedError();
    if ('value' in parsed) return parsed.value;
    if (parsed.bytes.length > limit) throw tooLarge(limit);
    bytes = parsed.bytes;
  } else {
    bytes = await readBody(req, limit, signal);
  }
  if (bytes.length === 0) throw new HttpError(400, 'invalid_json', 'the request body is empty; expected a JSON object');
  try {
    return JSON.parse(bytes.toString('utf8'));
  } catch (error) {
    throw new HttpError(400, 'invalid_json', `the request body is not valid JSON: ${(error as Error).message}`);
  }
}
