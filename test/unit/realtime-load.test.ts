// The realtime endpoint's capacity estimate: one session per CPU thread until three finals are measured, then the
// sessions whose summed cost (final latency over utterance length) fits targetLoad; none admitted while recent finals
// are slower than maxFinalLatencyMs at p95; a lone session always admitted; samples older than a minute forgotten.
import { describe, expect, it } from 'vitest';
import { RealtimeLoad } from '../../src/http/realtime/realtime-load.js';

const limits = { maxSessions: 32, maxFinalLatencyMs: 2000, targetLoad: 1 };

function loadWith(cpuThreads = 2, options = limits) {
  let now = 0;
  const load = new RealtimeLoad(options, cpuThreads, () => now);
  return { load, advance: (ms: number) => (now += ms) };
}

describe('RealtimeLoad', () => {
  it('admits one session per CPU thread before any final is measured', () => {
    const { load } = loadWith(2);
    expect(load.capacity()).toEqual({ sessions: 2, measured: false, p95LatencyMs: 0 });
    expect(load.refusal(0)).toBeUndefined();
    expect(load.refusal(1)).toBeUndefined();
    expect(load.refusal(2)).toMatch(/takes 2 realtime sessions until it has measured its capacity/);
  });

  it('fits sessions by the measured cost of their finals', () => {
    const { load } = loadWith(2);
    // 0.8 s after a 3.2 s utterance: a quarter of the machine per session speaking without pause.
    for (let i = 0; i < 3; i++) load.record(800, 3200);
    expect(load.capacity()).toMatchObject({ sessions: 4, measured: true });
    expect(load.refusal(3)).toBeUndefined();
    expect(load.refusal(4)).toMatch(/measured capacity of 4 realtime sessions/);
    // Half the target load: half the sessions.
    const { load: half } = loadWith(2, { ...limits, targetLoad: 0.5 });
    for (let i = 0; i < 3; i++) half.record(800, 3200);
    expect(half.capacity().sessions).toBe(2);
    // Never above maxSessions, never below one.
    const { load: capped } = loadWith(2, { ...limits, maxSessions: 3 });
    for (let i = 0; i < 3; i++) capped.record(10, 3200);
    expect(capped.capacity().sessions).toBe(3);
    const { load: slow } = loadWith(2);
    for (let i = 0; i < 3; i++) slow.record(1500, 500);
    expect(slow.capacity().sessions).toBe(1);
  });

  it('refuses while finals are late at p95, but always takes a lone session', () => {
    const { load, advance } = loadWith(8);
    for (let i = 0; i < 19; i++) load.record(300, 3000);
    load.record(2500, 3000);
    // p95 of 20: the 19th value in order, still 300 ms.
    expect(load.refusal(1)).toBeUndefined();
    load.record(2600, 3000);
    load.record(2700, 3000);
    expect(load.refusal(1)).toMatch(/take 2600 ms \(p95\), over maxFinalLatencyMs 2000/);
    expect(load.refusal(0)).toBeUndefined();
    // A minute later those finals no longer count.
    advance(61_000);
    expect(load.capacity()).toMatchObject({ measured: false, p95LatencyMs: 0 });
    expect(load.refusal(1)).toBeUndefined();
    const { load: unchecked } = loadWith(8, { ...limits, maxFinalLatencyMs: 0 });
    for (let i = 0; i < 5; i++) unchecked.record(9000, 30_000);
    expect(unchecked.refusal(1)).toBeUndefined();
  });

  it('ignores samples that measure nothing', () => {
    const { load } = loadWith(2);
    load.record(Number.NaN, 1000);
    load.record(-5, 1000);
    load.record(100, 0);
    expect(load.capacity().measured).toBe(false);
  });
});
