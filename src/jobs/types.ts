// Transcription jobs: what a caller submits, what a job looks like while it waits, runs and ends, and the queue
// interface both backends (in-process, BullMQ on Redis) implement.
import type { AnnotationPolicy, TimestampGranularity, Transcription } from '../stt/types.js';

/** Where a job is: waiting for a worker, being transcribed, or ended one of three ways. */
export type JobStatus = 'queued' | 'running' | 'completed' | 'failed' | 'cancelled';

export const JOB_STATUSES: readonly JobStatus[] = ['queued', 'running', 'completed', 'failed', 'cancelled'];

/**
 * The transcription options a job carries: the JSON-serialisable ones of `Speech.transcribe` that the HTTP form
 * offers, so that a job written by one process can run in another.
 */
export interface JobTranscribeOptions {
  /** A configured model id. */
  model: string;
  language?: string;
  timestamps?: TimestampGranularity;
  diarize?: boolean;
  vad?: boolean;
  suppressNonSpeech?: boolean;
  conditionOnPreviousText?: boolean;
  repetitionGuard?: boolean;
  skipGuard?: boolean;
  annotations?: AnnotationPolicy;
  /** Longest audio the job may decode, in seconds. */
  maxDurationSeconds?: number;
}

/** A transcription job to enqueue. */
export interface TranscriptionJobRequest {
  /** The audio bytes, in any format `Speech.transcribe` decodes. */
  audio: Buffer;
  options: JobTranscribeOptions;
  /**
   * Who owns the job: only the same owner sees, lists or cancels it (the HTTP handler passes a digest of the API
   * key). Default `"default"`.
   */
  owner?: string;
  /** A URL that receives the result (or the failure) as a signed POST when the job ends. */
  callbackUrl?: string;
  /** The upload's file name, kept for the caller's reference. */
  filename?: string;
}

/** Why a job failed, or that it was cancelled. */
export interface JobError {
  /** Stable code: `audio_decode_failed`, `audio_too_long`, `model_not_found`, `transcription_failed`, ... */
  code: string;
  message: string;
}

/** A job as `get` and `list` return it. */
export interface TranscriptionJob {
  id: string;
  object: 'transcription.job';
  status: JobStatus;
  /** Progress of the transcription, 0–1 (1 once completed). */
  progress: number;
  model: string;
  /** Unix times in seconds; `started_at` once a worker took it, `finished_at` once it ended. */
  created_at: number;
  started_at: number | null;
  finished_at: number | null;
  /** Runs started so far: more than 1 after a retry or a worker that died mid-job. */
  attempts: number;
  filename: string | null;
  callback_url: string | null;
  /** The transcription, once completed. */
  result: Transcription | null;
  /** Why it failed or was cancelled. */
  error: JobError | null;
}

/** `queue.on(...)`: what a queue reports about its jobs. */
export interface JobQueueEvents {
  progress: [id: string, progress: number];
  /**
   * A job's transcription finished, holding `audioSeconds` of audio, for `owner`: emitted once per completed job, in
   * the process that ran it (per-client audio limits charge it).
   */
  transcribed: [owner: string, audioSeconds: number];
  completed: [id: string];
  failed: [id: string, error: JobError];
  cancelled: [id: string];
}

/** Counts of jobs by status, for metrics and status pages (ended ones: those still kept). */
export type JobCounts = Record<JobStatus, number>;

/** Options of `list`. */
export interface ListJobsOptions {
  owner?: string;
  status?: JobStatus;
  /** Most jobs returned, newest first. Default 20, at most 100. */
  limit?: number;
}

/**
 * A queue of transcription jobs. `createJobQueue()` returns one: on Redis (BullMQ) with `connection`, else in this
 * process.
 */
export interface JobQueue {
  /** `"memory"` or `"redis"`. */
  readonly backend: 'memory' | 'redis';
  /** Adds a job; resolves to it, queued. Rejects with QueueFullError past `maxQueuedJobs`. */
  enqueue(request: TranscriptionJobRequest): Promise<TranscriptionJob>;
  /** The job, or undefined when there is none with this id for this owner (or it has expired). */
  get(id: string, owner?: string): Promise<TranscriptionJob | undefined>;
  /**
   * Cancels a job: a queued one never runs, a running one stops within a second. Resolves to the job as it is
   * then (an ended job is left as it is), or undefined when there is none for this owner.
   */
  cancel(id: string, owner?: string): Promise<TranscriptionJob | undefined>;
  /** The owner's jobs, newest first. */
  list(options?: ListJobsOptions): Promise<TranscriptionJob[]>;
  /**
   * Resolves when the job has ended (completed, failed or cancelled), to the job. Rejects with the signal's reason
   * when it aborts, and with a JobNotFoundError when the job does not exist.
   */
  wait(id: string, options?: { owner?: string; signal?: AbortSignal }): Promise<TranscriptionJob>;
  /** Jobs by status. */
  counts(): Promise<JobCounts>;
  /** Throws when the queue's store cannot be reached (for readiness probes). */
  ping(): Promise<void>;
  on<E extends keyof JobQueueEvents>(event: E, listener: (...args: JobQueueEvents[E]) => void): this;
  off<E extends keyof JobQueueEvents>(event: E, listener: (...args: JobQueueEvents[E]) => void): this;
  /**
   * Stops taking jobs and closes connections. Jobs running in this process finish within `drainTimeoutMs`, or are
   * handed back to the queue (Redis) / cancelled (in-process). Idempotent.
   */
  close(): Promise<void>;
}
