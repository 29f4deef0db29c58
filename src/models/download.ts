/**
 * Downloads a model into `<file>.part`, resuming what an earlier attempt left there, retrying transient failures.
 * Verification and the rename to the final name are the store's job; this only promises that, on success, the
 * part file holds `entry.bytes` bytes whose digests are returned.
 */
import { open, rm, stat } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { DownloadError } from '../errors.js';
import type { CatalogEntry } from './catalog.js';
import { FileDigest } from './digest.js';
import { type HttpGetResponse, httpGet, isRetryable, retryableError, statusError } from './http-get.js';

/** Bytes of a model present so far, reported while it is pulled. */
export interface PullProgress {
  readonly receivedBytes: number;
  readonly totalBytes: number;
}

/** What a transfer needs besides the entry and where to put it. */
export interface TransferContext {
  readonly signal?: AbortSignal | undefined;
  readonly onProgress?: ((progress: PullProgress) => void) | undefined;
  readonly connectTimeoutMs: number;
  readonly idleTimeoutMs: number;
  readonly maxRedirects: number;
  /** Further attempts after a transient failure; each resumes from what the part file holds. */
  readonly retries: number;
  /** Wait before retry n is n times this. */
  readonly retryDelayMs: number;
}

/** A complete part file's digests, and how many of its bytes an earlier pull had left there. */
export interface PartResult {
  readonly digests: { sha256: string; sha1: string | null };
  readonly resumedFrom: number;
}

/**
 * Fills `part` with the file at `url`.
 * @throws DownloadError when the server fails, says no, or sends the wrong size; `signal.reason` when aborted.
 */
export async function downloadToPart(
  entry: CatalogEntry,
  url: string,
  part: string,
  context: TransferContext,
): Promise<PartResult> {
  // Where the first attempt started: bytes before it were left by an earlier pull. Later attempts' offsets are ours.
  let resumedFrom: number | undefined;
  const onStart = (start: number): void => {
    resumedFrom ??= start;
  };
  for (let attempt = 0; ; attempt++) {
    try {
      const digests = await attemptDownload(entry, url, part, context, onStart);
      return { digests, resumedFrom: resumedFrom ?? 0 };
    } catch (error) {
      if (context.signal?.aborted) throw context.signal.reason;
      if (!isRetryable(error) || attempt >= context.retries) throw error;
      await pause(context.retryDelayMs * (attempt + 1), context.signal);
    }
  }
}

async function attemptDownload(
  entry: CatalogEntry,
  url: string,
  part: string,
  context: TransferContext,
  onStart: (start: number) => void,
): Promise<PartResult['digests']> {
  // Loops at most twice: when the server cannot continue the part (416, or another range than asked for), the part
  // is deleted and the request repeated without Range, which cannot end up here again.
  for (;;) {
    let offset = await sizeOf(part);
    if (offset > entry.bytes) {
      await rm(part, { force: true });
      offset = 0;
    }
    const digest = new FileDigest(entry);
    await digest.updateFromFile(part, offset, context.signal);
    if (offset === entry.bytes) {
      onStart(offset);
      return digest.digest();
    }
    context.onProgress?.({ receivedBytes: offset, totalBytes: entry.bytes });

    const response = await httpGet(url, {
      headers: offset > 0 ? { range: `bytes=${offset}-` } : {},
      signal: context.signal,
      connectTimeoutMs: context.connectTimeoutMs,
      idleTimeoutMs: context.idleTimeoutMs,
      maxRedirects: context.maxRedirects,
    });
    const start = startOf(response, offset);
    if (start === undefined) {
      response.discard();
      await rm(part, { force: true });
      continue;
    }
    const announced = announcedTotal(response, start);
    if (announced !== undefined && announced !== entry.bytes) {
      response.discard();
      await rm(part, { force: true });
      throw new DownloadError(
        `GET ${response.url} serves ${announced} bytes, but the catalog expects ${entry.bytes} for ${entry.id}`,
      );
    }
    if (start === 0) digest.reset();
    onStart(start);
    await receiveBody(entry, response, part, start, digest, context);
    return digest.digest();
  }
}

/** Where the body starts in the file, or undefined when the part must be thrown away and the request repeated. */
function startOf(response: HttpGetResponse, offset: number): number | undefined {
  if (response.status === 200) return 0; // no Range sent, or the server ignored it: start over
  if (offset > 0 && response.status === 206) {
    const range = parseContentRange(response.headers['content-range']);
    return range?.start === offset ? offset : undefined;
  }
  if (offset > 0 && response.status === 416) return undefined;
  response.discard();
  throw statusError(response);
}

async function receiveBody(
  entry: CatalogEntry,
  response: HttpGetResponse,
  part: string,
  start: number,
  digest: FileDigest,
  context: TransferContext,
): Promise<void> {
  const handle = await open(part, start === 0 ? 'w' : 'a');
  let received = start;
  try {
    for await (const chunk of response.body) {
      if (received + chunk.length > entry.bytes) {
        // Bytes beyond the catalog size: this is some other file, and the part is worthless.
        await handle.close().catch(() => {});
        await rm(part, { force: true });
        throw new DownloadError(`GET ${response.url} sent more than the ${entry.bytes} bytes of ${entry.file}`);
      }
      await handle.write(chunk);
      digest.update(chunk);
      received += chunk.length;
      context.onProgress?.({ receivedBytes: received, totalBytes: entry.bytes });
    }
    if (received === entry.bytes) await handle.sync();
  } finally {
    await handle.close().catch(() => {});
  }
  // The body ended early without a network error (no Content-Length, say): keep the part and resume.
  if (received !== entry.bytes) {
    throw retryableError(`GET ${response.url} ended after ${received} of ${entry.bytes} bytes of ${entry.file}`);
  }
}

function announcedTotal(response: HttpGetResponse, start: number): number | undefined {
  if (response.status === 206) {
    const range = parseContentRange(response.headers['content-range']);
    if (range?.total !== undefined) return range.total;
  }
  const length = response.headers['content-length'];
  return length !== undefined && /^\d+$/.test(length) ? start + Number(length) : undefined;
}

/** `bytes 100-199/1000` -> { start: 100, total: 1000 }; `*` as the total gives no total. */
export function parseContentRange(value: string | undefined): { start: number; total?: number } | undefined {
  const match = value === undefined ? null : /^bytes\s+(\d+)-(\d+)\/(\d+|\*)$/i.exec(value.trim());
  if (match === null) return undefined;
  const start = Number(match[1]);
  return match[3] === '*' ? { start } : { start, total: Number(match[3]) };
}

async function sizeOf(path: string): Promise<number> {
  try {
    return (await stat(path)).size;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return 0;
    throw error;
  }
}

async function pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
  try {
    await sleep(ms, undefined, signal ? { signal } : {});
  } catch (error) {
    throw signal?.aborted ? signal.reason : error;
  }
}
