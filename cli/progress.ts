// Progress of the on-call commands while they wait (Temporal, visibility, a replay), on stderr so
// stdout stays what scripts parse. A terminal gets a spinner that is erased when the wait ends;
// anything else (a pipe, a log file) gets one plain "waiting for …" line, and only if the wait
// is long enough to be worth a line.
const FRAMES = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
/** Waits shorter than this show nothing: a quick answer should not flicker. */
const QUIET_MS = { tty: 250, plain: 1000 };

export async function waitingFor<T>(
  command: string,
  what: string,
  work: () => Promise<T>,
): Promise<T> {
  const stderr = process.stderr;
  const started = Date.now();
  let frame = 0;
  let drawn = false;
  const draw = () => {
    const seconds = Math.floor((Date.now() - started) / 1000);
    stderr.write(`\r${FRAMES[frame++ % FRAMES.length]} waiting for ${what} (${seconds} s)\x1b[K`);
    drawn = true;
  };
  let spinner: NodeJS.Timeout | undefined;
  const start = setTimeout(
    () => {
      if (!stderr.isTTY) {
        stderr.write(`${command}: waiting for ${what}…\n`);
        return;
      }
      draw();
      spinner = setInterval(draw, 100);
      spinner.unref();
    },
    stderr.isTTY ? QUIET_MS.tty : QUIET_MS.plain,
  );
  start.unref();
  try {
    return await work();
  } finally {
    clearTimeout(start);
    if (spinner) clearInterval(spinner);
    if (drawn) stderr.write('\r\x1b[K');
  }
}
