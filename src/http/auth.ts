// Bearer authentication of /v1 requests: API keys compared in constant time, or the host's own function; and who
// the caller is, for the per-client request limit.
import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { addressBytes } from '../util/ip-address.js';
import { HttpError } from './http-error.js';

/** Decides whether a bearer token may call the API. Throwing answers 500; returning false answers 401. */
export type AuthorizeFunction = (token: string, req: IncomingMessage) => boolean | Promise<boolean>;

/**
 * An API key with a stable id. The caller is then known by the id, not by the key: its jobs and its rate limits stay
 * with it when the key is rotated (list the new key under the same id, then drop the old one).
 */
export interface ApiKey {
  /** 1-64 letters, digits, `_ . @ -`; several keys may share one id. */
  id: string;
  key: string;
}

/** An accepted key and who a request with it is. */
export interface ResolvedKey {
  key: string;
  /** `id:<id>` for a key with an id, else `key:<digest of the key>`. */
  identity: string;
}

/** The `auth` option, resolved: the accepted API keys, or the host's function, or neither (no authentication). */
export interface ResolvedAuth {
  keys: readonly ResolvedKey[] | undefined;
  authorize: AuthorizeFunction | undefined;
}

/** What an API key id may be. */
export const API_KEY_ID = /^[A-Za-z0-9][A-Za-z0-9_.@-]{0,63}$/;

// RFC 6750: `Authorization: Bearer <b64token>`; the scheme is case-insensitive.
const BEARER = /^Bearer +([A-Za-z0-9\-._~+/]+=*) *$/i;
const B64TOKEN = /^[A-Za-z0-9\-._~+/]+=*$/;

/** The characters an API key may have: those a Bearer token can carry. */
export const API_KEY_CHARACTERS = 'A-Z a-z 0-9 - . _ ~ + / and trailing =';

/** Whether `key` can be sent as a Bearer token at all. */
export function isBearerToken(key: string): boolean {
  return B64TOKEN.test(key);
}

const digest = (text: string): Buffer => createHash('sha256').update(text).digest();

/** Who a caller with `key` is (see {@link ResolvedKey}). */
export function keyIdentity(key: string, id: string | undefined): string {
  return id === undefined ? `key:${digest(key).toString('base64url')}` : `id:${id}`;
}

/**
 * Checks keys in time independent of where a guess differs: both sides are hashed to the same length first, and
 * every key is compared, so neither the matching prefix nor which key matched shows in the timing. Returns the index
 * of the matching key, or -1.
 */
export function keyMatcher(keys: readonly string[]): (token: string) => number {
  const digests = keys.map(digest);
  return (token) => {
    const candidate = digest(token);
    let found = -1;
    digests.forEach((key, i) => {
      const equal = timingSafeEqual(key, candidate);
      found = equal ? i : found;
    });
    return found;
  };
}

function unauthorized(code: string, message: string, error?: string): HttpError {
  const challenge = error ? `Bearer realm="voxmill", error="${error}"` : 'Bearer realm="voxmill"';
  return new HttpError(401, code, message, { headers: { 'WWW-Authenticate': challenge } });
}

/**
 * The caller's address: Express's `req.ip` where the host is Express (it follows the app's `trust proxy`, so clients
 * behind the host's proxy stay apart), else the socket's peer.
 */
function addressOf(req: IncomingMessage): string {
  const ip = (req as { ip?: unknown }).ip;
  const address = typeof ip === 'string' && ip !== '' ? ip : (req.socket?.remoteAddress ?? 'unknown');
  return `addr:${clientNetwork(address)}`;
}

/**
 * The part of an address that names one client: an IPv6 client holds a whole /64 (it can use any address in it, so
 * per-address limits would be no limit); an IPv4 one, or an IPv4-mapped IPv6 one, its address.
 */
export function clientNetwork(address: string): string {
  const bytes = addressBytes(address);
  const mapped = bytes?.length === 16 && bytes.subarray(0, 10).every((b) => b === 0) && bytes[10] === 0xff;
  if (!bytes || bytes.length !== 16 || mapped) return address;
  const groups: string[] = [];
  for (let i = 0; i < 8; i += 2) groups.push((((bytes[i] as number) << 8) | (bytes[i + 1] as number)).toString(16));
  return `${groups.join(':')}::/64`;
}

/**
 * Resolves to the caller's identity when the request may proceed; rejects with a 401 HttpError otherwise. The
 * identity is a digest of the key or token (no secret is kept as a map key), or `addr:<address>` without auth.
 * `offered`: a key the client sent another way than the header (a browser's WebSocket subprotocol).
 */
export function authenticator(options: ResolvedAuth): (req: IncomingMessage, offered?: string) => Promise<string> {
  const { authorize } = options;
  const keys = options.keys;
  const matches = keys ? keyMatcher(keys.map((entry) => entry.key)) : undefined;
  if (!authorize && !matches) return async (req) => addressOf(req);
  return async (req, offered) => {
    const header = req.headers.authorization;
    const withoutHeader = header === undefined || header === '';
    if (withoutHeader && offered === undefined) {
      throw unauthorized('missing_api_key', 'this API needs an API key: send the header Authorization: Bearer <key>');
    }
    // A key offered another way (a WebSocket subprotocol) counts only without a header, and only as a bearer token.
    const token = withoutHeader ? (B64TOKEN.test(offered as string) ? offered : undefined) : BEARER.exec(header)?.[1];
    if (token === undefined) {
      throw unauthorized(
        'invalid_authorization_header',
        'the Authorization header must be "Bearer <key>"',
        'invalid_request',
      );
    }
    if (matches) {
      const at = matches(token);
      if (at < 0) throw unauthorized('invalid_api_key', 'the API key is not valid', 'invalid_token');
      return (keys as readonly ResolvedKey[])[at]?.identity as string;
    }
    const allowed = await (authorize as NonNullable<typeof authorize>)(token, req);
    if (allowed !== true) throw unauthorized('invalid_api_key', 'the API key is not valid', 'invalid_token');
    return `token:${digest(token).toString('base64url')}`;
  };
}
