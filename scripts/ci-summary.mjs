// Prints CI's test counts from the vitest JSON reports (and schemathesis's count) that .ci/run collects in one folder.
//
//   node scripts/ci-summary.mjs <folder> [step]
//
// With a step (a report's name without .json, e.g. "test"): that report's tests, then one line per tier (unit,
// native, http, e2e, accuracy, soak, scale) with its files, counts and time. Without: one line per report, then the plain
// closing line "ci: N passed, N failed" over every report, which .ci/run prints last. CI's log readers take a run's
// last closing line as its verdict, so this one line must close the log (schemathesis's pytest-like banner, which
// read as "no test ran", is filtered out by scripts/api-fuzz/schemathesis.sh).
//
// A report is <step>.json (vitest's JSON reporter), or <step>.count: "passed failed" on one line (schemathesis, or a
// step that failed without a report of its own).
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const [folder, step] = process.argv.slice(2);
if (!folder) {
  console.error('usage: node scripts/ci-summary.mjs <folder> [step]');
  process.exit(2);
}

/** Counts of one report: { passed, failed, skipped, report } (report: vitest's parsed JSON, or null). */
function readReport(name) {
  const file = join(folder, name);
  if (name.endsWith('.count')) {
    const [passed, failed] = readFileSync(file, 'utf8').trim().split(/\s+/).map(Number);
    return { passed, failed, skipped: 0, report: null };
  }
  const report = JSON.parse(readFileSync(file, 'utf8'));
  return {
    passed: report.numPassedTests,
    failed: report.numFailedTests,
    skipped: report.numPendingTests + (report.numTodoTests ?? 0),
    report,
  };
}

const countsLine = ({ passed, failed, skipped }) =>
  `${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}`;

/** One line per tier found in a vitest report: files, counts and the time its files took. */
function tierLines(report) {
  const lines = [];
  for (const tier of ['unit', 'native', 'http', 'e2e', 'accuracy', 'soak', 'scale']) {
    const files = report.testResults.filter((f) => f.name.includes(`/test/${tier}/`));
    if (files.length === 0) continue;
    const tests = files.flatMap((f) => f.assertionResults);
    const count = (status) => tests.filter((t) => t.status === status).length;
    // Files run two at a time (vitest.config.ts), and a step's tiers side by side: each tier's wall time (its first
    // file's start to its last file's end) and the sum of its files' times.
    const wall = (Math.max(...files.map((f) => f.endTime)) - Math.min(...files.map((f) => f.startTime))) / 1000;
    const summed = files.reduce((sum, f) => sum + f.endTime - f.startTime, 0) / 1000;
    lines.push(
      `  ${tier}: ${files.length} files, ${count('passed')} passed, ${count('failed')} failed; ` +
        `${wall.toFixed(0)} s wall, ${summed.toFixed(0)} s of files`,
    );
  }
  return lines;
}

/**
 * The failed tests of a vitest report, a line each: file, name and the first line of the failure. Printed in the
 * closing summary, since only a run's tail may reach the reader and a tier's own output lies far above it.
 */
function failureLines(report) {
  if (!report) return [];
  const root = process.cwd();
  return report.testResults.flatMap((file) =>
    file.assertionResults
      .filter((test) => test.status === 'failed')
      .map((test) => {
        const why = (test.failureMessages?.[0] ?? '').split('\n')[0].slice(0, 300);
        return `    failed: ${file.name.replace(`${root}/`, '')} > ${test.fullName}: ${why}`;
      }),
  );
}

if (step && !existsSync(join(folder, `${step}.json`))) {
  console.log(`${step}: no report (the step failed before its test runner wrote one)`);
} else if (step) {
  const counts = readReport(`${step}.json`);
  console.log(`${step}: ${countsLine(counts)}`);
  for (const line of tierLines(counts.report)) console.log(line);
} else {
  const names = readdirSync(folder)
    .filter((name) => name.endsWith('.json') || name.endsWith('.count'))
    .sort();
  const total = { passed: 0, failed: 0, skipped: 0 };
  for (const name of names) {
    const counts = readReport(name);
    console.log(`  ${name.replace(/\.(json|count)$/, '')}: ${countsLine(counts)}`);
    for (const line of failureLines(counts.report)) console.log(line);
    total.passed += counts.passed;
    total.failed += counts.failed;
    total.skipped += counts.skipped;
  }
  console.log(`ci: ${countsLine(total)}`);
}
