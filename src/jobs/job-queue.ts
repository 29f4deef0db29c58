// createJobQueue(): the queue on Redis when a connection is given, else in this process.
import { MemoryJobQueue } from './memory-queue.js';
import { type JobQueueOptions, resolveJobQueueOptions } from './options.js';
import { RedisJobQueue } from './redis-queue.js';
import type { JobQueue } from './types.js';

/**
 * Creates a queue of transcription jobs. With `connection` (a `redis://` URL), jobs live in Redis through BullMQ and
 * any number of processes add and work them; without it, jobs live in this process and are lost when it ends.
 * @example
 * const queue = createJobQueue({ connection: 'redis://127.0.0.1:6379', speech });
 * const job = await queue.enqueue({ audio: await readFile('call.mp3'), options: { model: 'base.en' } });
 * const done = await queue.wait(job.id);
 * console.log(done.result?.text);
 * @throws InvalidOptionTypeError / InvalidOptionValueError naming the option.
 */
export function createJobQueue(options: JobQueueOptions): JobQueue {
  const resolved = resolveJobQueueOptions(options);
  if (resolved.connection) return new RedisJobQueue(resolved);
  if (!resolved.work) {
    throw new TypeError('options.work: the in-process queue (no connection) must work its jobs: give it speech');
  }
  return new MemoryJobQueue(resolved);
}
