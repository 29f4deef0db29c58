// The realtime endpoint's limits (`createSpeechHandler({ realtime })`), validated once with errors that name the
// option, each with its default.
import {
  booleanOption,
  enumOption,
  integerOption,
  numberOption,
  objectOption,
  rejectUnknownKeys,
} from '../../util/validate.js';

/** Options of the `/v1/realtime` WebSocket endpoint. */
export interface RealtimeOptions {
  /** Sessions open at once on this handler; one more is told `too_many_sessions` and closed. Default 32. */
  maxSessions?: number;
  /**
   * Sessions one client may have open at once (a client is its API key, its bearer token, or its address, as for
   * `limits.maxConcurrentRequestsPerClient`); one more is told `client_session_limit`. Default a quarter of
   * `maxSessions`, at least 1 (8 of the default 32).
   */
  maxSessionsPerClient?: number;
  /** Longest a session may stay open, in seconds; then it gets `session_expired` and is closed. Default 3600. */
  maxSessionSeconds?: number;
  /**
   * Time without an event either way (and not throttled) before the session is closed (`idle_timeout`), in ms. A
   * client streaming audio, or listening to speech or transcripts, is never idle. Default 60000.
   */
  idleTimeoutMs?: number;
  /**
   * Largest message the client may send, in bytes (a larger one closes the socket with code 1009). Default 1 MiB:
   * 20 s of 24 kHz 16-bit audio in base64 in one `input_audio_buffer.append`; clients send 20-100 ms at a time.
   */
  maxMessageBytes?: number;
  /**
   * Bytes waiting to be sent to a client that does not read them; past this the session is closed (code 1008), so
   * a stalled reader cannot make the server hold unbounded audio. Default 8 MiB (minutes of speech audio).
   */
  maxBufferedBytes?: number;
  /**
   * Appended audio waiting for the transcriber (its VAD, or a transcription still running), in bytes; past this the
   * client is throttled: its socket is not read until a quarter of it remains. Below it the session's other events
   * (a speech cancel) keep flowing. Default 2 MiB (44 s of 24 kHz 16-bit audio).
   */
  maxQueuedAudioBytes?: number;
  /**
   * Speech events waiting their turn (text written while the previous speech still plays, or while a voice loads),
   * in characters, each event counting 64 beside its text; past it an event is refused with `speech_queue_full`.
   * Default 65536 (over an hour of speech).
   */
  maxQueuedSpeechChars?: number;
  /**
   * Admit sessions by the engine's measured capacity, not only by `maxSessions`: each final transcript's time after
   * its utterance ended, over the utterance's length, is what a session speaking without pause costs the machine;
   * sessions are admitted while their summed cost fits `targetLoad`, and none while recent finals are slower than
   * `maxFinalLatencyMs` at p95. Until three finals are measured, one session per CPU thread (`cpuThreads`). Default
   * true.
   */
  admitByCapacity?: boolean;
  /** The share of the machine realtime sessions may fill (see `admitByCapacity`), 0.05-8. Default 1. */
  targetLoad?: number;
  /**
   * No session is admitted while the open ones' final transcripts arrive later than this after their utterance
   * ended, at p95 over the last minute, in ms; 0 turns the check off. Default 2000.
   */
  maxFinalLatencyMs?: number;
  /**
   * How a session over capacity is refused: `upgrade` answers the WebSocket upgrade with 503 and `Retry-After` (an
   * SDK sees a failed connection with the status), `event` accepts the socket, sends an `error` event
   * (`server_busy`) and closes it with 1013 (a browser, which cannot read an HTTP refusal, learns why). Default
   * `upgrade`.
   */
  refuseWith?: 'upgrade' | 'event';
}

export interface ResolvedRealtimeOptions {
  maxSessions: number;
  maxSessionsPerClient: number;
  maxSessionSeconds: number;
  idleTimeoutMs: number;
  maxMessageBytes: number;
  maxBufferedBytes: number;
  maxQueuedAudioBytes: number;
  maxQueuedSpeechChars: number;
  admitByCapacity: boolean;
  targetLoad: number;
  maxFinalLatencyMs: number;
  refuseWith: 'upgrade' | 'event';
}

export const DEFAULT_REALTIME_OPTIONS: Readonly<Omit<ResolvedRealtimeOptions, 'maxSessionsPerClient'>> = {
  maxSessions: 32,
  maxSessionSeconds: 3600,
  idleTimeoutMs: 60_000,
  maxMessageBytes: 1024 * 1024,
  maxBufferedBytes: 8 * 1024 * 1024,
  maxQueuedAudioBytes: 2 * 1024 * 1024,
  maxQueuedSpeechChars: 65_536,
  admitByCapacity: true,
  targetLoad: 1,
  maxFinalLatencyMs: 2000,
  refuseWith: 'upgrade',
};

export const REALTIME_KEYS = [
  'maxSessions',
  'maxSessionsPerClient',
  'maxSessionSeconds',
  'idleTimeoutMs',
  'maxMessageBytes',
  'maxBufferedBytes',
  'maxQueuedAudioBytes',
  'maxQueuedSpeechChars',
  'admitByCapacity',
  'targetLoad',
  'maxFinalLatencyMs',
  'refuseWith',
] as const;

export function resolveRealtimeOptions(value: unknown): ResolvedRealtimeOptions {
  const raw = objectOption('realtime', value);
  rejectUnknownKeys('realtime', raw, REALTIME_KEYS);
  const d = DEFAULT_REALTIME_OPTIONS;
  const maxSessions = integerOption('realtime.maxSessions', raw.maxSessions, 0, 100_000) ?? d.maxSessions;
  return {
    maxSessions,
    maxSessionsPerClient:
      integerOption('realtime.maxSessionsPerClient', raw.maxSessionsPerClient, 1, 100_000) ??
      Math.max(1, Math.ceil(maxSessions / 4)),
    maxSessionSeconds:
      integerOption('realtime.maxSessionSeconds', raw.maxSessionSeconds, 1, 7 * 86_400) ?? d.maxSessionSeconds,
    idleTimeoutMs: integerOption('realtime.idleTimeoutMs', raw.idleTimeoutMs, 100, 2 ** 31 - 1) ?? d.idleTimeoutMs,
    maxMessageBytes:
      integerOption('realtime.maxMessageBytes', raw.maxMessageBytes, 1024, 256 * 1024 * 1024) ?? d.maxMessageBytes,
    maxBufferedBytes:
      integerOption('realtime.maxBufferedBytes', raw.maxBufferedBytes, 64 * 1024, 2 ** 32) ?? d.maxBufferedBytes,
    maxQueuedAudioBytes:
      integerOption('realtime.maxQueuedAudioBytes', raw.maxQueuedAudioBytes, 4096, 2 ** 32) ?? d.maxQueuedAudioBytes,
    maxQueuedSpeechChars:
      integerOption('realtime.maxQueuedSpeechChars', raw.maxQueuedSpeechChars, 1024, 2 ** 30) ?? d.maxQueuedSpeechChars,
    admitByCapacity: booleanOption('realtime.admitByCapacity', raw.admitByCapacity) ?? d.admitByCapacity,
    targetLoad: numberOption('realtime.targetLoad', raw.targetLoad, 0.05, 8) ?? d.targetLoad,
    maxFinalLatencyMs:
      integerOption('realtime.maxFinalLatencyMs', raw.maxFinalLatencyMs, 0, 600_000) ?? d.maxFinalLatencyMs,
    refuseWith: enumOption('realtime.refuseWith', raw.refuseWith, ['upgrade', 'event'] as const) ?? d.refuseWith,
  };
}
