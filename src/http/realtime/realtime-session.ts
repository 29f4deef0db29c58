// One `/v1/realtime` WebSocket session: OpenAI's Realtime transcription events in and out (audio appended as base64
// PCM, utterances cut by the server VAD or committed by the client, each transcribed when it ends), driving a
// LiveTranscriber; and voxmill's speech extension (`voxmill.speech.*`: text deltas in, audio deltas out) driving a
// LiveSpeech. Every malformed or refused client event is answered with an `error` event naming the field; the socket
// is closed only for the session's limits (idle, lifetime, a client that does not read), with a close reason.
import { decodeALaw, decodeMuLaw } from '../../audio/g711.js';
import { InvalidOptionTypeError, InvalidOptionValueError, ModelNotFoundError } from '../../errors.js';
import type { Speech } from '../../speech.js';
import type { LiveDiarizeOptions } from '../../stt/live-options.js';
import type { LiveTranscriber, LiveTranscriptionEvent } from '../../stt/live-transcriber.js';
import type { LiveSpeech } from '../../tts/live-speech.js';
import { isPlainObject } from '../../util/validate.js';
import { toHttpError } from '../http-error.js';
import { modelIdFor, type ResolvedOpenAiOptions, voiceIdFor } from '../openai/openai-options.js';
import {
  DEFAULT_REALTIME_CONFIG,
  type RealtimeConfig,
  readSessionUpdate,
  type SessionDialect,
  sessionObject,
} from './realtime-config.js';
import type { ResolvedRealtimeOptions } from './realtime-options.js';

/** What a realtime session needs of the engine. */
export type RealtimeEngine = Pick<Speech, 'createTranscriber' | 'createLiveSpeech' | 'listVoices' | 'modelIds'>;

/**
 * What a session uses of its socket (a `ws` WebSocket). Declared here so that the package's types do not need
 * `@types/ws` in an app that only imports voxmill.
 */
export interface RealtimeSocket {
  readonly readyState: number;
  readonly OPEN: number;
  readonly bufferedAmount: number;
  send(data: string, callback: (error?: Error) => void): void;
  close(code: number, reason: string): void;
  terminate(): void;
  pause(): void;
  resume(): void;
  on(event: 'message', listener: (data: Buffer | ArrayBuffer | Buffer[], isBinary: boolean) => void): this;
  on(event: 'close', listener: () => void): this;
  on(event: 'error', listener: (error: Error) => void): this;
}

export interface RealtimeSessionParts {
  socket: RealtimeSocket;
  engine: RealtimeEngine;
  limits: ResolvedRealtimeOptions;
  openai: ResolvedOpenAiOptions;
  dialect: SessionDialect;
  id: string;
  /**
   * Each final transcript: the utterance's length and, when the VAD ended it, how long after its end the text came
   * (ms; undefined for an utterance a commit ended).
   */
  onFinal?: (utteranceSeconds: number, latencyMs: number | undefined) => void;
}

/** A client event the session refuses: answered with an `error` event, the session goes on. */
class RealtimeEventError extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly param: string | null = null,
  ) {
    super(message);
  }
}

/** Why an utterance has no speakers, for the client: the error's code (when it has one) and message. */
function speakerErrorObject(error: Error): { code: string | null; message: string } {
  const code = (error as { code?: unknown }).code;
  return { code: typeof code === 'string' ? code : null, message: error.message };
}

/** The conversation item of one utterance: a user message with its audio's transcript (null until known). */
function userAudioItem(id: string, transcript: string | null): Record<string, unknown> {
  return {
    id,
    type: 'message',
    object: 'realtime.item',
    status: 'completed',
    role: 'user',
    content: [{ type: 'input_audio', transcript }],
  };
}

/** Audio synthesized for `voxmill.speech.*`: 16-bit PCM at 24 kHz, as OpenAI's realtime audio output. */
const SPEECH_RATE = 24000;
/** A speech stream waits while this much is queued for the client, and goes on below a quarter of it. */
const SPEECH_SEND_HIGH_WATER = 1024 * 1024;

