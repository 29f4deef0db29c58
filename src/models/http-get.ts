/**
 * One HTTP(S) GET with redirects, timeouts, an optional Range header and cancellation, its body exposed as an
 * async iterable that fails with a meaningful error.
 *
 * Built on node:http / node:https rather than the global fetch: in Node 20 fetch (undici) offers no way to set the
 * connect timeout or an idle-socket timeout without importing undici's Agent (not a public module of Node), and its
 * redirect limit is fixed. Here both timeouts, the redirect count and the Range handling are explicit.
 */
import type { ClientRequest, IncomingHttpHeaders, IncomingMessage } from 'node:http';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { DownloadError } from '../errors.js';

/** Options of {@link httpGet}. */
export interface HttpGetOptions {
  /** Extra request headers (for example `range`). They are sent again on every redirect. */
  readonly headers?: Readonly<Record<string, string>>;
  readonly signal?: AbortSignal | undefined;
  /** Time allowed to connect and receive the response headers, per request (redirects included). */
  readonly connectTimeoutMs: number;
  /** Longest silence on the socket, while waiting for headers or between body chunks. */
  readonly idleTimeoutMs: number;
  /** Most redirects followed before giving up. */
  readonly maxRedirects: number;
}

/** A response whose headers have arrived. Read `body` to the end, or call `discard()`. */
export interface HttpGetResponse {
  readonly status: number;
  readonly statusText: string;
  readonly headers: IncomingHttpHeaders;
  /** The URL that answered, after redirects. */
  readonly url: string;
  /** Body chunks; throws a DownloadError (or the abort reason) when the transfer breaks. */
  readonly body: AsyncIterable<Buffer>;
  /** Drops the response and closes its connection. */
  discard(): void;
}

const retryable = new WeakSet<object>();

/** Whether a failure is worth another attempt (network trouble, timeouts, 5xx, 429) rather than final. */
export function isRetryable(error: unknown): boolean {
  return typeof error === 'object' && error !== null && retryable.has(error);
}

function markRetryable<T extends object>(error: T): T {
  retryable.add(error);
  return error;
}

const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);

/**
 * Sends a GET and resolves once a non-redirect response's headers arrive, whatever its status.
 * @throws DownloadError on network failure, timeout or too many redirects; `signal.reason` when aborted.
 */
export async function httpGet(url: string, options: HttpGetOptions): Promise<HttpGetResponse> {
  options.signal?.throwIfAborted();
  let current = new URL(url);
  for (let redirects = 0; ; redirects++) {
    const response = await sendOnce(current, options);
    const location = response.headers.location;
    if (!REDIRECT_STATUSES.has(response.status) || location === undefined) return response;
    response.discard();
    if (redirects >= options.maxRedirects) {
      throw new DownloadError(`GET ${url} failed: more than ${options.maxRedirects} redirects`);
    }
    const next = new URL(location, current);
    if (next.protocol !== 'https:' && next.protocol !== 'http:') {
      throw new DownloadError(`GET ${current.href} redirected to unsupported URL ${next.href}`);
    }
    current = next;
  }
}

function sendOnce(url: URL, options: HttpGetOptions): Promise<HttpGetResponse> {
  const { signal } = options;
  const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    return Promise.reject(new DownloadError(`cannot download ${url.href}: only http and https are supported`));
  }
  // Why the transfer was stopped on purpose; socket errors that follow a deliberate destroy are noise.
  let stoppedBecause: unknown;
  // agent: false gives every request its own socket, so the timeouts below always measure this request.
  const request: ClientRequest = send(url, {
    method: 'GET',
    agent: false,
    headers: { 'user-agent': 'voxmill', 'accept-encoding': 'identity', ...options.headers },
  });
  const stop = (reason: unknown): void => {
    stoppedBecause ??= reason;
    request.destroy(reason instanceof Error ? reason : undefined);
  };
  const onAbort = (): void => stop(signal?.reason);
  signal?.addEventListener('abort', onAbort, { once: true });
  const cleanUp = (): void => signal?.removeEventListener('abort', onAbort);

  request.setTimeout(options.idleTimeoutMs, () => {
    stop(markRetryable(new DownloadError(`GET ${url.href} timed out: no data for ${options.idleTimeoutMs} ms`)));
  });
  const connectTimer = setTimeout(() => {
    stop(markRetryable(new DownloadError(`GET ${url.href} timed out: no response in ${options.connectTimeoutMs} ms`)));
  }, options.connectTimeoutMs);

  return new Promise<HttpGetResponse>((resolve, reject) => {
    // 'on', not 'once': a destroyed request can emit more than one error, and an unheard one would crash.
    request.on('error', (error) => {
      clearTimeout(connectTimer);
      cleanUp();
      reject(
        stoppedBecause ??
          markRetryable(new DownloadError(`GET ${url.href} failed: ${error.message}`, { cause: error })),
      );
    });
    // A destroy without an Error (an abort whose reason is not one) may close the socket without an 'error' event.
    request.once('close', () => {
      clearTimeout(connectTimer);
      reject(stoppedBecause ?? markRetryable(new DownloadError(`GET ${url.href} failed: connection closed`)));
    });
    request.once('response', (response: IncomingMessage) => {
      clearTimeout(connectTimer);
      // The caller may await other things before reading the body; an error meanwhile must not go unheard (it
      // would crash the process). Reading the body reports it, since the stream stays errored.
      response.on('error', () => {});
      const status = response.statusCode ?? 0;
      const failure = (error?: unknown): unknown =>
        stoppedBecause ??
        markRetryable(
          new DownloadError(
            `GET ${url.href} broke off: ${describeFailure(error)}`,
            error === undefined ? {} : { cause: error },
          ),
        );
      async function* body(): AsyncGenerator<Buffer> {
        try {
          try {
            for await (const chunk of response) yield chunk as Buffer;
          } catch (error) {
            throw failure(error);
          }
          if (stoppedBecause !== undefined) throw stoppedBecause;
          if (!response.complete) throw failure();
        } finally {
          cleanUp();
          request.destroy();
        }
      }
      resolve({
        status,
        statusText: response.statusMessage ?? '',
        headers: response.headers,
        url: url.href,
        body: body(),
        discard: () => {
          cleanUp();
          response.resume();
          request.destroy();
        },
      });
    });
    request.end();
  });
}

function describeFailure(error: unknown): string {
  if (error === undefined) return 'the connection closed before the whole body arrived';
  return error instanceof Error ? error.message : String(error);
}

/** A DownloadError for an unusable HTTP status; 5xx and 429 are marked retryable. */
export function statusError(response: HttpGetResponse): DownloadError {
  const error = new DownloadError(
    `GET ${response.url} answered HTTP ${response.status}${response.statusText ? ` ${response.statusText}` : ''}`,
  );
  return response.status >= 500 || response.status === 429 ? markRetryable(error) : error;
}

/** A DownloadError that a later attempt may cure (the stream ended short, say). */
export function retryableError(message: string): DownloadError {
  return markRetryable(new DownloadError(message));
}
