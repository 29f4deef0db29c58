// Type-checked against the installed package (ESM): a wrong option must be an error, so the types are really there.
import { createSpeech, type Transcription } from 'voxmill';

const speech = createSpeech({ onnxRuntime: 'auto' });
const result: Promise<Transcription> = speech.transcribe('a.wav', { timestamps: 'word' });
// @ts-expect-error: not a timestamp granularity
speech.transcribe('a.wav', { timestamps: 'sentence' });

export { result };