/** Close codes (RFC 6455): normal end, a limit of the session, the server going away. */
const CLOSE_NORMAL = 1000;
const CLOSE_POLICY = 1008;
const CLOSE_GOING_AWAY = 1001;
const CLOSE_GRACE_MS = 1000;
/** What a queued commit or clear counts as toward maxQueuedAudioBytes. */
const CONTROL_COST = 1024;
/** What a queued speech event (flush, end, cancel) counts as toward maxQueuedSpeechChars, beside its text. */
const SPEECH_OP_COST = 64;
/** The longest event type echoed back in an unsupported_event error. */
const MAX_ECHOED_TYPE = 64;

export class RealtimeSession {
  readonly #parts: RealtimeSessionParts;
  readonly #stop = new AbortController();
  #config: RealtimeConfig = DEFAULT_REALTIME_CONFIG;
  #dialect: SessionDialect;
  #events = 0;
  #items = 0;
  #closed = false;
  #idleTimer: NodeJS.Timeout | undefined;
  readonly #lifeTimer: NodeJS.Timeout;
  /** Milliseconds of audio the client has appended. */
  #streamMs = 0;
  #transcriber: LiveTranscriber | undefined;
  /** The transcription a settings change ended, finishing what it heard. */
  #retiring: LiveTranscriber | undefined;
  /**
   * The commit a settings change made of the audio appended before it (the retired transcription's open utterance),
   * until new audio starts another transcription: a client commit right after the change answers with it.
   */
  #retiredCommit: Promise<number | undefined> | undefined;
  readonly #generations = new WeakMap<LiveTranscriber, number>();
  /** Bytes of appended audio (and commits / clears, at a fixed cost) the transcriber has not taken yet. */
  #queuedAudio = 0;
  #throttled = false;
  #generation = 0;
  /** Item ids by transcriber generation and utterance, and whether the item was committed. */
  readonly #itemIds = new Map<string, { id: string; committed: boolean }>();
  /** When the VAD ended each utterance still waiting for its final (performance.now()), by the item's key. */
  readonly #stoppedAt = new Map<string, number>();
  #lastItemId: string | null = null;
  /** The speech that takes text now. */
  #speech: LiveSpeech | undefined;
  /** Speeches whose audio is still going out, each until its end. */
  readonly #speaking = new Map<LiveSpeech, Promise<void>>();
  #speeches = 0;
  /** Speech events in order: each waits for the one before (a new speech waits to start). */
  #speechOps: Promise<void> = Promise.resolve();
  /** Counts cancels: speech events queued before one are dropped. */
  #speechEpoch = 0;
  /** Characters (and SPEECH_OP_COST per event) of speech events waiting their turn. */
  #queuedSpeech = 0;

  constructor(parts: RealtimeSessionParts) {
    this.#parts = parts;
    this.#dialect = parts.dialect;
    const { socket, limits } = parts;
    socket.on('message', (data, isBinary) => this.#onMessage(data, isBinary));
    socket.on('close', () => this.#dispose());
    // A transport error is followed by 'close'; without a listener it would be thrown.
    socket.on('error', () => undefined);
    this.#lifeTimer = setTimeout(
      () => this.#end('session_expired', `the session reached its limit of ${limits.maxSessionSeconds} s`),
      limits.maxSessionSeconds * 1000,
    );
    this.#touch();
    this.#send({ type: `${this.#prefix()}.created`, session: this.#session() });
  }

  /** Ends the session from the server's side (shutdown): an error event saying why, then close 1001. */
  close(code: string, message: string): void {
    const { socket } = this.#parts;
    this.#end(code, message, CLOSE_GOING_AWAY);
    // A client that does not answer the close handshake is cut after a second, not ws's 30 s.
    setTimeout(() => socket.terminate(), CLOSE_GRACE_MS).unref();
  }

  #prefix(): string {
    return this.#dialect === 'beta' ? 'transcription_session' : 'session';
  }

