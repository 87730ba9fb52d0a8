// What hostflow needs of its Temporal server and namespace, checked when the worker and the
// bridge start (and by `hostflow setup temporal`): a server new enough for what the workflows
// use, and every search attribute they upsert, of its type. A server that falls short is refused
// with what is missing and the version that has it, rather than failing workflow tasks later.
import type { Connection } from '@temporalio/client';
import { SearchAttributeType } from '@temporalio/common';
import { SA, SA_TYPE_NAMES } from '../shared/search-attributes.js';

/** The oldest Temporal server hostflow runs on, and why. */
export const MIN_TEMPORAL_SERVER = {
  version: '1.26.0',
  because: 'update-with-start, which a TaskRun uses to ask its allocator for a slot',
} as const;

/** Worker Versioning (HOSTFLOW_WORKER_DEPLOYMENT) as the worker uses it: pinned workflows. */
export const MIN_WORKER_VERSIONING = '1.29.1';

/** Since this version the matcher that honours task priority is on by default. */
const PRIORITY_BY_DEFAULT = '1.31.0';
const PRIORITY_SINCE = '1.28.0';

export interface Findings {
  /** Reasons to refuse to start. */
  refusals: string[];
  /** What works, but less well than it should: logged. */
  warnings: string[];
}

/** What a server of `version` (GetSystemInfo's serverVersion) lacks. */
export function serverVersionFindings(
  version: string | undefined,
  { workerVersioning = false }: { workerVersioning?: boolean } = {},
): Findings {
  const findings: Findings = { refusals: [], warnings: [] };
  const parsed = parseVersion(version);
  if (!parsed) {
    // Temporal Cloud reports versions of its own: what it serves is not checked here.
    findings.warnings.push(
      `the Temporal server reports no version hostflow can read (${JSON.stringify(version ?? '')}): ` +
        `it needs Temporal server ${MIN_TEMPORAL_SERVER.version} or later, for ${MIN_TEMPORAL_SERVER.because}`,
    );
    return findings;
  }
  if (workerVersioning && compare(parsed, MIN_WORKER_VERSIONING) < 0) {
    findings.refusals.push(
      `Temporal server ${version} has no Worker Versioning as hostflow uses it ` +
        `(HOSTFLOW_WORKER_DEPLOYMENT is set): it needs ${MIN_WORKER_VERSIONING} or later; upgrade ` +
        'the server, or unset HOSTFLOW_WORKER_DEPLOYMENT',
    );
  }
  if (compare(parsed, MIN_TEMPORAL_SERVER.version) < 0) {
    findings.refusals.push(
      `Temporal server ${version} is too old: hostflow needs ${MIN_TEMPORAL_SERVER.version} or ` +
        `later, for ${MIN_TEMPORAL_SERVER.because}; upgrade the server`,
    );
  } else if (compare(parsed, PRIORITY_SINCE) < 0) {
    findings.warnings.push(
      `Temporal server ${version} ignores task priority, so under load an allocator's workflow ` +
        `tasks wait behind the builds': ${PRIORITY_BY_DEFAULT} or later honours it`,
    );
  } else if (compare(parsed, PRIORITY_BY_DEFAULT) < 0) {
    findings.warnings.push(
      `Temporal server ${version} honours task priority only with \`matching.useNewMatcher: true\` ` +
        `in its dynamic config (docs/deploy.md); ${PRIORITY_BY_DEFAULT} or later does by default`,
    );
  }
  return findings;
}

type SearchAttributeKey = (typeof SA)[keyof typeof SA];

/**
 * What the namespace's custom search attributes (name to type, as ListSearchAttributes gives
 * them) lack: a missing one, or one of another type, fails every workflow task that upserts it.
 */
export function searchAttributeGaps(present: Record<string, number | undefined>): {
  missing: SearchAttributeKey[];
  mistyped: Array<{ key: SearchAttributeKey; type: number }>;
} {
  const wanted = Object.values(SA);
  return {
    missing: wanted.filter((key) => present[key.name] === undefined),
    mistyped: wanted.flatMap((key) => {
      const type = present[key.name];
      return type === undefined || indexedType(key.type) === type ? [] : [{ key, type }];
    }),
  };
}

