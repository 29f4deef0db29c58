/**
 * Copies a model from a local mirror directory (same file names as upstream) into `<file>.part`.
 * A copy never resumes: a partial copy of a local file is cheaper to redo than to trust.
 */
import { createReadStream } from 'node:fs';
import { open, rm, stat } from 'node:fs/promises';
import { DownloadError } from '../errors.js';
import type { CatalogEntry } from './catalog.js';
import { FileDigest } from './digest.js';
import type { PartResult, TransferContext } from './download.js';

/**
 * Fills `part` with `source`, hashing as it goes.
 * @throws DownloadError when the source is missing, unreadable or of the wrong size; `signal.reason` when aborted.
 */
export async function copyToPart(
  entry: CatalogEntry,
  source: string,
  part: string,
  context: Pick<TransferContext, 'signal' | 'onProgress'>,
): Promise<PartResult> {
  const { signal, onProgress } = context;
  const size = await sizeOfSource(entry, source);
  if (size !== entry.bytes) {
    throw new DownloadError(`${source} has ${size} bytes, but the catalog expects ${entry.bytes} for ${entry.id}`);
  }
  const digest = new FileDigest(entry);
  const handle = await open(part, 'w');
  let copied = 0;
  try {
    for await (const chunk of createReadStream(source, signal ? { signal } : {})) {
      const bytes = chunk as Buffer;
      await handle.write(bytes);
      digest.update(bytes);
      copied += bytes.length;
      onProgress?.({ receivedBytes: copied, totalBytes: entry.bytes });
    }
    if (copied !== entry.bytes) {
      throw new DownloadError(`${source} changed while it was copied (${copied} of ${entry.bytes} bytes)`);
    }
    await handle.sync();
  } catch (error) {
    await handle.close().catch(() => {});
    await rm(part, { force: true });
    if (signal?.aborted) throw signal.reason;
    if (error instanceof DownloadError) throw error;
    throw new DownloadError(`copying ${source} failed: ${(error as Error).message}`, { cause: error });
  }
  await handle.close();
  return { digests: digest.digest(), resumedFrom: 0 };
}

async function sizeOfSource(entry: CatalogEntry, source: string): Promise<number> {
  try {
    const info = await stat(source);
    if (!info.isFile()) throw new DownloadError(`${source} is not a file`);
    return info.size;
  } catch (error) {
    if (error instanceof DownloadError) throw error;
    const reason = (error as NodeJS.ErrnoException).code === 'ENOENT' ? 'does not exist' : (error as Error).message;
    throw new DownloadError(`mirror file for ${entry.id} ${source} ${reason}`, { cause: error });
  }
}
