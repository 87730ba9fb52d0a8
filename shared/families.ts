// The families an install runs (HOSTFLOW_FAMILIES), and the resources each needs the API server to
// serve: an install into a cluster without Tekton, CAPI or the MCO's APIs runs the families it has
// and never waits on an API that will not come. Each resource says where its CRD comes from, so
// a missing one is named with what to apply (k8s-bridge/list-watch.ts, workers/bridge.ts).
import { BPA_CLUSTER_API, PROVISIONING_API, SOFTWARE_API } from './bpa-api.js';
import { CLUSTER_OPERATION_API } from './cluster-operation-api.js';
import { HOSTFLOW_MACHINE_API } from './machine-api.js';
import { MACHINE_CONFIG_API, MACHINE_CONFIG_POOL_API } from './mco-api.js';
import { TASKRUN_API } from './taskrun-api.js';
import { LOCK_API } from '../locks/api.js';

export const FAMILIES = [
  'taskruns',
  'provisionings',
  'cluster-operations',
  'machines',
  'rollouts',
  'locks',
] as const;

export type Family = (typeof FAMILIES)[number];

export interface ApiResource {
  group: string;
  version: string;
  plural: string;
}

interface FamilyNeeds {
  /** The resources its bridge watches or its workflows write, with where their CRD comes from. */
  resources: Array<ApiResource & { crdFrom: string }>;
  /** Families it cannot run without. */
  needs: Family[];
}

/** hostflow's own CRDs come with their family's component. */
const component = (family: Family) => `deploy/families/${family} in your overlay`;

export const FAMILY_NEEDS: Record<Family, FamilyNeeds> = {
  taskruns: {
    resources: [{ ...TASKRUN_API, crdFrom: 'Tekton Pipelines installs it' }],
    needs: [],
  },
  provisionings: {
    resources: [PROVISIONING_API, SOFTWARE_API, BPA_CLUSTER_API].map((api) => ({
      ...api,
      crdFrom: component('provisionings'),
    })),
    needs: [],
  },
  'cluster-operations': {
    resources: [{ ...CLUSTER_OPERATION_API, crdFrom: component('cluster-operations') }],
    // An operation takes its turn from its Provisioning's workflow.
    needs: ['provisionings'],
  },
  machines: {
    resources: [{ ...HOSTFLOW_MACHINE_API, crdFrom: component('machines') }],
    needs: [],
  },
  rollouts: {
    resources: [MACHINE_CONFIG_POOL_API, MACHINE_CONFIG_API].map((api) => ({
      ...api,
      crdFrom: "the MCO's CRDs from openshift/api, see docs/rollouts.md",
    })),
    needs: [],
  },
  locks: {
    resources: [{ ...LOCK_API, crdFrom: component('locks') }],
    needs: [],
  },
};

/**
 * Parses HOSTFLOW_FAMILIES: a comma-separated list of family names, or empty for all of them.
 * Throws a sentence that names what is wrong and what may be written.
 */
export function parseFamilies(text: string | undefined): Family[] {
  const names = (text ?? '')
    .split(',')
    .map((name) => name.trim())
    .filter(Boolean);
  if (names.length === 0) return [...FAMILIES];
  const unknown = names.filter((name) => !(FAMILIES as readonly string[]).includes(name));
  if (unknown.length > 0) {
    throw new Error(
      `unknown famil${unknown.length === 1 ? 'y' : 'ies'} ${unknown.map((n) => `"${n}"`).join(', ')}; ` +
        `the families are ${FAMILIES.join(', ')}`,
    );
  }
  const chosen = FAMILIES.filter((family) => names.includes(family));
  for (const family of chosen) {
    const missing = FAMILY_NEEDS[family].needs.filter((needed) => !chosen.includes(needed));
    if (missing.length > 0) {
      throw new Error(`${family} needs ${missing.join(', ')}: add it to the list`);
    }
  }
  return chosen;
}

/** Whether `families` include any of `some`. */
export const runsAny = (families: readonly Family[], ...some: Family[]): boolean =>
  some.some((family) => families.includes(family));

/** Whether `families` are every family there is. */
export const runsEvery = (families: readonly Family[]): boolean =>
  FAMILIES.every((family) => families.includes(family));

/** Where the CRD of `api` comes from, when a family needs it. */
export function crdSource(api: ApiResource): string | undefined {
  for (const family of FAMILIES) {
    const found = FAMILY_NEEDS[family].resources.find(
      (r) => r.group === api.group && r.plural === api.plural,
    );
    if (found) return found.crdFrom;
  }
  return undefined;
}
