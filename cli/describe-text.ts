// `hostflow describe taskrun` for people: the workflow and where the TaskRun stands, then its
// steps with their times (UTC, and since the run started).
import { duration, table } from './oncall.js';
import type { TaskRunDescription } from './taskrun-description.js';
import type { Step } from './timeline.js';

export function describeText(d: TaskRunDescription): string {
  const started = Date.parse(d.startTime);
  const head = table([
    ['TaskRun:', d.taskRun],
    ['Workflow:', `${d.workflowId} (run ${d.runId})`],
    [
      'Status:',
      `${d.status}, started ${d.startTime}${d.closeTime ? `, closed ${d.closeTime}` : ''}`,
    ],
    ['Platform:', d.platform ?? '?'],
    ['Phase:', `${d.phase ?? '?'}${d.source === 'query' ? '' : ' (from search attributes)'}`],
    ['Host:', d.host ?? '-'],
    ...(d.failedHosts.length > 0 ? [['Failed hosts:', d.failedHosts.join(', ')]] : []),
    ...(d.observed ? [['TaskRun seen:', d.observed]] : []),
    ...(d.details ? [['Now:', oneLine(d.details)]] : []),
    ...(d.earlierWorkflows > 0
      ? [['Earlier:', `${d.earlierWorkflows} older workflow(s) of a TaskRun of this name`]]
      : []),
  ]);
  const lines = [head];
  if (d.unanswered) lines.push(`(${d.unanswered})`);
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

function oneLine(text: string): string {
  return text.replace(/\*\*/g, '').replace(/\s*\n+\s*/g, ' ');
}
