// A run's output as lines, never holding more than `maxLine` bytes of one: a tenant's playbook
// or script can print a line of gigabytes, and the runner (a pod's log stream, a child's stdout)
// reads it through this. The rest of an over-long line is dropped and counted.
import { MAX_LINE } from './progress.js';

export class LineSplitter {
  /** Bytes dropped from lines longer than maxLine. */
  droppedBytes = 0;
  /** Lines that were cut short. */
  cutLines = 0;
  /** The current line's bytes so far (copies: a chunk is never held for a piece of it). */
  private parts: Buffer[] = [];
  private held = 0;
  private cutting = false;

  constructor(private readonly maxLine = MAX_LINE) {}

  /** Bytes of the current line held now: at most maxLine. */
  get buffered(): number {
    return this.held;
  }

  /** The lines `chunk` ends, without their `\n` (or `\r\n`). */
  push(chunk: Buffer): string[] {
    const lines: string[] = [];
    let start = 0;
    for (;;) {
      const newline = chunk.indexOf(10, start);
      if (newline === -1) {
        this.keep(chunk.subarray(start), true);
        return lines;
      }
      this.keep(chunk.subarray(start, newline), false);
      lines.push(this.take());
      start = newline + 1;
    }
  }

  /** The last line, when the output does not end with a newline. */
  end(): string[] {
    return this.held || this.cutting ? [this.take()] : [];
  }

  private keep(bytes: Buffer, copy: boolean): void {
    const room = this.maxLine - this.held;
    if (bytes.length > room) {
      this.droppedBytes += bytes.length - room;
      if (!this.cutting) this.cutLines++;
      this.cutting = true;
      bytes = bytes.subarray(0, room);
    }
    if (!bytes.length) return;
    this.parts.push(copy ? Buffer.from(bytes) : bytes);
    this.held += bytes.length;
  }

  private take(): string {
    let line: Buffer = Buffer.concat(this.parts, this.held);
    if (this.cutting) line = wholeCharacters(line);
    this.parts = [];
    this.held = 0;
    this.cutting = false;
    const text = line.toString('utf8');
    return text.endsWith('\r') ? text.slice(0, -1) : text;
  }
}

/** Each line of `stream`, at most `splitter`'s maxLine bytes of it. */
export async function* boundedLines(
  stream: AsyncIterable<Buffer | string>,
  splitter = new LineSplitter(),
): AsyncGenerator<string> {
  for await (const chunk of stream) {
    yield* splitter.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk);
  }
  yield* splitter.end();
}

/** `bytes` without a UTF-8 character the cut left incomplete at its end. */
function wholeCharacters(bytes: Buffer): Buffer {
  let lead = bytes.length - 1;
  while (lead > 0 && lead > bytes.length - 4 && (bytes[lead]! & 0xc0) === 0x80) lead--;
  const first = bytes[lead];
  if (first === undefined || first < 0xc0) return bytes;
  const size = first >= 0xf0 ? 4 : first >= 0xe0 ? 3 : 2;
  return bytes.length - lead < size ? bytes.subarray(0, lead) : bytes;
}
