// The JSON-lines log of the long-running commands (`serve`, `worker`): one object per line on stdout, which is what
// log collectors expect from a service, and a service that goes on running when its stdout goes away.

let stdoutBroken = false;

/** The other commands end quietly when stdout closes (`| head`); a service goes on without its logs. */
export function keepRunningWithoutStdout(): void {
  process.stdout.removeAllListeners('error');
  process.stdout.on('error', () => {
    stdoutBroken = true;
  });
}

/** One JSON object per line on stdout: what log collectors expect from a service. */
export function logLine(record: Record<string, unknown>): void {
  if (stdoutBroken) return;
  process.stdout.write(`${JSON.stringify({ time: new Date().toISOString(), level: 'info', ...record })}\n`);
}

/** Logs `event` at most once per `intervalMs` (a Redis that is down reports every reconnect attempt). */
export function throttledLog(event: string, intervalMs = 5000): (message: string) => void {
  let last = 0;
  let dropped = 0;
  return (message) => {
    const now = Date.now();
    if (now - last < intervalMs) {
      dropped++;
      return;
    }
    last = now;
    logLine({ level: 'warn', event, message, ...(dropped > 0 ? { repeated: dropped } : {}) });
    dropped = 0;
  };
}
