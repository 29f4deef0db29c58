#!/usr/bin/env node
// A voxmill server on the fixture models (random-weight whisper, the fixture Piper voices, the real Silero VAD) for
// property-based API testing: prints its base URL on the first line, runs until stdin closes or SIGTERM.
//
//   node scripts/api-fuzz/serve-fixtures.mjs <api key>
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createSpeech, createSpeechServer } from '../../dist/index.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const shared = process.env.VOXMILL_TEST_DATA ?? join(root, '..', 'shared');
const key = process.argv[2];
if (!key) throw new Error('usage: serve-fixtures.mjs <api key>');

const speech = createSpeech({
  models: {
    'svc-stt-1': join(root, 'test', 'fixtures', 'models', 'ggml-tiny-random.bin'),
    'svc-stt-1-flash': join(root, 'test', 'fixtures', 'models', 'ggml-tiny.en-random.bin'),
  },
  vadModel: join(shared, 'models', 'whisper', 'ggml-silero-v6.2.0.bin'),
  voiceDirs: [join(root, 'test', 'fixtures', 'voices')],
  threads: 1,
});
// Short audio only: generated uploads are small, and a long one would only make the run slow.
const server = createSpeechServer({ speech, auth: [key], limits: { maxAudioSeconds: 60 }, shutdownTimeoutMs: 1000 });
const { port } = await server.listen(0, '127.0.0.1');
console.log(`http://127.0.0.1:${port}`);
const stop = async () => {
  await server.shutdown();
  await speech.close();
  process.exit(0);
};
process.once('SIGTERM', stop);
process.stdin.on('close', stop);
process.stdin.resume();
