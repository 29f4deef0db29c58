// The engine the accuracy tier's speech tests share: the real voice en_US-joe-medium speaking, real Whisper models
// (by model id) listening, no VAD, nothing unloaded while the test runs.
import { dirname } from 'node:path';
import { createSpeech, type Speech } from '../../dist/index.js';

/** The engine, and the id of the joe voice in it (throws naming the voices there when it is missing). */
export async function joeSpeech(
  joeModel: string,
  models: Record<string, string>,
): Promise<{ speech: Speech; voice: string }> {
  const speech = createSpeech({ models, voiceDirs: [dirname(joeModel)], vadModel: null, idleUnloadMs: 0 });
  const voices = await speech.listVoices();
  const joe = voices.find((v) => v.id.includes('joe'));
  if (!joe) {
    await speech.close();
    throw new Error(`no joe voice among ${voices.map((v) => v.id).join(', ')}`);
  }
  return { speech, voice: joe.id };
}
