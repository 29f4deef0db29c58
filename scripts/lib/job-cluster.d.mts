// Types of scripts/lib/job-cluster.mjs, which test/scale/ and bench/scale.mjs share.
import type { ChildProcess } from 'node:child_process';

export interface ClusterProcess {
  child: ChildProcess;
  /** Its JSON log lines so far. */
  lines: Record<string, unknown>[];
  /** Resolves to the exit code, or the signal that ended it. */
  exited: Promise<number | string | null>;
  started: Promise<void>;
  stderr(): string;
}

export interface TestRedis {
  url: string;
  port: number;
  restart(downMs?: number): Promise<void>;
  stop(): Promise<void>;
}

export interface Delivery {
  id: string | undefined;
  type: string | undefined;
  /** The signature held. */
  valid: boolean;
  job: Record<string, unknown> | undefined;
}

export interface JobRun {
  id: string;
  status: 'completed' | 'failed' | 'retrying';
  attempt: number;
  ms: number;
}

export interface Cluster {
  redis: TestRedis;
  apiUrl: string;
  api: ClusterProcess;
  workers: ClusterProcess[];
  receiver: { url: string; deliveries: Delivery[]; close(): void };
  keys: string[];
  addWorker(): Promise<ClusterProcess>;
  submit(
    count: number,
    options: { audioPath: string; key?: string; parallel?: number; callback?: boolean },
  ): Promise<string[]>;
  // biome-ignore lint/suspicious/noExplicitAny: the job as the API answers it
  get(id: string, key?: string): Promise<{ status: number; body: any }>;
  allCalledBack(ids: string[], timeoutMs: number): Promise<number>;
  runsById(): Map<string, JobRun[]>;
  stop(): Promise<void>;
}

export function redisServerPath(): string;
export function startRedis(): Promise<TestRedis>;
export function startCluster(options: {
  workers?: number;
  model: string;
  jobs?: Record<string, unknown>;
  keys?: string[];
  concurrency?: number;
}): Promise<Cluster>;
