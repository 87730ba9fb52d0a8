// A Provisioning's maintenance window (`spec.maintenanceWindow`): the days and the UTC time of day
// when its ClusterOperations may start. An operation that has started runs to its end (a playbook
// stopped half way leaves the cluster worse than one that ends late). Pure, so the workflow can
// ask it at workflow time, and the bridge and the tests share it.

export const WEEKDAYS = [
  'Sunday',
  'Monday',
  'Tuesday',
  'Wednesday',
  'Thursday',
  'Friday',
  'Saturday',
] as const;

export interface MaintenanceWindowSpec {
  /** Days it opens on (UTC); every day when unset. */
  days?: string[];
  /** When it opens, `HH:MM` in UTC. */
  start?: string;
  /** How long it stays open: `4h`, `90m`, `1h30m`; at most 24h. */
  duration?: string;
}

export type WindowState =
  { open: true; closesAt: number } | { open: false; opensAt: number } | { problems: string[] };

const START = /^([01][0-9]|2[0-3]):([0-5][0-9])$/;
const DURATION = /^(?:([0-9]{1,2})h)?(?:([0-9]{1,4})m)?$/;
const MINUTE = 60_000;
const DAY = 24 * 60 * MINUTE;

/** Whether the window is open at `now` (ms), until when, or when it opens next. */
export function windowState(window: MaintenanceWindowSpec, now: number): WindowState {
  const problems: string[] = [];
  const start = START.exec(window.start ?? '');
  if (!start) problems.push('spec.maintenanceWindow.start must be a UTC time of day, HH:MM');
  const duration = DURATION.exec(window.duration ?? '');
  const length = duration ? (Number(duration[1] ?? 0) * 60 + Number(duration[2] ?? 0)) * MINUTE : 0;
  if (!duration || length <= 0 || length > DAY) {
    problems.push('spec.maintenanceWindow.duration must be like 4h, 90m or 1h30m: at most 24h');
  }
  const unknown = (window.days ?? []).filter((d) => !(WEEKDAYS as readonly string[]).includes(d));
  if (unknown.length) {
    problems.push(
      `spec.maintenanceWindow.days: ${unknown.join(', ')} is not a day: use ${WEEKDAYS.join(', ')}`,
    );
  }
  if (problems.length) return { problems };
  const days = new Set((window.days?.length ? window.days : WEEKDAYS).map(dayIndex));
  const offset = (Number(start![1]) * 60 + Number(start![2])) * MINUTE;
  const today = Math.floor(now / DAY) * DAY;
  // Yesterday's opening may still be open; some opening falls within the next week.
  for (let d = -1; d <= 7; d++) {
    const opens = today + d * DAY + offset;
    if (!days.has(new Date(opens).getUTCDay())) continue;
    if (now < opens) return { open: false, opensAt: opens };
    if (now < opens + length) return { open: true, closesAt: opens + length };
  }
  throw new Error('a window opens at least once a week');
}

/** `Saturday, Sunday 02:00 UTC for 4h`, as status messages say it. */
export function describeWindow(window: MaintenanceWindowSpec): string {
  const days = window.days?.length ? window.days.join(', ') : 'every day';
  return `${days} ${window.start} UTC for ${window.duration}`;
}

function dayIndex(day: string): number {
  return (WEEKDAYS as readonly string[]).indexOf(day);
}
