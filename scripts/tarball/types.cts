// Type-checked against the installed package from CommonJS (TypeScript's nodenext resolves require of the ES module).
import voxmill = require('voxmill');

const speech = voxmill.createSpeech({ onnxRuntime: 'auto' });
// @ts-expect-error: not a timestamp granularity
speech.transcribe('a.wav', { timestamps: 'sentence' });
export = speech;