  #session(): Record<string, unknown> {
    return sessionObject(this.#parts.id, this.#config, this.#dialect);
  }

  /** Restarts the idle clock: an event went either way. A throttled session is not idle (it is not being read). */
  #touch(): void {
    clearTimeout(this.#idleTimer);
    if (this.#throttled || this.#closed) return;
    this.#idleTimer = setTimeout(
      () => this.#end('idle_timeout', `no event from the client for ${this.#parts.limits.idleTimeoutMs} ms`),
      this.#parts.limits.idleTimeoutMs,
    );
  }

  #send(event: Record<string, unknown>): void {
    const { socket, limits } = this.#parts;
    if (this.#closed || socket.readyState !== socket.OPEN) return;
    if (socket.bufferedAmount > limits.maxBufferedBytes) {
      this.#close(CLOSE_POLICY, 'the client is not reading its events');
      return;
    }
    socket.send(JSON.stringify({ event_id: `event_${++this.#events}`, ...event }), () => this.#sent());
    this.#touch();
  }

  /** A message went out: speech held back for a slow client goes on once its queue is low again. */
  #sent(): void {
    if (this.#parts.socket.bufferedAmount >= SPEECH_SEND_HIGH_WATER / 4) return;
    for (const speech of this.#speaking.keys()) if (speech.isPaused()) speech.resume();
  }

  #sendError(error: unknown, clientEventId?: string): void {
    let type = 'invalid_request_error';
    let code: string;
    let message: string;
    let param: string | null = null;
    if (error instanceof RealtimeEventError) {
      ({ code, message, param } = error);
    } else if (error instanceof InvalidOptionTypeError || error instanceof InvalidOptionValueError) {
      code = 'invalid_value';
      message = error.message;
      param = error.param;
    } else {
      const http = toHttpError(error, 1);
      ({ type, code, message, param } = http);
    }
    this.#send({ type: 'error', error: { type, code, message, param, event_id: clientEventId ?? null } });
  }

  /** An error event, then the socket closed with the reason. */
  #end(code: string, message: string, closeCode = CLOSE_NORMAL): void {
    this.#sendError(new RealtimeEventError(code, message));
    this.#close(closeCode, message);
  }

  #close(code: number, reason: string): void {
    if (this.#closed) return;
    // A close reason is at most 123 bytes.
    this.#parts.socket.close(code, Buffer.from(reason).subarray(0, 123).toString());
    this.#dispose();
  }

