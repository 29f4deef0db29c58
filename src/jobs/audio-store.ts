// Where a Redis-queued job's audio waits for its worker: a Redis key that expires after audioTtlSeconds, or a file
// in a directory every process shares. Either way the audio is removed when the job ends, and a job that finds its
// audio gone fails with `audio_expired` instead of running on nothing.
import { readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { Redis } from 'ioredis';
import { writeAtomically } from '../util/write-atomically.js';

export interface AudioStore {
  put(id: string, audio: Buffer): Promise<void>;
  /** The audio, or undefined when it expired or was removed. */
  get(id: string): Promise<Buffer | undefined>;
  remove(id: string): Promise<void>;
}

export function redisAudioStore(client: Redis, prefix: string, ttlSeconds: number): AudioStore {
  const key = (id: string) => `${prefix}:audio:${id}`;
  return {
    async put(id, audio) {
      await client.set(key(id), audio, 'EX', ttlSeconds);
    },
    async get(id) {
      return (await client.getBuffer(key(id))) ?? undefined;
    },
    async remove(id) {
      await client.del(key(id));
    },
  };
}

/**
 * Files in a shared directory. Expiry is by removal when the job ends; a file whose job was lost with Redis stays
 * until the operator's own cleanup (a `find -mtime` job), which the README names.
 */
export function directoryAudioStore(dir: string): AudioStore {
  const path = (id: string) => join(dir, `${id}.audio`);
  return {
    async put(id, audio) {
      await writeAtomically(path(id), audio);
    },
    async get(id) {
      try {
        return await readFile(path(id));
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
        throw error;
      }
    },
    async remove(id) {
      await rm(path(id), { force: true });
    },
  };
}
