// A run's log as lines, never holding more than MAX_LINE_BYTES of one: the rest of an over-long
// line is dropped and counted, so a 2 GB line without a newline costs the worker 64 KiB.

export const MAX_LINE_BYTES = 64 << 10;

export class BoundedLines {
  private partial: Buffer[] = [];
  private partialBytes = 0;
  /** Bytes dropped from over-long lines. */
  dropped = 0;
  /** Every byte fed, dropped or not. */
  total = 0;

  constructor(
    private readonly onLine: (line: string) => void,
    private readonly maxLine = MAX_LINE_BYTES,
  ) {}

  feed(chunk: Buffer): void {
    this.total += chunk.length;
    let start = 0;
    for (let nl = chunk.indexOf(10, start); nl !== -1; nl = chunk.indexOf(10, start)) {
      this.keep(chunk.subarray(start, nl));
      this.flush();
      start = nl + 1;
    }
    this.keep(chunk.subarray(start));
  }

  /** The last line, when the log did not end with a newline. */
  end(): void {
    if (this.partialBytes) this.flush();
  }

  private keep(part: Buffer) {
    const room = this.maxLine - this.partialBytes;
    if (part.length > room) this.dropped += part.length - Math.max(room, 0);
    if (room <= 0) return;
    const kept = part.subarray(0, room);
    if (kept.length) {
      this.partial.push(Buffer.from(kept));
      this.partialBytes += kept.length;
    }
  }

  private flush() {
    const line = Buffer.concat(this.partial).toString('utf8');
    this.partial = [];
    this.partialBytes = 0;
    this.onLine(line.endsWith('\r') ? line.slice(0, -1) : line);
  }
}
