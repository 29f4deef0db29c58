// Fixture Piper voices: ONNX models with Piper's exact inputs and outputs that compute a deterministic tone
// instead of speech, and their .onnx.json configs (the structure of the real upstream configs). Audio length
// follows the phoneme count and length_scale, pitch follows the voice and `sid`, so tests can assert speed,
// streaming, speakers and formats without real voice weights.
//
// Contract (as Piper's exported VITS models):
//   input          int64   [batch_size, phonemes]   phoneme ids; batch row 0 is used
//   input_lengths  int64   [batch_size]             accepted, unused (Piper passes N = phonemes)
//   scales         float32 [3]                      [noise_scale, length_scale, noise_w]; only length_scale is used
//   sid            int64   [1]                      multi-speaker voices only; -num_speakers..num_speakers-1
//   output         float32 [batch_size, 1, T]      (batch_size is 1 with Piper; every row is row 0's audio)
//
// With N = phonemes, L = length_scale, f = the voice's frequency (multi-speaker: 220 + 55 * sid Hz), r = the
// sample rate and a(id) = 0.3 * (1 - 0.05 * (id mod 5)):
//   T = floor(N * L * 256)   (float32 arithmetic; 256 samples per id, like Piper's hop size)
//   output[t] = a(input[pos]) * sin(pi * t / T) * sin(2 * pi * ((f * t) mod r) / r),  pos = floor(t * N / T)
// for t = 0 .. T-1. Each id's samples get that id's amplitude (so content matters), the sin(pi t / T) envelope
// starts and ends every sentence at zero, and ids >= num_symbols or an out-of-range sid fail in Gather like a
// real model's embedding lookup. No ids (or length_scale <= 0) give T = 0: output [1, 1, 0].
//
// The tone costs next to nothing to compute, so these voices say nothing about speed. A voice with `heavy` set
// (en_US-fixture_heavy-medium, for bench/tts.mjs) computes the same audio and also does about the work of a real
// Piper medium voice on a CPU: it runs a per-row MLP over R = heavy.rowsPerFrame rows per 256-sample frame
// (rows = floor(T * R / 256), like a vocoder's upsampled time steps):
//   x0[r]   = sin(r * freq + phase) + embedding[input[floor(r * N / rows)]]     [rows, width]
//   x{i+1}  = tanh(x{i} @ W{i} + b{i})                                         heavy.layers times
//   output  = tone * (1 + 1e-9 * mean(x{layers}))
// with seeded random float32 weights. |mean| <= 1, so in float32 1 + 1e-9 * mean is exactly 1 and the output is
// bit for bit the tone above, but it depends on the MLP at run time, so ONNX Runtime has to compute all of it.
// Its cost grows linearly with the audio's length, as a real voice's does.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { graph, model, node, tensor, valueInfo } from './onnx-writer.mjs';

export const HOP = 256;
export const BASE_AMPLITUDE = 0.3;
/**
 * Size of the heavy voice's MLP (see above): 6 x 768 x 768 weights (15 MB of model), 7.1 MFLOP per row, so
 * 9.8 GFLOP per second of audio at 22050 Hz (1,378 rows). One thread of a 2.3 GHz Xeon (AVX-512) runs it at a
 * real-time factor of about 0.075, where a real Piper medium voice is at 0.05 to 0.15.
 */
const ROWS_PER_FRAME = 16;
const WIDTH = 768;
const LAYERS = 6;

export const VOICES = [
  {
    name: 'en_US-fixture-medium',
    source: 'en_US-lessac-medium',
    dataset: 'fixture',
    quality: 'medium',
    sampleRate: 22050,
    frequency: 220,
  },
  {
    name: 'en_US-fixture-low',
    source: 'en_US-lessac-medium',
    dataset: 'fixture',
    quality: 'low',
    sampleRate: 16000,
    frequency: 330,
  },
  {
    name: 'en_US-fixture_multi-medium',
    source: 'en_US-lessac-medium',
    dataset: 'fixture_multi',
    quality: 'medium',
    sampleRate: 22050,
    frequency: 220,
    speakers: ['alice', 'bob', 'carol', 'dave'],
    speakerStep: 55,
  },
  {
    name: 'de_DE-fixture-x_low',
    source: 'de_DE-thorsten-low',
    dataset: 'fixture',
    quality: 'x_low',
    sampleRate: 16000,
    frequency: 247,
  },
  {
    // The compute-realistic voice for benchmarks. It lives in its own directory (test/fixtures/bench-voices) so
    // the voices the tests list stay as they are.
    name: 'en_US-fixture_heavy-medium',
    dir: 'bench-voices',
    source: 'en_US-lessac-medium',
    dataset: 'fixture_heavy',
    quality: 'medium',
    sampleRate: 22050,
    frequency: 220,
    heavy: { rowsPerFrame: ROWS_PER_FRAME, width: WIDTH, layers: LAYERS, seed: 0x7e55a1 },
  },
];

