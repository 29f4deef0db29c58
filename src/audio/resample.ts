// Streaming sample-rate conversion for live input (a browser's 24 or 48 kHz microphone, an 8 kHz call) to the 16 kHz
// the recognizer takes: a windowed-sinc interpolator (Hann window, 16 zero crossings each side at the lower rate, cut
// off at 0.9 of the lower Nyquist, so nothing above 7.2 kHz folds back when going down to 16 kHz). Positions are kept
// as whole numbers of 1/L input samples (L = outputRate / gcd), so there is no drift, and the kernel of each of the L
// phases is computed once (48 kHz: 1 phase, 44.1 kHz: 160; above MAX_TABLE_PHASES they are computed per sample). It
// keeps the last input samples between calls, so pieces of any size give the same output as the whole at once; the
// output lags the input by the filter's half length (1 ms at 16 kHz).

const ZERO_CROSSINGS = 16;
const CUTOFF = 0.9;
/** Phases whose kernels are kept in a table (160 × 98 taps for 44.1 kHz → 16 kHz is 61 KB). */
const MAX_TABLE_PHASES = 1024;

const gcd = (a: number, b: number): number => (b === 0 ? a : gcd(b, a % b));

export class StreamResampler {
  readonly #phases: number;
  /** Input samples advanced per output sample, in 1/#phases units. */
  readonly #advance: number;
  readonly #scale: number;
  readonly #half: number;
  readonly #table: Float32Array[] | undefined;
  /** Input not yet fully used: the filter's history and what follows it. */
  #buffer: Float32Array;
  /** Where the next output sample lies in `#buffer`, in 1/#phases input samples. */
  #position: number;

  constructor(
    readonly inputRate: number,
    readonly outputRate: number,
  ) {
    const divisor = gcd(inputRate, outputRate);
    this.#phases = outputRate / divisor;
    this.#advance = inputRate / divisor;
    this.#scale = Math.min(1, outputRate / inputRate) * CUTOFF;
    this.#half = Math.ceil(ZERO_CROSSINGS / this.#scale);
    this.#table =
      this.#phases <= MAX_TABLE_PHASES
        ? Array.from({ length: this.#phases }, (_, phase) => this.#kernel(phase / this.#phases))
        : undefined;
    // The first output sample sits on the first input sample; the missing history counts as silence.
    this.#buffer = new Float32Array(this.#half);
    this.#position = this.#half * this.#phases;
  }

  /** Converts the next piece of input; returns the output samples it completes (possibly none). */
  process(input: Float32Array): Float32Array {
    if (this.inputRate === this.outputRate) return input.slice();
    const buffer = new Float32Array(this.#buffer.length + input.length);
    buffer.set(this.#buffer);
    buffer.set(input, this.#buffer.length);
    const half = this.#half;
    const phases = this.#phases;
    // Output n needs input up to floor(position / phases) + half.
    const last = (buffer.length - half) * phases - 1;
    const available = last < this.#position ? 0 : Math.floor((last - this.#position) / this.#advance) + 1;
    const out = new Float32Array(available);
    let position = this.#position;
    for (let n = 0; n < available; n++, position += this.#advance) {
      const center = Math.floor(position / phases);
      const phase = position - center * phases;
      const kernel = this.#table?.[phase] ?? this.#kernel(phase / phases);
      let sum = 0;
      const first = center - half + 1;
      for (let k = 0; k < kernel.length; k++) sum += (buffer[first + k] as number) * (kernel[k] as number);
      out[n] = sum;
    }
    // Keep what the next output sample's filter reaches back to.
    const keepFrom = Math.max(0, Math.floor(position / phases) - half + 1);
    this.#buffer = buffer.slice(keepFrom);
    this.#position = position - keepFrom * phases;
    return out;
  }

  /** The taps for an output point `fraction` of an input sample after an input sample (k = -half+1 .. half). */
  #kernel(fraction: number): Float32Array {
    const half = this.#half;
    const scale = this.#scale;
    const taps = new Float32Array(2 * half);
    for (let k = -half + 1; k <= half; k++) {
      const x = k - fraction;
      const t = x * scale;
      const sinc = t === 0 ? 1 : Math.sin(Math.PI * t) / (Math.PI * t);
      const window = 0.5 + 0.5 * Math.cos((Math.PI * x) / (half + 1));
      taps[k + half - 1] = scale * sinc * window;
    }
    return taps;
  }
}
