// What an ansible-playbook run is doing, read from its default output line by line: the current
// play and task, which host failed at which task and why, and the PLAY RECAP per host. A failure's
// result is JSON on the same line, or, under kubespray's ansible.cfg, indented over the lines
// up to a closing `}` at the start of a line. Pure, so it is tested on recorded output.
export interface HostRecap {
  ok: number;
  changed: number;
  unreachable: number;
  failed: number;
}

export interface PlaybookFailure {
  host: string;
  task: string;
  /** `failed` or `unreachable`. */
  kind: string;
  message: string;
}

const PLAY = /^PLAY \[(.*)\] \**$/;
const TASK = /^TASK \[(.*)\] \**$/;
const FATAL = /^(fatal|failed): \[([^\]]+)\]: (FAILED|UNREACHABLE)! => (.*)$/;
const RECAP = /^(\S+)\s+: ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)/;
const MAX_MESSAGE = 500;

export class PlaybookProgress {
  play = '';
  task = '';
  readonly failures: PlaybookFailure[] = [];
  readonly recap: Record<string, HostRecap> = {};
  private inRecap = false;
  /** A failure whose result JSON goes on over the next lines. */
  private pending: { failure: PlaybookFailure; json: string[] } | undefined;

  feed(line: string): void {
    const text = line.trimEnd();
    if (this.pending) {
      this.pending.json.push(text);
      if (text !== '}') return;
      const { failure, json } = this.pending;
      this.pending = undefined;
      this.failures.push({ ...failure, message: messageOf(json.join('\n')) });
      return;
    }
    let match: RegExpExecArray | null;
    if ((match = PLAY.exec(text))) {
      this.play = match[1]!;
      this.task = '';
    } else if (text.startsWith('PLAY RECAP')) {
      this.inRecap = true;
    } else if ((match = TASK.exec(text))) {
      this.task = match[1]!;
    } else if ((match = FATAL.exec(text))) {
      const failure = {
        host: match[2]!,
        task: this.task,
        kind: match[3] === 'UNREACHABLE' ? 'unreachable' : 'failed',
        message: messageOf(match[4]!),
      };
      if (match[4] === '{') this.pending = { failure, json: ['{'] };
      else this.failures.push(failure);
    } else if (this.inRecap && (match = RECAP.exec(text))) {
      const [, host, ok, changed, unreachable, failed] = match;
      this.recap[host!] = {
        ok: Number(ok),
        changed: Number(changed),
        unreachable: Number(unreachable),
        failed: Number(failed),
      };
    }
  }

  /** One line for details and heartbeats. */
  describe(): string {
    const failed = this.failures.map((f) => `${f.host} ${f.kind} at "${f.task}"`).join('; ');
    return [this.play && `play "${this.play}"`, this.task && `task "${this.task}"`, failed]
      .filter(Boolean)
      .join(', ');
  }
}

/** The `msg` of the JSON ansible prints after a failure, else the raw text, cut short. */
function messageOf(json: string): string {
  let message = json;
  try {
    const parsed = JSON.parse(json) as { msg?: unknown };
    if (typeof parsed.msg === 'string') message = parsed.msg;
  } catch {
    // not JSON: keep the text
  }
  return message.length > MAX_MESSAGE ? `${message.slice(0, MAX_MESSAGE)}…` : message;
}