/** The refusals the gaps make, each saying how to mend it. */
export function searchAttributeFindings(
  namespace: string,
  present: Record<string, number | undefined>,
): Findings {
  const { missing, mistyped } = searchAttributeGaps(present);
  const refusals: string[] = [];
  if (missing.length > 0) {
    refusals.push(
      `search attributes missing in Temporal namespace ${namespace}: ` +
        `${missing.map((k) => `${k.name} (${SA_TYPE_NAMES[k.type]})`).join(', ')}. Register them ` +
        `with \`hostflow setup temporal\` (or \`hostflow setup temporal --tcld\` for Temporal Cloud), ` +
        `or one by one:\n  ${missing.map((k) => createCommand(namespace, k)).join('\n  ')}`,
    );
  }
  refusals.push(...mistyped.map(({ key, type }) => mistypedRefusal(namespace, key, type)));
  return { refusals, warnings: [] };
}

/** A search attribute of another type: a type cannot change, so it must go first. */
export function mistypedRefusal(namespace: string, key: SearchAttributeKey, type: number): string {
  return (
    `search attribute ${key.name} in Temporal namespace ${namespace} is of type ` +
    `${typeName(type)}, not ${SA_TYPE_NAMES[key.type]}: a type cannot change, so remove it ` +
    `(\`temporal operator search-attribute remove --namespace ${namespace} --name ${key.name}\`) ` +
    'and run `hostflow setup temporal`, or give hostflow a namespace of its own'
  );
}

/**
 * Checks the server and the namespace; throws with every refusal at once, and logs each warning.
 * Where the search attributes cannot be listed (an API key without operator rights), it says so
 * and goes on: the workflows will fail their tasks visibly if one is missing.
 */
export async function checkTemporalServer(
  connection: Pick<Connection, 'workflowService' | 'operatorService'>,
  namespace: string,
  warn: (message: string) => void,
  options: { workerVersioning?: boolean } = {},
): Promise<{ version: string | undefined }> {
  const { serverVersion } = await connection.workflowService.getSystemInfo({});
  const version = serverVersion || undefined;
  const findings = serverVersionFindings(version, options);
  try {
    const { customAttributes } = await connection.operatorService.listSearchAttributes({
      namespace,
    });
    const found = searchAttributeFindings(
      namespace,
      (customAttributes ?? {}) as Record<string, number>,
    );
    findings.refusals.push(...found.refusals);
  } catch (err) {
    findings.warnings.push(
      `cannot list the search attributes of Temporal namespace ${namespace} ` +
        `(${(err as Error).message}): they are not checked`,
    );
  }
  for (const warning of findings.warnings) warn(warning);
  if (findings.refusals.length > 0) {
    throw new Error(
      `Temporal namespace ${namespace} and its server cannot serve hostflow:\n- ${findings.refusals.join('\n- ')}`,
    );
  }
  return { version };
}

/** temporal.api.enums.v1.IndexedValueType of an SDK search attribute type. */
export function indexedType(type: SearchAttributeType): number {
  return INDEXED_VALUE_TYPES.indexOf(type) + 1;
}

/** The order of temporal.api.enums.v1.IndexedValueType, from 1. */
const INDEXED_VALUE_TYPES: SearchAttributeType[] = [
  SearchAttributeType.TEXT,
  SearchAttributeType.KEYWORD,
  SearchAttributeType.INT,
  SearchAttributeType.DOUBLE,
  SearchAttributeType.BOOL,
  SearchAttributeType.DATETIME,
  SearchAttributeType.KEYWORD_LIST,
];

function typeName(type: number): string {
  const sdk = INDEXED_VALUE_TYPES[type - 1];
  return sdk ? SA_TYPE_NAMES[sdk] : `unknown (${type})`;
}

function createCommand(namespace: string, key: { name: string; type: SearchAttributeType }) {
  return (
    `temporal operator search-attribute create --namespace ${namespace} ` +
    `--name ${key.name} --type ${SA_TYPE_NAMES[key.type]}`
  );
}

type Version = [number, number, number];

function parseVersion(version: string | undefined): Version | undefined {
  const match = /^v?(\d+)\.(\d+)\.(\d+)/.exec(version ?? '');
  return match ? [Number(match[1]), Number(match[2]), Number(match[3])] : undefined;
}

function compare(a: Version, b: string): number {
  const other = parseVersion(b)!;
  for (let i = 0; i < 3; i++) if (a[i] !== other[i]) return a[i]! - other[i]!;
  return 0;
}
