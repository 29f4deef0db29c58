// Result callbacks: the POST a job's callback URL receives when the job ends, signed with HMAC-SHA256 so that the
// receiver can tell it came from this server and was not replayed, and the one check a receiver needs.
import { createHmac, timingSafeEqual } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import { setTimeout as delay } from 'node:timers/promises';
import { type CallbackTarget, parseCallbackUrl, resolveCallbackTarget } from './callback-target.js';
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

/** A callback URL's syntax, normalised (the address check needs a lookup: {@link resolveCallbackTarget}). */
export function checkCallbackUrl(param: string, value: string): string {
  return parseCallbackUrl(param, value).href;
}

/** Hands the connection the addresses that were checked (all of them, for Node to try in turn), never a new lookup. */
function pinnedLookup(target: CallbackTarget): LookupFunction {
  return (_hostname, options, callback) => {
    const { all, family } = options as { all?: boolean; family?: number };
    const wanted = target.addresses.filter((a) => !family || a.family === family);
    const addresses = wanted.length > 0 ? wanted : target.addresses;
    if (all) (callback as AllCallback)(null, [...addresses]);
    else callback(null, (addresses[0] as { address: string }).address, (addresses[0] as { family: number }).family);
  };
}
type AllCallback = (error: Error | null, addresses: { address: string; family: number }[]) => void;

/** POSTs `body` to the checked target; resolves with the status code. Redirects are answers, never followed. */
function post(target: CallbackTarget, headers: Record<string, string>, body: string, signal: AbortSignal) {
  const { url, hostname } = target;
  return new Promise<number>((resolve, reject) => {
    const request = (url.protocol === 'https:' ? httpsRequest : httpRequest)(
      {
        method: 'POST',
        host: hostname,
        port: url.port || undefined,
        path: `${url.pathname}${url.search}`,
        headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) },
        lookup: pinnedLookup(target),
        ...(isIP(hostname) === 0 ? { servername: hostname } : {}),
        // One connection per delivery: a pooled one could have been opened to an address checked under other rules.
        agent: false,
        signal,
      },
      (response) => {
        // The answer's body is not needed; reading it to its end frees the socket.
        response.resume();
        resolve(response.statusCode ?? 0);
      },
    );
    request.on('error', reject);
    request.end(body);
  });
}

/**
 * One delivery: checks the URL and resolves its host (again: an address may have changed since the job was queued),
 * connects to the address checked, and resolves when the receiver answered 2xx; rejects with why not.
 */
export async function deliverCallback(
  url: string,
  body: string,
  options: Pick<ResolvedCallbackOptions, 'secret' | 'timeoutMs' | 'allowHttp' | 'hosts' | 'lookup'>,
  attempt: number,
  signal?: AbortSignal,
): Promise<void> {
  const timeout = AbortSignal.timeout(options.timeoutMs);
  const target = await resolveCallbackTarget('callbackUrl', url, options);
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'user-agent': 'voxmill-callback',
    'voxmill-delivery-attempt': String(attempt),
  };
  if (options.secret) headers[SIGNATURE_HEADER] = signCallback(options.secret, body);
  const status = await post(target, headers, body, signal ? AbortSignal.any([signal, timeout]) : timeout);
  if (status < 200 || status > 299) {
    throw new Error(
      `the callback receiver answered ${status}${status >= 300 && status < 400 ? ' (redirects are not followed)' : ''}`,
    );
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
