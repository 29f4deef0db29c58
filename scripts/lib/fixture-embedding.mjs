// A fixture speaker-embedding model with the I/O contract of sherpa-onnx's speaker-recognition models: input
// `feats` float32 [N, T, 80] (log-mel frames), output `embs` float32 [N, 16]. The embedding is the mean squared frame
// times a seeded random 80 x 16 projection. Squared, because the worker subtracts each window's mean frame (as real
// models expect), so a plain mean would be zero: the per-band variance differs between voices and stays close for
// clips of one voice, so clustering and known-speaker matching can be tested without a real model.
import { graph, model, node, tensor, valueInfo } from './onnx-writer.mjs';

const BINS = 80;
const DIM = 16;

function projection() {
  // A fixed linear congruential sequence: the same weights on every machine.
  let state = 12345;
  const values = new Float32Array(BINS * DIM);
  for (let i = 0; i < values.length; i++) {
    state = (state * 1103515245 + 12345) % 2 ** 31;
    values[i] = (state / 2 ** 31) * 2 - 1;
  }
  return values;
}

/** The model's bytes. */
export function embeddingModel() {
  return model({
    graph: graph({
      name: 'fixture-speaker-embedding',
      nodes: [
        node('Mul', ['feats', 'feats'], ['squared']),
        node('ReduceMean', ['squared'], ['mean'], { axes: [1], keepdims: 0 }),
        node('MatMul', ['mean', 'projection'], ['embs']),
      ],
      initializers: [tensor('projection', 'float32', [BINS, DIM], projection())],
      inputs: [valueInfo('feats', 'float32', ['N', 'T', BINS])],
      outputs: [valueInfo('embs', 'float32', ['N', DIM])],
    }),
  });
}

/** The fixture files, as { dir, name, data } under test/fixtures. */
export function fixtureEmbeddingFiles() {
  return [{ dir: 'embeddings', name: 'fixture-speaker-embedding.onnx', data: embeddingModel() }];
}
