// Files that must never be seen half-written: written beside the target under a temporary name and renamed into
// place (atomic within one directory); on failure the temporary file is removed and the error thrown.
import { randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { access, open, rename, rm, stat } from 'node:fs/promises';

/**
 * Whether caches may be written in `dir`: it is writable and has a write bit. A folder without one is meant to be
 * read-only even where this process could write it (root), as the test data in ../shared is.
 */
export async function mayWriteIn(dir: string): Promise<boolean> {
  try {
    await access(dir, constants.W_OK);
    return ((await stat(dir)).mode & 0o222) !== 0;
  } catch {
    return false;
  }
}

/**
 * Writes `content` (or its parts, one after the other, never joined in memory) to `path`, atomically: flushed to disk
 * before the rename, so a crash or power loss leaves the old file, none, or the whole new one, never a torn one.
 */
export async function writeAtomically(
  path: string,
  content: string | Uint8Array | readonly Uint8Array[],
): Promise<void> {
  const temporary = `${path}.${randomBytes(4).toString('hex')}.part`;
  try {
    const file = await open(temporary, 'wx');
    try {
      // FileHandle.writeFile writes from the current position: the parts follow one another.
      for (const part of typeof content === 'string' || content instanceof Uint8Array ? [content] : content) {
        await file.writeFile(part);
      }
      await file.sync();
    } finally {
      await file.close();
    }
    await rename(temporary, path);
  } catch (error) {
    await rm(temporary, { force: true });
    throw error;
  }
}
