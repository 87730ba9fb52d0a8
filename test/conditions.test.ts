// The one transition-time rule every status hostflow writes follows (shared/conditions.ts): the
// workflows' resource status kit, the Lock status writer and the Machine family all use it.
import { describe, expect, it } from '@jest/globals';
import { withCondition, type ObservedCondition } from '../shared/conditions.js';

const EARLIER = '2025-01-01T00:00:00.000Z';
const NOW = '2025-01-02T00:00:00.000Z';

describe('withCondition', () => {
  const list: ObservedCondition[] = [
    { type: 'Ready', status: 'False', reason: 'Waiting', lastTransitionTime: EARLIER },
    { type: 'Paused', status: 'False', lastTransitionTime: EARLIER },
  ];

  it('keeps the transition time while the status stays, whatever else changes', () => {
    const ready = { type: 'Ready', status: 'False', reason: 'Other', message: 'm' } as const;
    expect(withCondition(list, ready, NOW)).toEqual([
      list[1],
      { ...ready, lastTransitionTime: EARLIER },
    ]);
  });

  it('moves it to now when the status changes, and stamps a new condition now', () => {
    expect(withCondition(list, { type: 'Ready', status: 'True' }, NOW).at(-1)).toEqual({
      type: 'Ready',
      status: 'True',
      lastTransitionTime: NOW,
    });
    expect(withCondition(list, { type: 'Enforced', status: 'True' }, NOW)).toEqual([
      ...list,
      { type: 'Enforced', status: 'True', lastTransitionTime: NOW },
    ]);
  });

  it('stamps now where the condition read back had no time', () => {
    const untimed: ObservedCondition[] = [{ type: 'Ready', status: 'True' }];
    expect(withCondition(untimed, { type: 'Ready', status: 'True' }, NOW)).toEqual([
      { type: 'Ready', status: 'True', lastTransitionTime: NOW },
    ]);
  });

  it('writes a change with its own fields only (severity, observedGeneration as given)', () => {
    const change = {
      type: 'Ready',
      status: 'False',
      severity: 'Info',
      observedGeneration: 3,
    } as const;
    const [written] = withCondition([], change, NOW);
    expect(Object.keys(written!)).toEqual([...Object.keys(change), 'lastTransitionTime']);
  });
});
