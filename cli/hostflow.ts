#!/usr/bin/env node
// The `hostflow` command: `start` runs the engine (on a local stack by default).
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';
import { HOST_USAGE, runHost } from './host.js';
import { DESCRIBE_USAGE, describeCommand } from './describe.js';
import { REPLAY_USAGE, replayCommand } from './replay.js';
import { RETRY_USAGE, runRetry } from './retry.js';
import { START_USAGE, type StartOptions } from './start-options.js';
import { SETUP_USAGE, setupCommand } from './setup-temporal.js';
import { STATUS_USAGE, statusCommand } from './status.js';
import { UPGRADE_USAGE, upgradeCommand } from './upgrade.js';

const USAGE = `usage: hostflow <command> [options]

commands:
  start    run the engine: Temporal, Kubernetes API, bridge and worker
  status   every platform's slots, queue, unhealthy hosts and VMs, from the allocators
  describe an object's workflow: phase, facts, steps and last error (taskrun, provisioning,
           software, cluster, machine NS/NAME; pool NAME)
  replay   replay a workflow history (from a file or the server) against this code
  retry    resume a Failed Provisioning or ClusterOperation at the step that failed, or a
           Failed Software (or TaskRun)
  host     drain a static host for maintenance, or undrain it
  setup    ready a Temporal namespace for hostflow: its search attributes, its server's version
  upgrade  whether an install without Worker Versioning may roll out the next release
${START_USAGE}
${STATUS_USAGE}
${DESCRIBE_USAGE}
${REPLAY_USAGE}
${RETRY_USAGE}
${HOST_USAGE}
${SETUP_USAGE}
${UPGRADE_USAGE}`;

export async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (!command || command === 'help' || command === '--help' || command === '-h') {
    console.log(USAGE);
    return command ? 0 : 2;
  }
  if (command === 'status') return statusCommand(rest);
  if (command === 'describe') return describeCommand(rest);
  if (command === 'replay') return replayCommand(rest);
  if (command === 'retry') return retry(rest);
  if (command === 'host') return host(rest);
  if (command === 'setup') return setupCommand(rest);
  if (command === 'upgrade') return upgradeCommand(rest);
  if (command !== 'start') {
    console.error(`hostflow: unknown command "${command}"\n\n${USAGE}`);
    return 2;
  }
  let options: StartOptions;
  try {
    const { values } = parseArgs({
      args: rest,
      strict: true,
      options: {
        kubeconfig: { type: 'string' },
        context: { type: 'string' },
        'temporal-address': { type: 'string' },
        'temporal-namespace': { type: 'string' },
        'temporal-api-key': { type: 'string' },
        'temporal-tls': { type: 'boolean' },
        'temporal-tls-cert': { type: 'string' },
        'temporal-tls-key': { type: 'string' },
        'temporal-tls-ca': { type: 'string' },
        'temporal-server': { type: 'boolean' },
        'state-dir': { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    });
    if (values.help) {
      console.log(USAGE);
      return 0;
    }
    if (values['temporal-server'] && values['temporal-address']) {
      throw new Error(
        '--temporal-server runs a local Temporal server and --temporal-address uses another: give one',
      );
    }
    options = {
      kubeconfig: values.kubeconfig,
      context: values.context,
      temporalAddress: values['temporal-address'],
      temporalNamespace: values['temporal-namespace'],
      temporalApiKey: values['temporal-api-key'],
      temporalTls: values['temporal-tls'],
      temporalTlsCert: values['temporal-tls-cert'],
      temporalTlsKey: values['temporal-tls-key'],
      temporalTlsCa: values['temporal-tls-ca'],
      temporalServer: values['temporal-server'],
      stateDir: values['state-dir'],
    };
  } catch (err) {
    console.error(`hostflow start: ${(err as Error).message}\n\n${USAGE}`);
    return 2;
  }
  // Loaded only to start: it brings the local stack, which the image does not ship.
  const { runStart } = await import('./start.js');
  return runStart(options);
}

async function retry(args: string[]): Promise<number> {
  try {
    const { values, positionals } = parseArgs({
      args,
      strict: true,
      allowPositionals: true,
      options: { kubeconfig: { type: 'string' }, context: { type: 'string' } },
    });
    if (positionals.length !== 2) throw new Error('give the kind and NAMESPACE/NAME');
    return await runRetry({
      kind: positionals[0],
      target: positionals[1],
      kubeconfig: values.kubeconfig,
      context: values.context,
    });
  } catch (err) {
    console.error(`hostflow retry: ${(err as Error).message}\n${RETRY_USAGE}`);
    return 2;
  }
}

async function host(args: string[]): Promise<number> {
  try {
    return await runHost(args);
  } catch (err) {
    console.error(`hostflow host: ${(err as Error).message}\n${HOST_USAGE}`);
    return 2;
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (err) => {
      console.error(`hostflow: ${(err as Error).message}`);
      process.exit(1);
    },
  );
}
