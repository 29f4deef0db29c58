// A stand-in diarization worker for Diarizer tests: the first region's start says how to behave.
import { parentPort } from 'node:worker_threads';

const waiting = new Set();
parentPort.on('message', (message) => {
  if (message.type === 'shutdown') process.exit(0);
  if (message.type === 'cancel') {
    // A job that never answers on its own stops when cancelled, as the real worker does at a checkpoint.
    if (waiting.delete(message.id)) {
      parentPort.postMessage({ type: 'error', id: message.id, code: 'ABORTED', message: 'cancelled' });
    }
    return;
  }
  const { id, regions, samples } = message;
  const mode = regions[0]?.start ?? 0;
  if (mode === 1) process.exit(7);
  if (mode === 2) {
    waiting.add(id); // never answers until cancelled
    return;
  }
  if (mode === 3) {
    // A long job: heartbeats every 50 ms for 1.2 s, then the result.
    const timer = setInterval(() => parentPort.postMessage({ type: 'progress', id }), 50);
    setTimeout(() => {
      clearInterval(timer);
      parentPort.postMessage({ type: 'result', id, turns: [] });
    }, 1200);
    return;
  }
  parentPort.postMessage({
    type: 'result',
    id,
    turns: [{ start: 0, end: samples.length / 16000, speaker: `speaker_1` }],
  });
});
