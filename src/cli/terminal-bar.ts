// A progress bar on a terminal that always gives the terminal back. cli-progress turns line wrapping off (ESC[?7l)
// and hides the cursor while it draws; Ctrl-C in the middle used to leave both so, with no newline. Every way out
// stops it: done, an error, the process exiting, and (with `exitOnSignal`) SIGINT or SIGTERM, which then end the
// process with 130 or 143 as the shell expects.
import cliProgress from 'cli-progress';

export interface TerminalBar {
  start(total: number, value: number, payload?: Record<string, unknown>): void;
  update(value: number, payload?: Record<string, unknown>): void;
  /** Idempotent; safe before start. */
  stop(): void;
}

/** Restores what cli-progress may have changed: line wrapping on, cursor shown. */
const RESTORE = '\u001b[?7h\u001b[?25h';

export function terminalBar(
  stream: NodeJS.WriteStream,
  format: string,
  options: { exitOnSignal: boolean; clearOnComplete?: boolean },
): TerminalBar {
  const bar = new cliProgress.SingleBar({
    stream,
    format,
    hideCursor: true,
    clearOnComplete: options.clearOnComplete ?? false,
    // Our handlers stop the bar; cli-progress's own would race them.
    gracefulExit: false,
  });
  let active = false;
  const onExit = () => {
    if (active) stream.write(`${RESTORE}\n`);
  };
  const onSignal = (signal: NodeJS.Signals) => {
    stop();
    stream.write('\n');
    process.exit(signal === 'SIGINT' ? 130 : 143);
  };
  function stop(): void {
    if (!active) return;
    active = false;
    bar.stop();
    stream.write(RESTORE);
    process.off('exit', onExit);
    if (options.exitOnSignal) {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
    }
  }
  return {
    start(total, value, payload) {
      if (!active) {
        process.on('exit', onExit);
        if (options.exitOnSignal) {
          process.on('SIGINT', onSignal);
          process.on('SIGTERM', onSignal);
        }
      }
      active = true;
      bar.start(total, value, payload);
    },
    update(value, payload) {
      if (active) bar.update(value, payload);
    },
    stop,
  };
}
