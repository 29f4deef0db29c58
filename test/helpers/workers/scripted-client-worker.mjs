// A stand-in worker for WorkerClient tests: each job's `mode` says how to behave. workerData.log (shared memory):
// [1] is set when a shutdown message arrives.
import { parentPort, threadId, workerData } from 'node:worker_threads';

const log = new Int32Array(workerData.log);
const waiting = new Set();
const reply = (id, extra) => parentPort.postMessage({ type: 'reply', id, threadId, ...extra });

parentPort.on('message', (message) => {
  if (message.type === 'shutdown') {
    Atomics.store(log, 1, 1);
    process.exit(0);
  }
  if (message.type === 'cancel') {
    if (waiting.delete(message.id)) parentPort.postMessage({ type: 'cancelled', id: message.id });
    return;
  }
  if (message.type === 'more') {
    reply(message.id, { value: message.value });
    return;
  }
  const { id, mode, delayMs = 0 } = message;
  switch (mode) {
    case 'echo':
      setTimeout(() => reply(id, { value: message.value }), delayMs);
      break;
    case 'heartbeats': {
      // Alive messages every 50 ms for delayMs, then the reply.
      const timer = setInterval(() => parentPort.postMessage({ type: 'alive', id }), 50);
      setTimeout(() => {
        clearInterval(timer);
        reply(id, { value: 'after heartbeats' });
      }, delayMs);
      break;
    }
    case 'until-cancel':
      waiting.add(id);
      break;
    case 'silent':
      break;
    case 'exit':
      process.exit(5);
      break;
    case 'throw':
      setImmediate(() => {
        throw new Error('boom in worker');
      });
      break;
  }
});
