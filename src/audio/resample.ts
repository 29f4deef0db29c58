// Streaming sample-rate conversion for live input (a browser's 24 or 48 kHz microphone, an 8 kHz call) to the 16 kHz
// the recognizer takes: a windowed-sinc interpolator (Hann window, 16 zero crossings each side at the lower rate, cut
// off at 0.9 of the lower Nyquist, so nothing above 7.2 kHz folds back when going down to 16 kHz). It keeps the last
// few input samples between calls, so pieces of any size give the same output as the whole at once; the output lags
// the input by the filter's half length (1 ms at 16 kHz).

const ZERO_CROSSINGS = 16;
const CUTOFF = 0.9;

export class StreamResampler {
  readonly #step: number;
  readonly #scale: number;
  readonly #half: number;
  /** Input not yet fully used: the filter's history and what follows it. */
  #buffer = new Float32Array(0);
  /** Where the next output sample lies, in samples of `#buffer`. */
  #position: number;

  constructor(
    readonly inputRate: number,
    readonly outputRate: number,
  ) {
    this.#step = inputRate / outputRate;
    // Filter bandwidth relative to the input rate; the kernel widens by the same factor when going down.
    this.#scale = Math.min(1, outputRate / inputRate) * CUTOFF;
    this.#half = Math.ceil(ZERO_CROSSINGS / this.#scale);
    // The first output sample sits on the first input sample; the missing history counts as silence.
    this.#buffer = new Float32Array(this.#half);
    this.#position = this.#half;
  }

  /** Converts the next piece of input; returns the output samples it completes (possibly none). */
  process(input: Float32Array): Float32Array {
    if (this.inputRate === this.outputRate) return input.slice();
    const buffer = new Float32Array(this.#buffer.length + input.length);
    buffer.set(this.#buffer);
    buffer.set(input, this.#buffer.length);
    const half = this.#half;
    const scale = this.#scale;
    const available = Math.max(0, Math.floor((buffer.length - half - 1 - this.#position) / this.#step) + 1);
    const out = new Float32Array(available);
    let position = this.#position;
    for (let n = 0; n < available; n++, position += this.#step) {
      const center = Math.floor(position);
      const fraction = position - center;
      let sum = 0;
      for (let k = -half + 1; k <= half; k++) {
        const x = k - fraction; // distance from the output point, in input samples
        const t = x * scale;
        const sinc = t === 0 ? 1 : Math.sin(Math.PI * t) / (Math.PI * t);
        const window = 0.5 + 0.5 * Math.cos((Math.PI * x) / (half + 1));
        sum += (buffer[center + k] as number) * sinc * window;
      }
      out[n] = sum * scale;
    }
    // Keep what the next output sample's filter reaches back to.
    const keepFrom = Math.max(0, Math.floor(position) - half + 1);
    this.#buffer = buffer.slice(keepFrom);
    this.#position = position - keepFrom;
    return out;
  }
}
