// Pure logic: which TaskRuns the bridge acts on, and when they count as finished.
import { describe, expect, it } from '@jest/globals';
import {
  isCompleted,
  matchContract,
  observedState,
  type TaskRunObject,
} from '../platform-config/taskrun-contract.js';

const base = (overrides: Partial<TaskRunObject> = {}): TaskRunObject => ({
  metadata: { name: 'build-arm', namespace: 'ns', uid: 'u1' },
  spec: { params: [{ name: 'PLATFORM', value: 'linux/arm64' }] },
  status: {
    taskSpec: {
      volumes: [{ name: 'ssh', secret: { secretName: 'multi-platform-ssh-build-arm' } }],
    },
  },
  ...overrides,
});

describe('the TaskRun contract', () => {
  it('matches a PLATFORM param plus the secret volume in status.taskSpec', () => {
    expect(matchContract(base())).toEqual({
      namespace: 'ns',
      name: 'build-arm',
      uid: 'u1',
      platform: 'linux/arm64',
      completed: false,
      deleting: false,
      originalFinalizer: false,
    });
  });

  it('matches an inline spec.taskSpec, including the unsubstituted Tekton variable', () => {
    for (const secretName of [
      'multi-platform-ssh-build-arm',
      'multi-platform-ssh-$(context.taskRun.name)',
    ]) {
      const tr = base({
        status: {},
        spec: {
          params: [{ name: 'PLATFORM', value: 'linux/arm64' }],
          taskSpec: { volumes: [{ name: 'ssh', secret: { secretName } }] },
        },
      });
      expect(matchContract(tr)?.platform).toBe('linux/arm64');
    }
  });

  it('ignores TaskRuns without PLATFORM, without the volume, or mounting another secret', () => {
    expect(
      matchContract(base({ spec: { params: [{ name: 'OTHER', value: 'x' }] } })),
    ).toBeUndefined();
    expect(matchContract(base({ status: { taskSpec: { volumes: [] } } }))).toBeUndefined();
    expect(
      matchContract(
        base({
          status: {
            taskSpec: { volumes: [{ secret: { secretName: 'multi-platform-ssh-other' } }] },
          },
        }),
      ),
    ).toBeUndefined();
    expect(
      matchContract(base({ spec: { params: [{ name: 'PLATFORM', value: ['array'] }] } })),
    ).toBeUndefined();
    expect(matchContract({})).toBeUndefined();
  });

  it('treats a decided Succeeded condition or a completion time as completed', () => {
    expect(isCompleted(base())).toBe(false);
    expect(
      isCompleted({ status: { conditions: [{ type: 'Succeeded', status: 'Unknown' }] } }),
    ).toBe(false);
    expect(isCompleted({ status: { conditions: [{ type: 'Succeeded', status: 'True' }] } })).toBe(
      true,
    );
    expect(isCompleted({ status: { conditions: [{ type: 'Succeeded', status: 'False' }] } })).toBe(
      true,
    );
    expect(isCompleted({ status: { completionTime: '2026-01-01T00:00:00Z' } })).toBe(true);
  });

  it('counts a TaskRun being deleted as ended, even while a finalizer holds it', () => {
    const deleting = base({
      metadata: {
        name: 'build-arm',
        namespace: 'ns',
        uid: 'u1',
        deletionTimestamp: '2026-01-01T00:00:00Z',
        finalizers: ['appstudio.io/multi-platform-finalizer'],
      },
    });
    const match = matchContract(deleting)!;
    expect(match).toMatchObject({ deleting: true, originalFinalizer: true, completed: false });
    expect(observedState(match)).toBe('deleted');
    expect(observedState({ ...match, deleting: false })).toBe('active');
    expect(observedState({ ...match, deleting: false, completed: true })).toBe('completed');
  });

  it("notes the original controller's finalizer, and no other", () => {
    const held = (finalizers: string[]) =>
      matchContract(
        base({ metadata: { name: 'build-arm', namespace: 'ns', uid: 'u1', finalizers } }),
      )?.originalFinalizer;
    expect(held(['appstudio.io/multi-platform-finalizer'])).toBe(true);
    expect(held(['results.tekton.dev/taskrun'])).toBe(false);
    expect(held([])).toBe(false);
  });
});