  #dispose(): void {
    if (this.#closed) return;
    this.#closed = true;
    clearTimeout(this.#idleTimer);
    clearTimeout(this.#lifeTimer);
    this.#stop.abort(new Error('the realtime session ended'));
    this.#transcriber?.destroy();
    this.#transcriber = undefined;
    for (const speech of this.#speaking.keys()) speech.destroy();
    this.#speaking.clear();
    this.#speech = undefined;
  }

  #onMessage(data: Buffer | ArrayBuffer | Buffer[], isBinary: boolean): void {
    if (this.#closed) return;
    this.#touch();
    if (isBinary) {
      this.#sendError(new RealtimeEventError('invalid_event', 'events are JSON text messages, not binary ones'));
      return;
    }
    let event: unknown;
    try {
      event = JSON.parse(String(data));
    } catch (error) {
      this.#sendError(new RealtimeEventError('invalid_json', `the message is not JSON: ${(error as Error).message}`));
      return;
    }
    if (!isPlainObject(event) || typeof event.type !== 'string') {
      this.#sendError(
        new RealtimeEventError('invalid_event', 'an event is a JSON object with a string "type"', 'type'),
      );
      return;
    }
    const clientEventId = typeof event.event_id === 'string' ? event.event_id : undefined;
    try {
      this.#dispatch(event.type, event, clientEventId);
    } catch (error) {
      this.#sendError(error, clientEventId);
    }
  }

  #dispatch(type: string, event: Record<string, unknown>, clientEventId: string | undefined): void {
    switch (type) {
      case 'session.update':
      case 'transcription_session.update':
        this.#update(type === 'session.update' ? 'ga' : 'beta', event.session);
        return;
      case 'input_audio_buffer.append':
        this.#append(event.audio);
        return;
      case 'input_audio_buffer.commit':
        this.#commit(clientEventId);
        return;
      case 'input_audio_buffer.clear': {
        // After the audio appended before it; what a settings change committed is not the buffer any more.
        this.#retiredCommit = undefined;
        const generation = this.#generation;
        this.#queued(this.#transcriber?.clear(), (dropped) => {
          if (dropped !== undefined) this.#itemIds.delete(`${generation}:${dropped}`);
          this.#send({ type: 'input_audio_buffer.cleared' });
        });
        return;
      }
      case 'voxmill.speech.append':
        this.#speak(event.text, event.voice);
        return;
      case 'voxmill.speech.flush':
        this.#withSpeech((speech) => speech.flush());
        return;
      case 'voxmill.speech.end':
        this.#withSpeech((speech) => {
          // It finishes on its own (its audio, then voxmill.speech.done); the next append starts another.
          this.#speech = undefined;
          speech.end();
        });
        return;
      case 'voxmill.speech.cancel':
        this.#cancelSpeech();
        return;
      default:
        throw new RealtimeEventError(
          'unsupported_event',
          `voxmill does not serve ${JSON.stringify(type.slice(0, MAX_ECHOED_TYPE))} events: this endpoint transcribes (session.update, ` +
            'input_audio_buffer.append|commit|clear) and speaks (voxmill.speech.append|flush|end|cancel)',
          'type',
        );
    }
  }

  #update(dialect: SessionDialect, session: unknown): void {
    const next = readSessionUpdate(session, dialect, this.#config);
    if (next.model !== undefined) this.#modelId(next.model, 'model');
    if (next.diarize && JSON.stringify(next.diarize) !== JSON.stringify(this.#config.diarize)) {
      this.#checkDiarize(next.diarize);
    }
    const before = this.#config;
    this.#config = next;
    this.#dialect = dialect;
    // A running transcription keeps its settings: it finishes what it heard, and the next audio starts a new one.
    const { speech: _a, ...was } = before;
    const { speech: _b, ...now } = next;
    if (this.#transcriber && JSON.stringify(was) !== JSON.stringify(now)) {
      // One transcription at most finishes in the background: a second settings change in the meantime stops the
      // older one (its unfinished items fail), so a storm of updates cannot run many transcriptions at once.
      const older = this.#retiring;
      if (older) {
        older.destroy();
        this.#failItems(this.#generations.get(older) ?? -1, 'session_updated', 'the session settings changed twice');
      }
      this.#retiring = this.#transcriber;
      // The audio appended before the change is committed now, under the settings it was heard with.
      const generation = this.#generation;
      const utterance = this.#transcriber.commit();
      this.#retiredCommit = utterance;
      this.#queued(utterance, (committed) => {
        if (committed !== undefined) this.#committed(this.#item(generation, committed));
      });
      this.#transcriber.end();
      this.#transcriber = undefined;
    }
    this.#send({ type: `${this.#prefix()}.updated`, session: this.#session() });
  }

  /**
   * Speaker labels need a speaker-embedding model: a session is told at its update (a trial transcriber, no VAD,
   * destroyed at once), not at every append that would start the transcription.
   */
  #checkDiarize(diarize: LiveDiarizeOptions): void {
    try {
      this.#parts.engine.createTranscriber({ vad: false, interimIntervalMs: 0, diarize }).destroy();
    } catch (error) {
      // What the option decides is the field's error; anything else (the engine closing) is itself.
      if (!(error instanceof ModelNotFoundError || error instanceof InvalidOptionValueError)) throw error;
      throw new RealtimeEventError(
        error instanceof ModelNotFoundError ? 'model_not_found' : 'invalid_value',
        error.message,
        'session.voxmill.diarize',
      );
    }
  }

  /** The served model id of an OpenAI model name or a voxmill id. */
  #modelId(name: string, param: string): string {
    const served = this.#parts.engine.modelIds;
    const id = modelIdFor(this.#parts.openai, name, served);
    if (!served.includes(id)) {
      throw new RealtimeEventError(
        'model_not_found',
        `unknown transcription model ${JSON.stringify(name)}; available: ${served.join(', ')}`,
        param,
      );
    }
    return id;
  }

  #append(audio: unknown): void {
    if (typeof audio !== 'string') throw new InvalidOptionTypeError('audio', 'a base64 string', audio);
    if (!/^[A-Za-z0-9+/]*={0,2}$/.test(audio) || audio.length % 4 === 1) {
      throw new InvalidOptionValueError('audio', 'base64 audio', `${audio.length} characters that are not base64`);
    }
    const bytes = Buffer.from(audio, 'base64');
    if (bytes.length === 0) return;
    const { format } = this.#config;
    const chunk = format.type === 'pcm16' ? bytes : format.type === 'pcmu' ? decodeMuLaw(bytes) : decodeALaw(bytes);
    // A transcription started now begins its clock at this chunk's first sample.
    const transcriber = this.#transcriber ?? this.#startTranscriber();
    this.#streamMs += ((format.type === 'pcm16' ? bytes.length / 2 : bytes.length) / format.rate) * 1000;
    // Audio waits in the transcriber's queue while transcription catches up (the session's other events, such as a
    // speech cancel, still flow); past maxQueuedAudioBytes the client is throttled: its socket is not read until the
    // queue is down to a quarter.
    const size = bytes.length;
    this.#queuedAudio += size;
    transcriber.write(chunk, () => this.#unqueue(size));
    if (this.#queuedAudio > this.#parts.limits.maxQueuedAudioBytes) this.#throttle(true);
  }

  #throttle(on: boolean): void {
    if (this.#throttled === on) return;
    this.#throttled = on;
    if (on) this.#parts.socket.pause();
    else this.#parts.socket.resume();
    this.#touch();
  }

  #startTranscriber(): LiveTranscriber {
    this.#retiredCommit = undefined;
    const config = this.#config;
    const vad = config.turnDetection && {
      threshold: config.turnDetection.threshold,
      minSilenceMs: config.turnDetection.silenceDurationMs,
      speechPadMs: config.turnDetection.prefixPaddingMs,
    };
    const transcriber = this.#parts.engine.createTranscriber({
      ...(config.model !== undefined ? { model: this.#modelId(config.model, 'model') } : {}),
      ...(config.language !== undefined ? { language: config.language } : {}),
      ...(config.prompt !== undefined ? { prompt: config.prompt } : {}),
      sampleRate: config.format.rate,
      vad: vad ?? false,
      interimIntervalMs: config.interimIntervalMs,
      ...(config.diarize ? { diarize: config.diarize } : {}),
      signal: this.#stop.signal,
    });
    const generation = ++this.#generation;
    this.#generations.set(transcriber, generation);
    // Times from the transcription are seconds from its own start: the session's clock adds where it began.
    const baseMs = this.#streamMs;
    transcriber.on('event', (event: LiveTranscriptionEvent) => this.#onTranscription(generation, baseMs, event));
    transcriber.on('error', (error: Error) => {
      if (this.#closed) return;
      this.#sendError(error);
      // Its committed utterances will get no text: each is told, and forgotten. (Its queued writes all call back,
      // with an error, so the queued audio count settles by itself.)
      this.#failItems(generation, 'transcription_failed', 'the transcription failed; see the error event');
      if (this.#transcriber === transcriber) this.#transcriber = undefined;
    });
    // A retired transcription is done once its last final is out.
    transcriber.once('close', () => {
      if (this.#retiring === transcriber) this.#retiring = undefined;
    });
    this.#transcriber = transcriber;
    return transcriber;
  }

  /** `.failed` for every item of a transcription that will not give their text, which are then forgotten. */
  #failItems(generation: number, code: string, message: string): void {
    for (const [key, item] of this.#itemIds) {
      if (!key.startsWith(`${generation}:`)) continue;
      this.#itemIds.delete(key);
      if (!item.committed) continue;
      this.#send({
        type: 'conversation.item.input_audio_transcription.failed',
        item_id: item.id,
        content_index: 0,
        error: { type: 'server_error', code, message, param: null },
      });
    }
  }

  #item(generation: number, utterance: number): { id: string; committed: boolean } {
    const key = `${generation}:${utterance}`;
    let item = this.#itemIds.get(key);
    if (!item) {
      item = { id: `item_${this.#parts.id}_${++this.#items}`, committed: false };
      this.#itemIds.set(key, item);
    }
    return item;
  }

  /** `input_audio_buffer.committed`, then the conversation item it became, as OpenAI sends them (once per item). */
  #committed(item: { id: string; committed: boolean }): void {
    if (item.committed) return;
    item.committed = true;
    const previous = this.#lastItemId;
    this.#send({ type: 'input_audio_buffer.committed', previous_item_id: previous, item_id: item.id });
    this.#send({
      type: this.#dialect === 'beta' ? 'conversation.item.created' : 'conversation.item.added',
      previous_item_id: previous,
      item: userAudioItem(item.id, null),
    });
    this.#lastItemId = item.id;
  }

  #onTranscription(generation: number, baseMs: number, event: LiveTranscriptionEvent): void {
    const ms = (seconds: number) => Math.round(baseMs + seconds * 1000);
    const key = `${generation}:${event.utterance}`;
    const item = this.#item(generation, event.utterance);
    switch (event.type) {
      case 'speech_started':
        this.#send({ type: 'input_audio_buffer.speech_started', audio_start_ms: ms(event.at), item_id: item.id });
        return;
      case 'speech_stopped':
        this.#stoppedAt.set(key, performance.now());
        this.#send({ type: 'input_audio_buffer.speech_stopped', audio_end_ms: ms(event.at), item_id: item.id });
        this.#committed(item);
        return;
      case 'interim':
        this.#send({
          type: 'voxmill.input_audio_transcription.interim',
          item_id: item.id,
          content_index: 0,
          text: event.text,
        });
        return;
      case 'final': {
        this.#committed(item);
        const stoppedAt = this.#stoppedAt.get(key);
        this.#stoppedAt.delete(key);
        this.#parts.onFinal?.(
          Math.max(0, event.end - event.start),
          stoppedAt === undefined ? undefined : performance.now() - stoppedAt,
        );
        if (event.text !== '') {
          this.#send({
            type: 'conversation.item.input_audio_transcription.delta',
            item_id: item.id,
            content_index: 0,
            delta: event.text,
          });
        }
        this.#send({
          type: 'conversation.item.input_audio_transcription.completed',
          item_id: item.id,
          content_index: 0,
          transcript: event.text,
          usage: { type: 'duration', seconds: Math.round((event.end - event.start) * 1000) / 1000 },
          voxmill: {
            audio_start_ms: ms(event.start),
            audio_end_ms: ms(event.end),
            language: event.language,
            words: event.words.map((w) => ({
              word: w.word,
              start_ms: ms(w.start),
              end_ms: ms(w.end),
              ...(w.speaker === undefined ? {} : { speaker: w.speaker }),
            })),
            ...(event.speaker === undefined ? {} : { speaker: event.speaker }),
            ...(event.turns === undefined
              ? {}
              : {
                  turns: event.turns.map((t) => ({ speaker: t.speaker, start_ms: ms(t.start), end_ms: ms(t.end) })),
                }),
            // Labelling failed for this utterance (its text stands): not the same as nobody found.
            ...(event.speakerError === undefined ? {} : { speaker_error: speakerErrorObject(event.speakerError) }),
          },
        });
        if (this.#dialect === 'ga')
          this.#send({ type: 'conversation.item.done', item: userAudioItem(item.id, event.text) });
        this.#itemIds.delete(key);
        return;
      }
      case 'failed':
        this.#committed(item);
        this.#send({
          type: 'conversation.item.input_audio_transcription.failed',
          item_id: item.id,
          content_index: 0,
          error: { type: 'rate_limit_error', code: 'queue_full', message: event.error.message, param: null },
        });
        this.#itemIds.delete(key);
        this.#stoppedAt.delete(key);
        return;
    }
  }

  #commit(clientEventId: string | undefined): void {
    // No audio since a settings change: the commit is the one that change made, answered by the committed event it
    // sent. Once: a second commit has nothing to commit.
    const retired = this.#transcriber ? undefined : this.#retiredCommit;
    this.#retiredCommit = undefined;
    const generation = this.#generation;
    this.#queued(retired ?? this.#transcriber?.commit(), (utterance) => {
      if (retired && utterance !== undefined) return;
      if (utterance !== undefined) {
        this.#committed(this.#item(generation, utterance));
        return;
      }
      const error = new RealtimeEventError(
        'input_audio_buffer_commit_empty',
        'there is no uncommitted audio to commit (with turn detection on, the server commits when speech stops)',
      );
      this.#sendError(error, clientEventId);
    });
  }

  /**
   * A commit or clear waits behind the audio appended before it, and counts toward the throttle like that much
   * audio (CONTROL_COST), so a flood of them is bounded too. Without a transcription it answers at once.
   */
  #queued(pending: Promise<number | undefined> | undefined, then: (utterance: number | undefined) => void): void {
    if (!pending) {
      then(undefined);
      return;
    }
    this.#queuedAudio += CONTROL_COST;
    if (this.#queuedAudio > this.#parts.limits.maxQueuedAudioBytes) this.#throttle(true);
    pending
      .then((utterance) => {
        this.#unqueue(CONTROL_COST);
        if (!this.#closed) then(utterance);
      })
      .catch((error: unknown) => this.#sendError(error));
  }

  #unqueue(bytes: number): void {
    this.#queuedAudio -= bytes;
    if (this.#throttled && this.#queuedAudio <= this.#parts.limits.maxQueuedAudioBytes / 4) this.#throttle(false);
  }

  #speak(text: unknown, voice: unknown): void {
    if (typeof text !== 'string') throw new InvalidOptionTypeError('text', 'a string', text);
    if (voice !== undefined && typeof voice !== 'string') {
      throw new InvalidOptionTypeError('voice', 'a voice id', voice);
    }
    this.#withSpeech(
      (speech) => {
        // Never throttled: the socket must stay readable for a cancel. A client that writes text far faster than it
        // can be spoken fails the speech (TTS_WRITE_OVERFLOW) instead.
        speech.write(text);
      },
      text.length,
      voice ?? this.#config.speech.voice ?? null,
    );
  }

  /**
   * Runs `op` on the live speech in order with the other speech events; `voice` (for an append) starts one when none
   * takes text, once the speeches before it have finished (one voice speaks at a time, so their audio never
   * interleaves). Events waiting their turn hold at most maxQueuedSpeechChars (text, and SPEECH_OP_COST each);
   * past it the event is refused with `speech_queue_full`. Failures are answered as error events.
   */
  #withSpeech(op: (speech: LiveSpeech) => void, chars = 0, voice?: string | null): void {
    const cost = chars + SPEECH_OP_COST;
    if (this.#queuedSpeech + cost > this.#parts.limits.maxQueuedSpeechChars) {
      throw new RealtimeEventError(
        'speech_queue_full',
        `speech events waiting their turn hold ${this.#parts.limits.maxQueuedSpeechChars} characters already; ` +
          'wait for voxmill.speech.sentence events before sending more text',
      );
    }
    this.#queuedSpeech += cost;
    const epoch = this.#speechEpoch;
    const current = () => !this.#closed && epoch === this.#speechEpoch;
    this.#speechOps = this.#speechOps
      .then(async () => {
        if (!current()) return;
        if (!this.#speech && voice !== undefined) {
          await Promise.all(this.#speaking.values());
          if (!current()) return;
          const made = await this.#createSpeech(voice);
          // Cancelled (or closed) while it was being made: it never started.
          if (!current()) {
            made.speech.destroy();
            return;
          }
          this.#speech = this.#startSpeech(made.speech, made.voice);
        }
        if (this.#speech && current()) op(this.#speech);
      })
      .catch((error: unknown) => this.#sendError(error))
      .finally(() => {
        this.#queuedSpeech -= cost;
      });
  }

  /** Barge-in: every speech stops now (each still ends with voxmill.speech.done), queued speech events are dropped. */
  #cancelSpeech(): void {
    this.#speechEpoch++;
    this.#speech = undefined;
    for (const speech of this.#speaking.keys()) speech.cancel();
  }

  /** A live speech in the voice a client named (an id, or an OpenAI name); nothing is sent yet. */
  async #createSpeech(voice: string | null): Promise<{ speech: LiveSpeech; voice: string }> {
    if (voice === null) {
      throw new RealtimeEventError(
        'voice_required',
        'name a voice: voxmill.speech.append { voice } or session.voxmill.speech.voice (GET /v1/voices lists them)',
        'voice',
      );
    }
    const installed = (await this.#parts.engine.listVoices()).map((v) => v.id);
    const voiceId = voiceIdFor(this.#parts.openai, voice, installed);
    const speed = this.#config.speech.speed;
    const speech = await this.#parts.engine.createLiveSpeech({
      voice: voiceId,
      format: 'pcm16',
      sampleRate: SPEECH_RATE,
      ...(speed !== undefined ? { speed } : {}),
      signal: this.#stop.signal,
    });
    return { speech, voice: voiceId };
  }

  /** Announces a speech and forwards its sentences and audio until it ends; it counts as speaking until then. */
  #startSpeech(speech: LiveSpeech, voiceId: string): LiveSpeech {
    const id = `speech_${this.#parts.id}_${++this.#speeches}`;
    this.#send({
      type: 'voxmill.speech.started',
      speech_id: id,
      voice: voiceId,
      format: { type: 'audio/pcm', rate: SPEECH_RATE },
    });
    speech.on('sentence', (sentence: { text: string }) =>
      this.#send({ type: 'voxmill.speech.sentence', speech_id: id, text: sentence.text }),
    );
    speech.on('data', (chunk: Buffer) => {
      this.#send({ type: 'voxmill.speech.audio.delta', speech_id: id, delta: chunk.toString('base64') });
      // The audio waits while the client is slow to take it (#send resumes it; maxBufferedBytes bounds the rest).
      if (this.#parts.socket.bufferedAmount > SPEECH_SEND_HIGH_WATER) speech.pause();
    });
    let done: () => void = () => undefined;
    this.#speaking.set(
      speech,
      new Promise<void>((resolve) => {
        done = resolve;
      }),
    );
    let ended = false;
    const finished = () => {
      if (ended) return;
      ended = true;
      if (this.#speech === speech) this.#speech = undefined;
      this.#speaking.delete(speech);
      done();
      // After cancel() the text side is still open: nothing more will be spoken, so all of it goes.
      speech.destroy();
    };
    speech.on('end', () => {
      this.#send({ type: 'voxmill.speech.done', speech_id: id });
      finished();
    });
    speech.on('error', (error: Error) => {
      if (!this.#closed) this.#sendError(error);
      finished();
    });
    // Destroyed without an end or an error (the session closing): still no longer speaking.
    speech.on('close', finished);
    return speech;
  }
}
