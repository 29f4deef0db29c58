// A complex FFT of any size whose prime factors are small (a mixed-radix Cooley-Tukey, decimation in time): the
// built-in features use 512 points, the GE2E speaker encoder's front end 400 (25 ms at 16 kHz, 2⁴·5²). Sizes with a
// large prime factor still work, at O(n·p) for that factor. Pure arithmetic, allocation-free per transform.

export class Fft {
  /** exp(-2πi k / n), k = 0..n-1. */
  private readonly twiddleRe: Float64Array;
  private readonly twiddleIm: Float64Array;
  /** Radices, outermost first (4s, then 2s, 3s, 5s, ..., as found). */
  private readonly factors: number[];
  private readonly outRe: Float64Array;
  private readonly outIm: Float64Array;
  private readonly scratchRe: Float64Array;
  private readonly scratchIm: Float64Array;

  constructor(readonly size: number) {
    if (!Number.isInteger(size) || size < 1) throw new RangeError(`FFT size must be a positive integer, not ${size}`);
    this.twiddleRe = new Float64Array(size);
    this.twiddleIm = new Float64Array(size);
    for (let k = 0; k < size; k++) {
      this.twiddleRe[k] = Math.cos((2 * Math.PI * k) / size);
      this.twiddleIm[k] = -Math.sin((2 * Math.PI * k) / size);
    }
    this.factors = [];
    let rest = size;
    for (const p of [4, 2, 3, 5]) {
      while (rest % p === 0) {
        this.factors.push(p);
        rest /= p;
      }
    }
    for (let p = 7; rest > 1; p += 2) {
      while (rest % p === 0) {
        this.factors.push(p);
        rest /= p;
      }
    }
    this.outRe = new Float64Array(size);
    this.outIm = new Float64Array(size);
    const largest = Math.max(1, ...this.factors);
    this.scratchRe = new Float64Array(largest);
    this.scratchIm = new Float64Array(largest);
  }

  /** Transforms `re` + i·`im` (each `size` long) in place. */
  transform(re: Float64Array, im: Float64Array): void {
    if (this.size === 1) return;
    this.work(re, im, 0, 0, 1, 0);
    re.set(this.outRe);
    im.set(this.outIm);
  }

  /**
   * The DFT of the `stride`-spaced input from `inOffset` into out[outOffset, outOffset + n/stride·...): split by the
   * radix at `level`, transform each part recursively, then combine with one generic radix-p butterfly pass.
   */
  private work(re: Float64Array, im: Float64Array, outOffset: number, inOffset: number, stride: number, level: number) {
    const p = this.factors[level] as number;
    const m = this.size / stride / p;
    if (m === 1) {
      for (let q = 0; q < p; q++) {
        this.outRe[outOffset + q] = re[inOffset + q * stride] as number;
        this.outIm[outOffset + q] = im[inOffset + q * stride] as number;
      }
    } else {
      for (let q = 0; q < p; q++) this.work(re, im, outOffset + q * m, inOffset + q * stride, stride * p, level + 1);
    }
    this.butterfly(outOffset, stride, m, p);
  }

  private butterfly(offset: number, stride: number, m: number, p: number): void {
    const outRe = this.outRe;
    const outIm = this.outIm;
    const scratchRe = this.scratchRe;
    const scratchIm = this.scratchIm;
    const twiddleRe = this.twiddleRe;
    const twiddleIm = this.twiddleIm;
    const size = this.size;
    for (let u = 0; u < m; u++) {
      // The p inputs of this butterfly, each turned by its twiddle.
      for (let q = 0; q < p; q++) {
        const k = offset + u + q * m;
        const t = (stride * u * q) % size;
        const xr = outRe[k] as number;
        const xi = outIm[k] as number;
        const wr = twiddleRe[t] as number;
        const wi = twiddleIm[t] as number;
        scratchRe[q] = xr * wr - xi * wi;
        scratchIm[q] = xr * wi + xi * wr;
      }
      // A p-point DFT of them: output q1 takes input q with the root exp(-2πi q·q1 / p).
      const rootStep = size / p;
      for (let q1 = 0; q1 < p; q1++) {
        let sr = scratchRe[0] as number;
        let si = scratchIm[0] as number;
        for (let q = 1; q < p; q++) {
          const t = (((q * q1) % p) * rootStep) as number;
          const wr = twiddleRe[t] as number;
          const wi = twiddleIm[t] as number;
          const xr = scratchRe[q] as number;
          const xi = scratchIm[q] as number;
          sr += xr * wr - xi * wi;
          si += xr * wi + xi * wr;
        }
        outRe[offset + u + q1 * m] = sr;
        outIm[offset + u + q1 * m] = si;
      }
    }
  }
}
