// The installed package from CommonJS (Node's require of an ES module): decode a file with the addon, speak with the
// fixture voice on the ONNX Runtime the package ships. Arguments: a WAV file, a voices directory. Prints JSON facts.
const { createSpeech, decodeAudio } = require('voxmill');

async function main() {
  const [wav, voices] = process.argv.slice(2);
  const audio = await decodeAudio(wav);
  const speech = createSpeech({ voiceDirs: [voices] });
  try {
    const spoken = await speech.synthesizeToBuffer({ voice: 'en_US-fixture', input: 'Hello.', format: 'wav' });
    console.log(JSON.stringify({ module: 'cjs', decodedSeconds: audio.duration, spokenBytes: spoken.audio.length }));
  } finally {
    await speech.close();
  }
}
main().catch((error) => {
  console.error(error);
  process.exitCode = 1;
});
