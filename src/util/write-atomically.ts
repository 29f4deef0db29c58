// Files that must never be seen half-written: written beside the target under a temporary name and renamed into
// place (atomic within one directory); on failure the temporary file is removed and the error thrown.
import { randomBytes } from 'node:crypto';
import { rename, rm, writeFile } from 'node:fs/promises';

export async function writeAtomically(path: string, content: string | Uint8Array): Promise<void> {
  const temporary = `${path}.${randomBytes(4).toString('hex')}.part`;
  try {
    await writeFile(temporary, content, { flag: 'wx' });
    await rename(temporary, path);
  } catch (error) {
    await rm(temporary, { force: true });
    throw error;
  }
}
