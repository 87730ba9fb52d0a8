// `hostflow host drain|undrain PLATFORM HOST`: on-call takes a static host out of rotation for
// maintenance and brings it back. The platform's allocator owns who runs where, so the command
// is its `setHostDrained` update: validated there (an unknown host is refused with the hosts it
// has), and answered with the host's new state.
import { parseArgs } from 'node:util';
import { WorkflowNotFoundError } from '@temporalio/client';
import { WORKFLOW_ID } from '../shared/workflow-ids.js';
import { checkPlatform } from '../platform-config/platform.js';
import { setHostDrained, type HostDrainOutcome } from '../shared/contracts/allocator.js';
import { updateRefusal, withTemporal } from './oncall.js';

export const HOST_USAGE = `
host options:
  hostflow host drain PLATFORM HOST [-o json]
      Takes a static host out of rotation: the builds running on it finish and are cleaned up
      there, and no new build is placed on it until it is undrained (continue-as-new and
      host-config edits keep the drain).
  hostflow host undrain PLATFORM HOST [-o json]
      Puts it back in rotation: TaskRuns waiting for the platform are served on it at once.
      A host that serves machines (host.<name>.serves) is drained by hostflow itself when its
      Machine lets go, since the Machine's bootstrap data ran there as root: reinstall or wipe
      it, then undrain it (\`hostflow platforms\` shows such hosts and why).
  Temporal is reached as the worker reaches it: TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, ...`;

const ACTIONS = { drain: true, undrain: false } as const;
const HOST_NAME = /^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;

/** Parses `drain|undrain PLATFORM HOST [-o json]`; throws a message saying what is wrong. */
export function parseHostArgs(args: string[]): {
  drained: boolean;
  platform: string;
  host: string;
  json: boolean;
} {
  const { values, positionals } = parseArgs({
    args,
    strict: true,
    allowPositionals: true,
    options: { output: { type: 'string', short: 'o' } },
  });
  const [action, platform, host, ...rest] = positionals;
  if (!action || !Object.hasOwn(ACTIONS, action)) {
    throw new Error(
      `${action ? `"${action}" is not an action` : 'no action given'}: use drain or undrain`,
    );
  }
  if (!platform || !host || rest.length) throw new Error('give the PLATFORM and the HOST name');
  const check = checkPlatform(platform);
  if (!check.ok) throw new Error(check.reason);
  if (!HOST_NAME.test(host)) {
    throw new Error(`"${host}" is not a host name as host-config spells it (host.<name>.address)`);
  }
  if (values.output !== undefined && values.output !== 'json') {
    throw new Error(`-o ${values.output} is not an output format: use -o json, or nothing`);
  }
  return {
    drained: ACTIONS[action as keyof typeof ACTIONS],
    platform,
    host,
    json: values.output === 'json',
  };
}

export async function runHost(args: string[]): Promise<number> {
  const { drained, platform, host, json } = parseHostArgs(args);
  const allocatorId = WORKFLOW_ID.allocator(platform);
  let outcome: HostDrainOutcome;
  try {
    outcome = await withTemporal('hostflow host', ({ client }) =>
      client.workflow
        .getHandle(allocatorId)
        .executeUpdate(setHostDrained, { args: [{ host, drained }] }),
    );
  } catch (err) {
    const why =
      err instanceof WorkflowNotFoundError
        ? `no allocator runs for platform ${platform} (${allocatorId}): check the platform's ` +
          'name; an allocator starts with the first TaskRun of a platform with hosts in host-config'
        : (updateRefusal(err) ?? (err as Error).message);
    console.error(`hostflow host: ${why}`);
    return 1;
  }
  console.log(json ? JSON.stringify(outcome, null, 2) : describe(outcome));
  return 0;
}

function describe(o: HostDrainOutcome): string {
  const where = `host ${o.host} of ${o.platform}`;
  const already = o.changed ? '' : ' (it already was)';
  if (o.drained && o.drainedBecause) {
    return `${where} is drained${already}: ${o.drainedBecause}. Once it is clean: hostflow host undrain ${o.platform} ${o.host}`;
  }
  if (o.drained) {
    return (
      `${where} is drained${already}: ${o.inUse} of its ${o.capacity} slots in use; those builds ` +
      `finish there, no new ones are placed on it. Put it back with: hostflow host undrain ${o.platform} ${o.host}`
    );
  }
  return (
    `${where} is in rotation${already}: ${o.inUse} of its ${o.capacity} slots in use` +
    (o.waiting > 0 ? `; ${o.waiting} waiting TaskRun(s) are served on it as slots allow` : '')
  );
}
