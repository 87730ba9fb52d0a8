// What an ansible-playbook run is doing, read from its default output line by line: the current
// play and task, which host failed at which task and why, and the PLAY RECAP per host. A failure's
// result is JSON on the same line, or, under kubespray's ansible.cfg, indented over the lines
// up to a closing `}` at the start of a line. Pure, so it is tested on recorded output.
//
// A tenant's playbook writes what it likes, and what this keeps goes into heartbeats and the
// activity's result (workflow history): everything it keeps is bounded by the caps below.
import { MAX_LINE_BYTES } from '../runner/log-lines.js';

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

/** Characters of one line the parser reads: as many as the runner keeps bytes of one. */
export const MAX_LINE = MAX_LINE_BYTES;
/** Failures kept, the first ones; the rest are only counted. */
export const MAX_FAILURES = 20;
/** Hosts kept from the PLAY RECAP, the first ones; the rest are only counted. */
export const MAX_RECAP_HOSTS = 500;
/** Characters of a failure's message. */
export const MAX_MESSAGE = 500;
/** Characters of a play, task or host name. */
export const MAX_NAME = 200;
/** Characters of a failure's result held while its lines are read (its `msg` line is kept too). */
export const MAX_RESULT = 64 * 1024;
/** Characters of `describe()`, which goes into every heartbeat. */
export const MAX_DESCRIBE = 1024;

const PLAY = /^PLAY \[(.*)\] \**$/;
const TASK = /^TASK \[(.*)\] \**$/;
const FATAL = /^(fatal|failed): \[([^\]]+)\]: (FAILED|UNREACHABLE)! => (.*)$/;
const RECAP = /^(\S+)\s+: ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)/;
/** The result's own `msg`, at the first level of ansible's indented JSON. */
const MSG_LINE = /^ {4}"msg": /;
/** A `msg` in JSON text that was cut short and so does not parse (the msg may be cut too). */
const MSG = /"msg": "((?:[^"\\]|\\.)*)/;

export class PlaybookProgress {
  play = '';
  task = '';
  /** The first MAX_FAILURES failures. */
  readonly failures: PlaybookFailure[] = [];
  /** Failures beyond MAX_FAILURES. */
  failuresOmitted = 0;
  /** The first MAX_RECAP_HOSTS hosts of the recap. */
  readonly recap: Record<string, HostRecap> = {};
  /** Hosts of the recap beyond MAX_RECAP_HOSTS. */
  recapOmitted = 0;
  private recapHosts = 0;
  private inRecap = false;
  /** A failure whose result JSON goes on over the next lines, and how much of it is held. */
  private pending:
    { failure: PlaybookFailure; json: string[]; held: number; msg: boolean } | undefined;

  /** Characters held of a failure's result being read: at most MAX_RESULT and one `msg` line. */
  get held(): number {
    return this.pending?.held ?? 0;
  }

  feed(line: string): void {
    const text = line.slice(0, MAX_LINE).trimEnd();
    if (this.pending) {
      const { pending } = this;
      // Past the cap, only its first `msg` line (a script may print many such lines).
      const msg = !pending.msg && MSG_LINE.test(text);
      if (pending.held + text.length <= MAX_RESULT || msg) {
        pending.json.push(text);
        pending.held += text.length;
        pending.msg ||= msg;
      }
      if (text !== '}') return;
      this.pending = undefined;
      if (pending.json.at(-1) !== '}') pending.json.push('}');
      this.fail({ ...pending.failure, message: messageOf(pending.json.join('\n')) });
      return;
    }
    let match: RegExpExecArray | null;
    if ((match = PLAY.exec(text))) {
      this.play = cut(match[1]!, MAX_NAME);
      this.task = '';
    } else if (text.startsWith('PLAY RECAP')) {
      this.inRecap = true;
    } else if ((match = TASK.exec(text))) {
      this.task = cut(match[1]!, MAX_NAME);
    } else if ((match = FATAL.exec(text))) {
      const failure = {
        host: cut(match[2]!, MAX_NAME),
        task: this.task,
        kind: match[3] === 'UNREACHABLE' ? 'unreachable' : 'failed',
        message: messageOf(match[4]!),
      };
      if (match[4] === '{') this.pending = { failure, json: ['{'], held: 1, msg: false };
      else this.fail(failure);
    } else if (this.inRecap && (match = RECAP.exec(text))) {
      const [, host, ok, changed, unreachable, failed] = match;
      const name = cut(host!, MAX_NAME);
      if (!Object.hasOwn(this.recap, name) && this.recapHosts >= MAX_RECAP_HOSTS) {
        this.recapOmitted++;
        return;
      }
      if (!Object.hasOwn(this.recap, name)) this.recapHosts++;
      this.recap[name] = {
        ok: Number(ok),
        changed: Number(changed),
        unreachable: Number(unreachable),
        failed: Number(failed),
      };
    }
  }

  /** One line for details and heartbeats, at most MAX_DESCRIBE characters. */
  describe(): string {
    const failed = this.failures.map((f) => `${f.host} ${f.kind} at "${f.task}"`);
    if (this.failuresOmitted) failed.push(`${this.failuresOmitted} more failure(s)`);
    const text = [
      this.play && `play "${this.play}"`,
      this.task && `task "${this.task}"`,
      failed.join('; '),
    ]
      .filter(Boolean)
      .join(', ');
    return cut(text, MAX_DESCRIBE);
  }

  private fail(failure: PlaybookFailure): void {
    if (this.failures.length < MAX_FAILURES) this.failures.push(failure);
    else this.failuresOmitted++;
  }
}

/** The `msg` of the JSON ansible prints after a failure, else the raw text, cut short. */
function messageOf(json: string): string {
  let message = json;
  try {
    const parsed = JSON.parse(json) as { msg?: unknown };
    if (typeof parsed.msg === 'string') message = parsed.msg;
  } catch {
    // Not JSON, or cut short: its `msg` if one can be read, else the text.
    const msg = MSG.exec(json);
    if (msg) message = unescapeJson(msg[1]!) ?? message;
  }
  return cut(message, MAX_MESSAGE);
}

function unescapeJson(text: string): string | undefined {
  try {
    return JSON.parse(`"${text}"`) as string;
  } catch {
    return undefined;
  }
}

/** At most `max` characters, the last an ellipsis when it was cut. */
const cut = (text: string, max: number) =>
  text.length > max ? `${text.slice(0, max - 1)}…` : text;
