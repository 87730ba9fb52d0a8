// What hostflow asks of a Temporal server's version (runtime/temporal-requirements.ts): refused
// below the minimum with what is missing and the version that has it; warned about task priority
// where the server may ignore it; Worker Versioning refused below its minimum when a worker asks
// for it; not judged where the version cannot be read (Temporal Cloud).
import { describe, expect, it } from '@jest/globals';
import {
  MIN_TEMPORAL_SERVER,
  MIN_WORKER_VERSIONING,
  serverVersionFindings,
} from '../runtime/temporal-requirements.js';

describe('the Temporal server version hostflow needs', () => {
  it('refuses a server older than the minimum, naming what it lacks and the minimum', () => {
    const { refusals } = serverVersionFindings('1.25.2');
    expect(refusals).toEqual([
      `Temporal server 1.25.2 is too old: hostflow needs ${MIN_TEMPORAL_SERVER.version} or later, ` +
        `for ${MIN_TEMPORAL_SERVER.because}; upgrade the server`,
    ]);
    expect(MIN_TEMPORAL_SERVER.because).toMatch(/update-with-start/);
  });

  it('runs on 1.26 and 1.27 but says they ignore task priority', () => {
    for (const version of ['1.26.0', '1.27.9']) {
      const findings = serverVersionFindings(version);
      expect(findings.refusals).toEqual([]);
      expect(findings.warnings).toEqual([expect.stringContaining('ignores task priority')]);
    }
  });

  it('tells 1.28 to 1.30 to turn the new matcher on, and says nothing to 1.31 and later', () => {
    for (const version of ['1.28.0', '1.30.2']) {
      expect(serverVersionFindings(version).warnings).toEqual([
        expect.stringContaining('`matching.useNewMatcher: true`'),
      ]);
    }
    for (const version of ['1.31.0', '1.32.1', 'v2.0.0']) {
      expect(serverVersionFindings(version)).toEqual({ refusals: [], warnings: [] });
    }
  });

  it('refuses Worker Versioning (HOSTFLOW_WORKER_DEPLOYMENT) below 1.29.1, and only when it is asked for', () => {
    expect(MIN_WORKER_VERSIONING).toBe('1.29.1');
    expect(serverVersionFindings('1.29.0', { workerVersioning: true }).refusals).toEqual([
      expect.stringContaining('needs 1.29.1 or later'),
    ]);
    expect(serverVersionFindings('1.29.0').refusals).toEqual([]);
    expect(serverVersionFindings('1.32.1', { workerVersioning: true }).refusals).toEqual([]);
    expect(serverVersionFindings('cloud-2026-11', { workerVersioning: true }).refusals).toEqual([]);
  });

  it('does not judge a version it cannot read, and says what it needs', () => {
    for (const version of [undefined, '', 'cloud-2026-11']) {
      const findings = serverVersionFindings(version);
      expect(findings.refusals).toEqual([]);
      expect(findings.warnings).toEqual([expect.stringContaining('1.26.0 or later')]);
    }
  });
});
