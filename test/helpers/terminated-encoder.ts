// A worker thread that starts a long streaming encode (10 minutes at 48 kHz to pcm16 at 44.1 kHz, 53 MB of output)
// and is terminated while it runs: the output used to be lost with the environment, every time. The default tier
// checks the process is unharmed; the soak tier that the output is freed over repeated terminations.
import { Worker } from 'node:worker_threads';

export async function terminateEncodingWorker(addonPath: string): Promise<void> {
  const script = `
    const { parentPort } = require('node:worker_threads');
    const addon = require(${JSON.stringify(addonPath)});
    const samples = new Float32Array(48000 * 600);
    for (let i = 0; i < samples.length; i++) samples[i] = Math.sin(i * 0.05) * 0.3;
    const encoder = new addon.AudioEncoder({
      format: 'pcm16',
      inputSampleRate: 48000,
      outputSampleRate: 44100,
      whole: false,
      bitRate: 0,
    });
    encoder.encode(samples).promise.then(() => {}, () => {});
    parentPort.postMessage('started');
  `;
  const worker = new Worker(script, { eval: true });
  await new Promise((resolve, reject) => {
    worker.once('message', resolve);
    worker.once('error', reject);
  });
  await new Promise((resolve) => setTimeout(resolve, 100));
  await worker.terminate();
}
