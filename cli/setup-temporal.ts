// `hostflow setup temporal`: readies a Temporal namespace for hostflow, once per install and
// again after an upgrade that adds a search attribute. It registers each search attribute the
// workflows upsert, with its type, and checks the server's version, as the worker and the bridge
// check both at start (runtime/temporal-requirements.ts). Temporal Cloud's namespaces change
// through its own control plane, so `--tcld` prints the tcld commands that do the same there.
import { SA, SA_TYPE_NAMES } from '../shared/search-attributes.js';
import {
  checkTemporalServer,
  indexedType,
  mistypedRefusal,
  searchAttributeGaps,
} from '../runtime/temporal-requirements.js';
import { loadSettings } from '../runtime/settings.js';
import { parseCommandArgs, runCommand, UsageError, withTemporal } from './oncall.js';

export const SETUP_USAGE = `
setup options:
  hostflow setup temporal [--tcld]
      Registers hostflow's search attributes, each of its type, in the Temporal namespace
      TEMPORAL_NAMESPACE at TEMPORAL_ADDRESS (TEMPORAL_TLS*, TEMPORAL_API_KEY as the worker
      reads them), and checks that the server is new enough. What is registered already is left
      alone; one of another type is an error. Run it once per install, and after each upgrade.
      --tcld prints the tcld commands that register them on Temporal Cloud instead.`;

export async function setupCommand(args: string[]): Promise<number> {
  return runCommand('setup', SETUP_USAGE, async () => {
    const { values, positionals } = parseCommandArgs(args, { tcld: { type: 'boolean' } });
    if (positionals.length !== 1 || positionals[0] !== 'temporal') {
      throw new UsageError(
        positionals.length === 0
          ? 'say what to set up: temporal'
          : `cannot set up "${positionals.join(' ')}": only temporal`,
      );
    }
    if (values.tcld) {
      console.log(tcldCommand(loadSettings().TEMPORAL_NAMESPACE));
      return 0;
    }
    return setUpTemporal();
  });
}

/** The tcld command that registers every search attribute in `namespace` on Temporal Cloud. */
export function tcldCommand(namespace: string): string {
  const attributes = Object.values(SA).map(
    (key) => `  --search-attribute "${key.name}=${SA_TYPE_NAMES[key.type]}"`,
  );
  return [`tcld namespace search-attributes add --namespace ${namespace}`, ...attributes].join(
    ' \\\n',
  );
}

async function setUpTemporal(): Promise<number> {
  return withTemporal('setup temporal', async ({ client, settings, bounded }) => {
    const namespace = settings.TEMPORAL_NAMESPACE;
    const { operatorService } = client.connection;
    const listed = await bounded(30_000, () => operatorService.listSearchAttributes({ namespace }));
    const present = (listed.customAttributes ?? {}) as Record<string, number>;
    const { missing, mistyped } = searchAttributeGaps(present);
    // A wrong type cannot be mended by adding: say so and change nothing.
    if (mistyped.length > 0) {
      throw new Error(
        mistyped.map(({ key, type }) => mistypedRefusal(namespace, key, type)).join('\n'),
      );
    }
    if (missing.length > 0) {
      try {
        await bounded(60_000, () =>
          operatorService.addSearchAttributes({
            namespace,
            searchAttributes: Object.fromEntries(
              missing.map((key) => [key.name, indexedType(key.type)]),
            ),
          }),
        );
      } catch (err) {
        throw new Error(
          `cannot register search attributes in Temporal namespace ${namespace}: ` +
            `${(err as Error).message}. On Temporal Cloud, run what \`hostflow setup temporal --tcld\` ` +
            'prints; elsewhere, use an identity with operator rights on the namespace',
          { cause: err },
        );
      }
    }
    for (const key of Object.values(SA)) {
      const state = missing.includes(key) ? 'registered' : 'present';
      console.log(`${key.name} (${SA_TYPE_NAMES[key.type]}): ${state}`);
    }
    // What the worker will check at start, now: the server's version and the attributes as
    // the server now lists them.
    const { version } = await bounded(30_000, () =>
      checkTemporalServer(client.connection, namespace, (m) => console.log(`warning: ${m}`)),
    );
    console.log(
      `Temporal namespace ${namespace} on server ${version ?? '(version not reported)'}: ready for hostflow`,
    );
    return 0;
  });
}
