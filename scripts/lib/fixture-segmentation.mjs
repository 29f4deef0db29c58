// A fixture speaker segmentation model with segmentation-3.0's I/O contract (sherpa-onnx's export: input `x` float32
// [N, 1, 160000], output `y` [N, 589, 7] over the powerset classes none, {1}, {2}, {3}, {1,2}, {1,3}, {2,3}): each frame
// (991 samples every 270, segmentation-3.0's receptive field and step) is local speaker 1 where its mean absolute
// level passes 0.01, and nobody otherwise. Enough to run the segmentation pipeline end to end without the real model
// (one speaker per chunk; the embedding model tells them apart).
import { graph, model, node, tensor, valueInfo } from './onnx-writer.mjs';

const CLASSES = 7;

/** The model's bytes. */
export function segmentationModel() {
  // Logits = level * W + B: at level 0 "none" wins by 2, at 0.01 and above speaker 1 does.
  const weights = Float32Array.from({ length: CLASSES }, (_, k) => (k === 0 ? -100 : k === 1 ? 100 : 0));
  const bias = Float32Array.from({ length: CLASSES }, (_, k) => (k === 0 ? 1 : k === 1 ? -1 : -10));
  return model({
    graph: graph({
      name: 'fixture-speaker-segmentation',
      nodes: [
        node('Abs', ['x'], ['level']),
        node('AveragePool', ['level'], ['frames'], { kernel_shape: [991], strides: [270] }),
        node('Transpose', ['frames'], ['framesLast'], { perm: [0, 2, 1] }),
        node('MatMul', ['framesLast', 'weights'], ['scaled']),
        node('Add', ['scaled', 'bias'], ['y']),
      ],
      initializers: [tensor('weights', 'float32', [1, CLASSES], weights), tensor('bias', 'float32', [CLASSES], bias)],
      inputs: [valueInfo('x', 'float32', ['N', 1, 'samples'])],
      outputs: [valueInfo('y', 'float32', ['N', 'frames', CLASSES])],
    }),
  });
}

/** The fixture files, as { dir, name, data } under test/fixtures. */
export function fixtureSegmentationFiles() {
  return [{ dir: 'embeddings', name: 'fixture-speaker-segmentation.onnx', data: segmentationModel() }];
}
