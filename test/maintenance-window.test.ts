// A Provisioning's maintenance window, at given instants: open or shut, until when, and the
// problems of a window that cannot be read. Pure: the workflow asks it at workflow time.
import { describe, expect, it } from '@jest/globals';
import { describeWindow, windowState } from '../shared/maintenance-window.js';

const at = (iso: string) => Date.parse(iso);
// 2026-11-28 is a Saturday.
const weekend = { days: ['Saturday', 'Sunday'], start: '22:00', duration: '4h' };

describe('a maintenance window', () => {
  it('is open from its start for its duration, on its days, across midnight', () => {
    expect(windowState(weekend, at('2026-11-28T22:00:00Z'))).toEqual({
      open: true,
      closesAt: at('2026-11-29T02:00:00Z'),
    });
    // Saturday's window is still open early on Sunday.
    expect(windowState(weekend, at('2026-11-29T01:59:59Z'))).toMatchObject({ open: true });
    // Sunday's closes early on Monday; the next opens on Saturday.
    expect(windowState(weekend, at('2026-11-30T02:00:00Z'))).toEqual({
      open: false,
      opensAt: at('2026-12-05T22:00:00Z'),
    });
    expect(windowState(weekend, at('2026-11-28T21:59:00Z'))).toEqual({
      open: false,
      opensAt: at('2026-11-28T22:00:00Z'),
    });
  });

  it('opens every day when no days are given, for durations in hours and minutes', () => {
    const daily = { start: '03:15', duration: '1h30m' };
    expect(windowState(daily, at('2026-12-01T04:44:00Z'))).toMatchObject({ open: true });
    expect(windowState(daily, at('2026-12-01T04:45:00Z'))).toEqual({
      open: false,
      opensAt: at('2026-12-02T03:15:00Z'),
    });
    expect(describeWindow(daily)).toBe('every day 03:15 UTC for 1h30m');
    expect(describeWindow(weekend)).toBe('Saturday, Sunday 22:00 UTC for 4h');
  });

  it('says what is wrong with a window it cannot read', () => {
    expect(
      windowState({ days: ['Caturday'], start: '24:00', duration: '25h' }, Date.now()),
    ).toEqual({
      problems: [
        'spec.maintenanceWindow.start must be a UTC time of day, HH:MM',
        'spec.maintenanceWindow.duration must be like 4h, 90m or 1h30m: at most 24h',
        'spec.maintenanceWindow.days: Caturday is not a day: use Sunday, Monday, Tuesday, ' +
          'Wednesday, Thursday, Friday, Saturday',
      ],
    });
    expect(windowState({ start: '01:00', duration: '' }, Date.now())).toMatchObject({
      problems: [expect.stringContaining('duration')],
    });
  });
});
