// A stand-in synthesis worker for pool tests: its first text chunk says how to misbehave.
import { parentPort } from 'node:worker_threads';

parentPort.on('message', (message) => {
  if (message.type === 'shutdown') process.exit(0);
  if (message.type !== 'job') return;
  const { jobId: id, chunks } = message.job;
  switch (chunks[0]) {
    case 'exit':
      process.exit(3);
      break;
    case 'throw':
      setImmediate(() => {
        throw new Error('boom in worker');
      });
      break;
    case 'stall':
      break;
    case 'fatal':
      parentPort.postMessage({ type: 'error', id, code: 'SYNTHESIS_FAILED', message: 'wasm trapped', fatal: true });
      break;
    default: {
      const samples = new Float32Array(100).fill(0.25);
      parentPort.postMessage({ type: 'audio', id, samples }, [samples.buffer]);
      parentPort.postMessage({
        type: 'done',
        id,
        stats: {
          sentences: 1,
          phonemeIds: 3,
          samples: 100,
          missingPhonemes: [],
          phonemizeMs: 0,
          inferenceMs: 0,
          sessionLoadMs: 0,
        },
      });
    }
  }
});
