// Writing JSON responses (successes and errors) with the headers every /v1 response carries.
import type { ServerResponse } from 'node:http';
import type { HttpError } from './http-error.js';
import { countBytesOut } from './request-log.js';

/** Writes `body` as JSON with `status`; the X-Request-Id header is already set by the handler. */
export function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  sendText(res, status, 'application/json; charset=utf-8', JSON.stringify(body), headers);
}

/** Writes `text` with `status` and `contentType`, with the headers every /v1 response carries. */
export function sendText(
  res: ServerResponse,
  status: number,
  contentType: string,
  text: string,
  headers: Record<string, string> = {},
): void {
  // A request that timed out was answered already; its work may still finish later and try again.
  if (res.headersSent || res.writableEnded) return;
  const length = Buffer.byteLength(text);
  res.statusCode = status;
  for (const [name, value] of Object.entries(headers)) res.setHeader(name, value);
  res.setHeader('Content-Type', contentType);
  res.setHeader('Content-Length', length);
  res.setHeader('Cache-Control', 'no-store');
  // Node sends no body for HEAD; the log counts what went out.
  if (res.req?.method !== 'HEAD') countBytesOut(res, length);
  res.end(text);
}

/** Headers a success sets before it can still fail; the host's own (CORS, HSTS, Vary) stay on errors. */
const SUCCESS_HEADERS = [
  'content-type',
  'content-length',
  'cache-control',
  'x-voxmill-sample-rate',
  'x-voxmill-voice-variant',
];

/** Writes an error response, replacing whatever headers a failed success had begun to set. */
export function sendError(res: ServerResponse, error: HttpError): void {
  for (const name of SUCCESS_HEADERS) res.removeHeader(name);
  sendJson(res, error.status, error.toJSON(), error.headers);
}
