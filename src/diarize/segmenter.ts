// A loaded speaker segmentation model as the segmentation pipeline's runner: chunks of CHUNK_SAMPLES samples in
// ([N, 1, samples], the first input), the log-probabilities of the POWERSET classes per frame out ([N, 589, 7], the
// first output; sherpa-onnx's export names them `x` and `y`, scripts/models/segmentation-to-onnx.py `waveform` and
// `log_probabilities`). An answer of any other shape is an error naming the model: a wrong frame count would
// misplace every turn.
import type { NativeTensor } from '../native.js';
import { OnnxFailure, type OnnxModel } from '../util/onnx-model.js';
import { CHUNK_FRAMES, CHUNK_SAMPLES, POWERSET, type SegmentationRunner } from './segmentation-pipeline.js';

/** The runner of `session`, the segmentation model at `path` (named in errors). */
export function segmentationRunner(session: OnnxModel, path: string): SegmentationRunner {
  const inputName = session.inputs[0]?.name ?? '';
  const outputName = session.outputs[0]?.name ?? '';
  return async (chunks, batch) => {
    let output: NativeTensor | undefined;
    try {
      const results = await session.run(
        [{ name: inputName, type: 'float32', dims: [batch, 1, CHUNK_SAMPLES], data: chunks }],
        [outputName],
      );
      output = results.get(outputName);
    } catch (error) {
      const message = error instanceof OnnxFailure ? error.message : (error as Error).message;
      throw new Error(`speaker segmentation model ${path} failed: ${message}`);
    }
    const dims = output?.dims ?? [];
    if (
      output?.type !== 'float32' ||
      dims.length !== 3 ||
      dims[0] !== batch ||
      dims[1] !== CHUNK_FRAMES ||
      dims[2] !== POWERSET.length
    ) {
      throw new Error(
        `speaker segmentation model ${path} returned ${output?.type ?? 'nothing'} [${dims.join(', ')}]; voxmill reads [${batch}, ${CHUNK_FRAMES}, ${POWERSET.length}] float32 (segmentation-3.0's frames and powerset classes)`,
      );
    }
    return output.data;
  };
}
