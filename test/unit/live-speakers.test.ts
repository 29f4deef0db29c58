// Online speaker labels (LiveSpeakers): who an utterance's voice joins, when it opens a speaker, and the bounds.
import { describe, expect, it } from 'vitest';
import { LiveSpeakers } from '../../src/diarize/live-speakers.js';

const unit = (...values: number[]) => {
  const v = Float32Array.from(values);
  const norm = Math.hypot(...values);
  return v.map((x) => x / norm);
};
const speakers = (options: Partial<ConstructorParameters<typeof LiveSpeakers>[0]> = {}) =>
  new LiveSpeakers({ threshold: 0.3, maxSpeakers: 8, minSeconds: 1, ...options });

describe('LiveSpeakers', () => {
  it('opens a speaker for a voice farther than the threshold from all, and joins the closest within it', () => {
    const live = speakers();
    expect(live.assign(unit(1, 0, 0), 3)).toBe('speaker_1');
    expect(live.assign(unit(0, 1, 0), 3)).toBe('speaker_2');
    // cos(1, 0.2, 0) with (1, 0, 0) is 0.98: distance 0.02.
    expect(live.assign(unit(1, 0.2, 0), 2)).toBe('speaker_1');
    expect(live.assign(unit(0.1, 1, 0), 2)).toBe('speaker_2');
    expect(live.assign(unit(0, 0, 1), 2)).toBe('speaker_3');
    expect(live.count).toBe(3);
  });

  it('a short utterance never opens a speaker (except the first) nor moves a centroid', () => {
    const live = speakers();
    expect(live.assign(unit(1, 0), 0.5)).toBe('speaker_1');
    // Far away but short: it joins the closest.
    expect(live.assign(unit(0, 1), 0.5)).toBe('speaker_1');
    // Had it moved the centroid (to (0.71, 0.71), 0.29 from (0, 1)), this long one would join speaker_1.
    expect(live.assign(unit(0, 1), 3)).toBe('speaker_2');
  });

  it('centroids follow the voices weighted by their seconds', () => {
    const live = speakers({ threshold: 0.2 });
    live.assign(unit(1, 0), 1);
    // 0.13 from (1, 0): joins; the centroid moves most of the way toward it (9 s against 1 s).
    expect(live.assign(unit(1, 0.55), 9)).toBe('speaker_1');
    // 0.29 from (1, 0) but 0.05 from the moved centroid.
    expect(live.assign(unit(1, 0.95), 2)).toBe('speaker_1');
  });

  it('past maxSpeakers a new voice joins the closest speaker', () => {
    const live = speakers({ maxSpeakers: 2 });
    live.assign(unit(1, 0, 0), 2);
    live.assign(unit(0, 1, 0), 2);
    expect(live.assign(unit(0, 0.3, 1), 2)).toBe('speaker_2');
    expect(live.count).toBe(2);
  });

  it('a voice of zeros (too short to embed) gets no label and changes nothing', () => {
    const live = speakers();
    expect(live.assign(new Float32Array(3), 5)).toBeUndefined();
    expect(live.count).toBe(0);
  });
});
