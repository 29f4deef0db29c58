// Speech as Server-Sent Events, for POST /v1/audio/speech (`stream_format: "sse"`, OpenAI's shape) and POST
// /v1/speech (`stream_format: "sse"`): each chunk of encoded audio as a base64 `speech.audio.delta`, the words timed
// so far as a `speech.audio.words` event (voxmill's; with `timestamps: "word"`) before the audio they time, then
// `speech.audio.done` with usage. A failure after the first event is sent as an error event.
import type { SpeechStream, SpokenWord } from '../../tts/types.js';
import { toHttpError } from '../http-error.js';
import { startEventStream } from '../sse.js';
import type { RouteContext } from './context.js';

export async function sendSpeechEvents(
  ctx: RouteContext,
  stream: SpeechStream,
  first: Buffer | undefined,
  inputChars: number,
): Promise<void> {
  const events = startEventStream(ctx.res);
  // The engine adds a sentence's words to stream.words before it pushes that sentence's bytes (the stream may have
  // run ahead of this loop), so the words not sent yet go before the next chunk.
  let sentWords = 0;
  // An engine of the host's own may hand out streams without `words`.
  const timed = (): readonly SpokenWord[] => stream.words ?? [];
  const sendWords = async () => {
    if (timed().length === sentWords) return;
    const words: SpokenWord[] = timed().slice(sentWords);
    sentWords = timed().length;
    await events.send({ type: 'speech.audio.words', words });
  };
  try {
    let bytes = 0;
    const send = async (chunk: Buffer) => {
      await sendWords();
      bytes += chunk.length;
      await events.send({ type: 'speech.audio.delta', audio: chunk.toString('base64') });
    };
    if (first) await send(first);
    for await (const chunk of stream) {
      // A client gone mid-stream: leaving the loop destroys the synthesis, which must not go on for nobody.
      if (ctx.res.destroyed) return;
      await send(chunk as Buffer);
    }
    await sendWords();
    // Characters in and audio bytes out: voxmill has no tokens to count.
    await events.send({
      type: 'speech.audio.done',
      usage: { input_tokens: inputChars, output_tokens: bytes, total_tokens: inputChars + bytes },
    });
  } catch (error) {
    if (!ctx.signal.aborted) {
      const httpError = toHttpError(error, ctx.options.retryAfterSeconds);
      httpError.requestId = ctx.requestId;
      await events.send(httpError.toJSON());
    }
  } finally {
    stream.destroy();
    events.end();
  }
}
