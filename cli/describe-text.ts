// `hostflow describe` for people: the object, its workflow and where it stands, the kind's facts,
// then its steps with their times (UTC, and since the run started). The same for every kind.
import type { Description, Fact } from './description.js';
import { duration, table } from './oncall.js';
import type { Step } from './timeline.js';

export function describeText(d: Description): string {
  const started = Date.parse(d.startTime);
  const head = table([
    [`${d.kind}:`, d.object],
    ['Workflow:', `${d.workflowId} (run ${d.runId})`],
    [
      'Status:',
      `${d.status}, started ${d.startTime}${d.closeTime ? `, closed ${d.closeTime}` : ''}`,
    ],
    [
      'Phase:',
      `${d.phase ?? '?'}${d.phaseFrom && d.phaseFrom !== 'query' && d.phaseFrom !== 'object' ? ` (from ${d.phaseFrom})` : ''}`,
    ],
    ...Object.entries(d.facts).flatMap(([name, value]) => fact(name, value)),
    ...(d.earlierWorkflows > 0
      ? [['Earlier:', `${d.earlierWorkflows} older workflow(s) of a ${d.kind} of this name`]]
      : []),
  ]);
  const lines = [head];
  for (const note of d.notes) lines.push(`(${note})`);
  if (d.details) lines.push('', 'Now:', ...plain(d.details).map((line) => `  ${line}`));
  if (d.waiting.length > 0) lines.push('', 'Waiting on:', ...d.waiting.map((w) => `  ${w}`));
  lines.push('', 'Timeline:');
  lines.push(
    table(
      d.timeline.map((step) => [
        `  ${step.at.slice(11, 23)}`,
        `+${duration(Date.parse(step.at) - started)}`,
        describeStep(step),
      ]),
    ),
  );
  lines.push('', `Last error: ${d.error ?? 'none'}`);
  return lines.join('\n');
}

/** A fact's rows: `Failed hosts:  h3`; a list one row per item; nothing said is `-`. */
function fact(name: string, value: Fact): string[][] {
  const label = `${name[0]!.toUpperCase()}${name.slice(1).replace(/([a-z])([A-Z])(?=[a-z])/g, (_, a: string, b: string) => `${a} ${b.toLowerCase()}`)}:`;
  if (!Array.isArray(value)) return [[label, value ?? '-']];
  if (value.length === 0) return [[label, '-']];
  return value.map((item, i) => [i === 0 ? label : '', item]);
}

function describeStep(step: Step): string {
  const what =
    step.kind === 'activity' && step.name && step.text !== step.name
      ? `${step.text} [${step.name}]`
      : step.kind === 'local activity'
        ? `${step.text} (local activity)`
        : step.kind === 'workflow'
          ? `workflow ${step.text}`
          : step.text;
  return `${what}${outcome(step)}`;
}

function outcome(step: Step): string {
  if (!step.outcome || step.kind === 'workflow') return step.error ? `: ${step.error}` : '';
  const took =
    step.endedAt && step.kind !== 'timer'
      ? ` in ${duration(Date.parse(step.endedAt) - Date.parse(step.at))}`
      : '';
  const attempts = step.attempts ? ` (attempt ${step.attempts})` : '';
  switch (step.outcome) {
    case 'running':
      return step.kind === 'timer' ? ' — waiting' : ` — running${attempts}`;
    case 'completed':
      return ` — done${took}${attempts}`;
    case 'fired':
      return '';
    case 'canceled':
      return ' — cut short';
    default:
      return ` — ${step.outcome}${took}${attempts}: ${step.error ?? 'no message'}`;
  }
}

/** The current details without their markdown emphasis, line by line. */
function plain(text: string): string[] {
  return text
    .replace(/\*\*/g, '')
    .split('\n')
    .map((line) => line.trimEnd())
    .filter(Boolean);
}
