// "Did you mean ...?" for a name that matched nothing: the known names that contain it (case aside: `joe` →
// `en_US-joe-medium`), else those a couple of edits away (`beamsize` → `beamSize`, `langauge` → `language`).

/** Most suggestions given. */
const MAX_SUGGESTIONS = 3;

/** Edits (insert, delete, substitute, swap two neighbours) from `a` to `b`, or `limit + 1` once past `limit`. */
function editDistance(a: string, b: string, limit: number): number {
  if (Math.abs(a.length - b.length) > limit) return limit + 1;
  let before = new Array<number>(b.length + 1).fill(0);
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    let best = i;
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let d = Math.min((previous[j] as number) + 1, (current[j - 1] as number) + 1, (previous[j - 1] as number) + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        d = Math.min(d, (before[j - 2] as number) + 1);
      current[j] = d;
      best = Math.min(best, d);
    }
    if (best > limit) return limit + 1;
    before = previous;
    previous = current;
  }
  return previous[b.length] as number;
}

/** The known names closest to `name`, best first (at most three; none when nothing is close). */
export function closestNames(name: string, known: readonly string[]): string[] {
  const wanted = name.toLowerCase();
  if (wanted.length === 0) return [];
  // Containment needs a few letters: every name contains `a`.
  const containing = wanted.length >= 3 ? known.filter((k) => k.toLowerCase().includes(wanted)) : [];
  // The shortest first: the least else in the name.
  if (containing.length > 0) return containing.sort((a, b) => a.length - b.length).slice(0, MAX_SUGGESTIONS);
  // A third of the name's length in edits, at least one and at most three: `tiny` is not a near miss of `base`.
  const limit = Math.min(3, Math.max(1, Math.floor(wanted.length / 3)));
  return known
    .map((k) => ({ k, d: editDistance(wanted, k.toLowerCase(), limit) }))
    .filter(({ d }) => d <= limit)
    .sort((a, b) => a.d - b.d)
    .slice(0, MAX_SUGGESTIONS)
    .map(({ k }) => k);
}

/** `did you mean "x"?` (or `"x" or "y"`), or '' when nothing is close. */
export function didYouMean(name: string, known: readonly string[]): string {
  const names = closestNames(name, known);
  return names.length === 0 ? '' : `did you mean ${names.map((n) => `"${n}"`).join(' or ')}?`;
}
