// The job queue of `voxmill serve` and `voxmill worker`: on Redis when one is named (flag, environment or config),
// else in this process; the callback secret from the environment before the config; Redis trouble logged, throttled.
import { createJobQueue } from '../jobs/job-queue.js';
import type { JobQueue } from '../jobs/types.js';
import type { Speech } from '../speech.js';
import { throttledLog } from './json-log.js';
import type { ServeConfig } from './serve-config.js';

export interface JobQueueFlags {
  /** `--redis <url>`. */
  redis?: string;
  /** Whether this process works jobs (`serve --no-work` only adds them). */
  work: boolean;
}

/** The Redis URL to use: `--redis`, else `VOXMILL_REDIS_URL`, else the config's `jobs.connection`. */
export function redisConnection(
  flags: JobQueueFlags,
  config: ServeConfig,
): string | Record<string, unknown> | undefined {
  return flags.redis ?? (process.env.VOXMILL_REDIS_URL || undefined) ?? config.jobs?.connection;
}

export function jobQueueFor(config: ServeConfig, speech: Speech, flags: JobQueueFlags, source: string): JobQueue {
  const connection = redisConnection(flags, config);
  const secret = process.env.VOXMILL_CALLBACK_SECRET || config.jobs?.callbacks?.secret;
  let queue: JobQueue;
  try {
    queue = createJobQueue({
      ...config.jobs,
      speech,
      ...(connection === undefined ? {} : { connection, work: flags.work }),
      callbacks: { ...config.jobs?.callbacks, ...(secret ? { secret } : {}) },
    });
  } catch (error) {
    throw new Error(`${source}: jobs.${(error as Error).message}`);
  }
  if (queue.backend === 'redis') {
    const warn = throttledLog('redis_error');
    (queue as JobQueue & { on(event: 'connectionError', listener: (error: Error) => void): unknown }).on(
      'connectionError',
      (error) => warn(error.message),
    );
  }
  return queue;
}
