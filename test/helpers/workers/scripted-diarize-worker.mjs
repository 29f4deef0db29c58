// A stand-in diarization worker for Diarizer tests: the first region's start says how to behave.
import { parentPort } from 'node:worker_threads';

const cancelled = new Set();
parentPort.on('message', (message) => {
  if (message.type === 'shutdown') process.exit(0);
  if (message.type === 'cancel') {
    cancelled.add(message.id);
    return;
  }
  const { id, regions, samples } = message;
  const mode = regions[0]?.start ?? 0;
  if (mode === 1) process.exit(7);
  if (mode === 2) return; // never answers (until cancelled)
  parentPort.postMessage({
    type: 'result',
    id,
    turns: [{ start: 0, end: samples.length / 16000, speaker: `speaker_1` }],
  });
});
