// Result callbacks: the POST a job's callback URL receives when the job ends, signed with HMAC-SHA256 so that the
// receiver can tell it came from this server and was not replayed, and the one check a receiver needs.
import { createHmac, timingSafeEqual } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import { InvalidOptionValueError } from '../errors.js';
import type { ResolvedCallbackOptions } from './options.js';
import type { TranscriptionJob } from './types.js';

/** The header that carries the signature: `t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">`. */
export const SIGNATURE_HEADER = 'voxmill-signature';

/** What a callback POST carries. */
export interface JobCallbackBody {
  /** `transcription.job.completed`, `.failed` or `.cancelled`. */
  type: `transcription.job.${'completed' | 'failed' | 'cancelled'}`;
  job: TranscriptionJob;
}

export function callbackBody(job: TranscriptionJob): string {
  const outcome = job.status === 'completed' ? 'completed' : job.status === 'cancelled' ? 'cancelled' : 'failed';
  const body: JobCallbackBody = { type: `transcription.job.${outcome}`, job };
  return JSON.stringify(body);
}

function hmac(secret: string, timestamp: number, body: string): string {
  return createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex');
}

/** The signature header's value for `body` sent at `timestamp` (unix seconds). */
export function signCallback(secret: string, body: string, timestamp = Math.floor(Date.now() / 1000)): string {
  return `t=${timestamp},v1=${hmac(secret, timestamp, body)}`;
}

/**
 * Checks a callback: the `Voxmill-Signature` header against the raw body (as received, before any JSON parsing)
 * and the shared secret, and that it was signed within `toleranceSeconds` (default 300) of now, which stops
 * replays of an old delivery. Compares in constant time.
 * @example
 * app.post('/hooks/voxmill', express.raw({ type: 'application/json' }), (req, res) => {
 *   if (!verifyCallbackSignature(secret, req.body, req.get('voxmill-signature'))) return res.sendStatus(401);
 *   const { type, job } = JSON.parse(req.body);
 *   res.sendStatus(204);
 * });
 */
export function verifyCallbackSignature(
  secret: string,
  body: string | Buffer,
  header: string | undefined,
  options: { toleranceSeconds?: number; now?: number } = {},
): boolean {
  if (typeof header !== 'string') return false;
  const parts = new Map(
    header.split(',').map((part) => {
      const at = part.indexOf('=');
      return [part.slice(0, at).trim(), part.slice(at + 1).trim()] as const;
    }),
  );
  const timestamp = Number(parts.get('t'));
  const signature = parts.get('v1');
  if (!Number.isInteger(timestamp) || signature === undefined || !/^[0-9a-f]{64}$/.test(signature)) return false;
  const now = options.now ?? Math.floor(Date.now() / 1000);
  if (Math.abs(now - timestamp) > (options.toleranceSeconds ?? 300)) return false;
  const expected = Buffer.from(hmac(secret, timestamp, Buffer.isBuffer(body) ? body.toString('utf8') : body), 'hex');
  return timingSafeEqual(expected, Buffer.from(signature, 'hex'));
}

/** A callback URL a job may carry: http or https, with a host, at most 2048 characters. */
export function checkCallbackUrl(param: string, value: string): string {
  let url: URL | undefined;
  try {
    url = value.length <= 2048 ? new URL(value) : undefined;
  } catch {
    url = undefined;
  }
  if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:') || url.hostname === '') {
    throw new InvalidOptionValueError(param, 'an http:// or https:// URL of at most 2048 characters', value);
  }
  return url.href;
}

/** One delivery: resolves when the receiver answered 2xx, rejects with why not. */
export async function deliverCallback(
  url: string,
  body: string,
  options: Pick<ResolvedCallbackOptions, 'secret' | 'timeoutMs'>,
  attempt: number,
  signal?: AbortSignal,
): Promise<void> {
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'user-agent': 'voxmill-callback',
    'voxmill-delivery-attempt': String(attempt),
  };
  if (options.secret) headers[SIGNATURE_HEADER] = signCallback(options.secret, body);
  const response = await fetch(url, {
    method: 'POST',
    headers,
    body,
    redirect: 'manual',
    signal: signal
      ? AbortSignal.any([signal, AbortSignal.timeout(options.timeoutMs)])
      : AbortSignal.timeout(options.timeoutMs),
  });
  // The answer's body is not needed; dropping it frees the connection.
  await response.body?.cancel().catch(() => undefined);
  if (response.status < 200 || response.status > 299) {
    throw new Error(`the callback receiver answered ${response.status}`);
  }
}

/**
 * Delivers with retries and a doubling backoff, in this process (the in-process queue's way; on Redis each try is a
 * BullMQ job). Resolves true when delivered, false when every try failed or `signal` stopped the retries.
 */
export async function deliverWithRetries(
  url: string,
  body: string,
  options: ResolvedCallbackOptions,
  signal: AbortSignal,
): Promise<boolean> {
  for (let attempt = 1; attempt <= options.attempts && !signal.aborted; attempt++) {
    try {
      // A delivery under way finishes (within timeoutMs); `signal` only stops the retries.
      await deliverCallback(url, body, options, attempt);
      return true;
    } catch {
      if (attempt === options.attempts) break;
      await delay(options.backoffMs * 2 ** (attempt - 1), undefined, { signal }).catch(() => undefined);
    }
  }
  return false;
}
