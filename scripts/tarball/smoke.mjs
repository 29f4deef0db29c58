// The installed package as an ES module: the same calls as smoke.cjs. Arguments: a WAV file, a voices directory.
import { createSpeech, decodeAudio } from 'voxmill';

const [wav, voices] = process.argv.slice(2);
const audio = await decodeAudio(wav);
const speech = createSpeech({ voiceDirs: [voices] });
try {
  const spoken = await speech.synthesizeToBuffer({ voice: 'en_US-fixture', input: 'Hello.', format: 'wav' });
  console.log(JSON.stringify({ module: 'esm', decodedSeconds: audio.duration, spokenBytes: spoken.audio.length }));
} finally {
  await speech.close();
}