/** Directory under test/fixtures of a voice's files. */
export const voiceDir = (voice) => voice.dir ?? 'voices';

/**
 * Seeded uniform numbers in [0, 1) (mulberry32), so generated test data (the heavy voice's weights, the non-speech
 * set) is the same on every machine.
 */
export function uniform(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** `count` float32 values uniform in [-scale, scale). */
function randomValues(random, count, scale) {
  const values = new Float32Array(count);
  for (let i = 0; i < count; i++) values[i] = (random() * 2 - 1) * scale;
  return values;
}

/**
 * Initializers and nodes of the heavy voice's MLP: reads `samples_float`, `samples`, `ids`, `n`, `zero` and
 * `one` from the tone graph, writes `work_factor` (a float32 scalar equal to 1 in float32).
 */
function heavyWork(heavy, numSymbols) {
  const { rowsPerFrame, width, layers, seed } = heavy;
  const random = uniform(seed);
  const scalar = (name, type, value) => tensor(name, type, [], [value]);
  // Weights uniform in +-sqrt(3 / width): unit variance in, unit variance out, so tanh stays off its rails.
  const weightScale = Math.sqrt(3 / width);
  const initializers = [
    scalar('rows_per_sample', 'float32', rowsPerFrame / HOP),
    scalar('work_weight', 'float32', 1e-9),
    scalar('one_float', 'float32', 1),
    tensor('column_axis', 'int64', [1], [1]),
    tensor('row_frequencies', 'float32', [width], randomValues(random, width, 0.05)),
    tensor('row_phases', 'float32', [width], randomValues(random, width, Math.PI)),
    tensor('embedding', 'float32', [numSymbols, width], randomValues(random, numSymbols * width, 1)),
  ];
  const nodes = [
    // rows = floor(T * R / 256) time steps
    node('Mul', ['samples_float', 'rows_per_sample'], ['rows_exact']),
    node('Floor', ['rows_exact'], ['rows_float']),
    node('Cast', ['rows_float'], ['rows'], { to: 7 }),
    node('Range', ['zero', 'rows', 'one'], ['r']),
    // sinusoidal features of the time step plus the embedding of the id it falls on
    node('Cast', ['r'], ['r_float'], { to: 1 }),
    node('Unsqueeze', ['r_float', 'column_axis'], ['r_column']),
    node('Mul', ['r_column', 'row_frequencies'], ['row_angles']),
    node('Add', ['row_angles', 'row_phases'], ['row_shifted']),
    node('Sin', ['row_shifted'], ['row_features']),
    node('Mul', ['r', 'n'], ['r_n']),
    node('Max', ['rows', 'one'], ['row_divisor']),
    node('Div', ['r_n', 'row_divisor'], ['row_pos']),
    node('Gather', ['ids', 'row_pos'], ['row_ids'], { axis: 0 }),
    node('Gather', ['embedding', 'row_ids'], ['row_embeddings'], { axis: 0 }),
    node('Add', ['row_features', 'row_embeddings'], ['x0']),
  ];
  for (let i = 0; i < layers; i++) {
    initializers.push(
      tensor(`w${i}`, 'float32', [width, width], randomValues(random, width * width, weightScale)),
      tensor(`b${i}`, 'float32', [width], randomValues(random, width, 0.1)),
    );
    nodes.push(
      node('MatMul', [`x${i}`, `w${i}`], [`m${i}`]),
      node('Add', [`m${i}`, `b${i}`], [`a${i}`]),
      node('Tanh', [`a${i}`], [`x${i + 1}`]),
    );
  }
  nodes.push(
    node('ReduceMean', [`x${layers}`], ['work_mean'], { keepdims: 0 }),
    node('Mul', ['work_mean', 'work_weight'], ['work_small']),
    node('Add', ['one_float', 'work_small'], ['work_factor']),
  );
  return { initializers, nodes };
}

/** Amplitude of each phoneme id's samples. */
export const amplitude = (id) => BASE_AMPLITUDE * (1 - 0.05 * (id % 5));

/** The encoded ONNX model of one voice. */
export function voiceModel(voice, numSymbols) {
  const multi = voice.speakers !== undefined;
  const scalar = (name, type, value) => tensor(name, type, [], [value]);
  const initializers = [
    scalar('zero', 'int64', 0),
    scalar('one', 'int64', 1),
    scalar('hop', 'float32', HOP),
    scalar('zero_float', 'float32', 0),
    scalar('pi', 'float32', Math.PI),
    scalar('sample_rate', 'int64', voice.sampleRate),
    scalar('radians_per_step', 'float32', (2 * Math.PI) / voice.sampleRate),
    tensor(
      'amplitudes',
      'float32',
      [numSymbols],
      Array.from({ length: numSymbols }, (_, id) => amplitude(id)),
    ),
    tensor('output_shape', 'int64', [3], [1, 1, -1]),
    tensor('first', 'int64', [1], [0]),
    tensor('ones', 'int64', [2], [1, 1]),
    multi
      ? tensor(
          'speaker_frequencies',
          'int64',
          [voice.speakers.length],
          voice.speakers.map((_, sid) => voice.frequency + voice.speakerStep * sid),
        )
      : tensor('frequency', 'int64', [1], [voice.frequency]),
  ];

  const nodes = [
    // N and T = floor(N * length_scale * 256)
    node('Shape', ['input'], ['input_shape']),
    node('Gather', ['input_shape', 'one'], ['n'], { axis: 0 }),
    node('Cast', ['n'], ['n_float'], { to: 1 }), // to FLOAT
    node('Gather', ['scales', 'one'], ['length_scale'], { axis: 0 }),
    node('Mul', ['n_float', 'length_scale'], ['frames']),
    node('Mul', ['frames', 'hop'], ['samples_exact']),
    node('Floor', ['samples_exact'], ['samples_float']),
    node('Cast', ['samples_float'], ['samples'], { to: 7 }), // to INT64
    node('Range', ['zero', 'samples', 'one'], ['t']), // int64 [T]
    // per-sample amplitude: the id at pos = floor(t * N / T)
    node('Gather', ['input', 'zero'], ['ids'], { axis: 0 }), // [N], batch row 0
    node('Gather', ['amplitudes', 'ids'], ['id_amplitudes'], { axis: 0 }),
    node('Mul', ['t', 'n'], ['t_n']),
    node('Max', ['samples', 'one'], ['divisor']), // T = 0 (no ids) gives empty audio, not a division by zero
    node('Div', ['t_n', 'divisor'], ['pos']), // integer division of non-negatives = floor
    node('Gather', ['id_amplitudes', 'pos'], ['sample_amplitudes'], { axis: 0 }),
    // Piper's phoneme durations: w_ceil = ceil(length_scale) frames per id, summed by a CumSum as VITS builds its
    // alignment path; nothing reads the sum, so ONNX Runtime drops both unless word timings add w_ceil as an output
    node('Cast', ['ids'], ['ids_float'], { to: 1 }),
    node('Mul', ['ids_float', 'zero_float'], ['ids_zero']),
    node('Add', ['ids_zero', 'length_scale'], ['w']),
    node('Ceil', ['w'], ['w_ceil']),
    node('CumSum', ['w_ceil', 'zero'], ['w_cumulative']),
    // envelope sin(pi * t / T)
    node('Cast', ['t'], ['t_float'], { to: 1 }),
    node('Div', ['t_float', 'samples_float'], ['progress']),
    node('Mul', ['progress', 'pi'], ['envelope_angle']),
    node('Sin', ['envelope_angle'], ['envelope']),
    // carrier sin(2 pi ((f t) mod r) / r): the phase is reduced exactly in int64 before going to float
    ...(multi ? [node('Gather', ['speaker_frequencies', 'sid'], ['frequency'], { axis: 0 })] : []),
    node('Mul', ['t', 'frequency'], ['phase_steps']),
    node('Mod', ['phase_steps', 'sample_rate'], ['phase_int'], { fmod: 0 }),
    node('Cast', ['phase_int'], ['phase'], { to: 1 }),
    node('Mul', ['phase', 'radians_per_step'], ['carrier_angle']),
    node('Sin', ['carrier_angle'], ['carrier']),
    // output = amplitude * envelope * carrier, shaped [1, 1, T] and expanded to [batch_size, 1, T] (1 in
    // practice) so the output keeps the symbolic batch dimension of a real voice
    node('Mul', ['carrier', 'envelope'], ['shaped']),
    node('Mul', ['shaped', 'sample_amplitudes'], ['audio']),
    node('Reshape', ['audio', 'output_shape'], ['audio_3d']),
    node('Gather', ['input_shape', 'first'], ['batch'], { axis: 0 }),
    node('Concat', ['batch', 'ones'], ['expand_shape'], { axis: 0 }),
    node('Expand', ['audio_3d', 'expand_shape'], [voice.heavy ? 'tone' : 'output']),
  ];
  if (voice.heavy) {
    const work = heavyWork(voice.heavy, numSymbols);
    initializers.push(...work.initializers);
    nodes.push(...work.nodes, node('Mul', ['tone', 'work_factor'], ['output']));
  }

  const inputs = [
    valueInfo('input', 'int64', ['batch_size', 'phonemes']),
    valueInfo('input_lengths', 'int64', ['batch_size']),
    valueInfo('scales', 'float32', [3]),
    ...(multi ? [valueInfo('sid', 'int64', [1])] : []),
  ];
  const frequencyText = multi ? `${voice.frequency} + ${voice.speakerStep} * sid Hz` : `${voice.frequency} Hz`;
  const workText = voice.heavy
    ? `, computed alongside a ${voice.heavy.layers}-layer ${voice.heavy.width}-wide MLP over ` +
      `${voice.heavy.rowsPerFrame} rows per 256 samples`
    : '';
  return model({
    docString: `voxmill fixture voice ${voice.name}: a ${frequencyText} tone, 256 samples per phoneme id at length_scale 1${workText}`,
    graph: graph({
      name: voice.name,
      nodes,
      initializers,
      inputs,
      outputs: [valueInfo('output', 'float32', ['batch_size', 1, 'Unsqueezeoutput_dim_2'])],
    }),
  });
}

/** The .onnx.json config of one voice, from the upstream config it borrows phonemes and language from. */
export function voiceConfig(voice, source) {
  const speakers = voice.speakers ?? [];
  return {
    audio: { sample_rate: voice.sampleRate, quality: voice.quality },
    espeak: { voice: source.espeak.voice },
    inference: { noise_scale: 0.667, length_scale: 1, noise_w: 0.8 },
    phoneme_type: 'espeak',
    phoneme_map: {},
    phoneme_id_map: source.phoneme_id_map,
    num_symbols: source.num_symbols,
    num_speakers: Math.max(1, speakers.length),
    speaker_id_map: Object.fromEntries(speakers.map((speaker, sid) => [speaker, sid])),
    piper_version: '1.0.0',
    language: { ...source.language },
    dataset: voice.dataset,
  };
}

/**
 * Every fixture voice file, as { dir, name, data } (`dir` under test/fixtures: voices, or bench-voices for the
 * heavy voice); reads the upstream configs under `sharedDir`.
 */
export function fixtureVoiceFiles(sharedDir) {
  const files = [];
  for (const voice of VOICES) {
    const sourcePath = join(sharedDir, 'models', 'piper', 'configs-only', `${voice.source}.onnx.json`);
    const source = JSON.parse(readFileSync(sourcePath, 'utf8'));
    const config = voiceConfig(voice, source);
    const dir = voiceDir(voice);
    files.push({ dir, name: `${voice.name}.onnx`, data: voiceModel(voice, config.num_symbols) });
    files.push({ dir, name: `${voice.name}.onnx.json`, data: Buffer.from(`${JSON.stringify(config, null, 2)}\n`) });
  }
  return files;
}
