// The Grafana dashboard and Prometheus alert rules in deploy/monitoring are well-formed and
// query only metrics that hostflow's processes really export, as scraped from a static pool's
// worker, bridge and OTP service after serving TaskRuns (a host failing, the OTP service down,
// leftovers collected), and from the suite's lock-audit receiver. prom-client processes list
// every metric they register; the worker (Temporal's exporter) lists a metric only once a
// workflow recorded it, so the few workflow metrics this scenario cannot produce (cloud VMs,
// rollouts) are matched against their declaration in workflows/metrics.ts, after checking that
// the exporter keeps the declared names and types of those it did produce.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { generateEd25519KeyPair } from '../activities/ssh/keys.js';
import { ACTION_LABELS, PHASES } from '../k8s-bridge/cluster-operation-counts.js';
import { REPO_ROOT } from '../local-stack/paths.js';
import { waitFor } from '../local-stack/process.js';
import { WORKFLOW_ID } from '../shared/workflow-ids.js';
import { testEnv } from './support/env.js';
import { createStaticPool, SHORT_GC_PERIODS, type StaticPool } from './support/static-pool.js';

type MetricType = 'counter' | 'gauge' | 'histogram' | 'summary' | 'untyped';
interface Panel {
  id: number;
  type: string;
  title?: string;
  datasource?: { uid?: string };
  targets?: Array<{ expr?: string }>;
}
interface Rule {
  alert?: string;
  expr?: string;
  for?: string;
  labels?: { severity?: string };
  annotations?: { summary?: string; description?: string };
}

const read = (path: string) => readFileSync(join(REPO_ROOT, path), 'utf8');
const dashboard = JSON.parse(read('deploy/monitoring/grafana-dashboard.json')) as {
  panels: Panel[];
  templating: { list: Array<{ name: string; type: string; query: unknown }> };
};
const rules = (
  parse(read('deploy/monitoring/alerts.yaml')) as { groups: Array<{ rules: Rule[] }> }
).groups.flatMap((g) => g.rules);

const KEYWORDS = new Set(
  'and or unless bool by without on ignoring group_left group_right offset inf nan'.split(' '),
);
/** The metric names a PromQL expression selects: identifiers left once strings, label
 * matchers, ranges and grouping clauses are gone, except functions (followed by "("). */
function metricNames(expr: string): string[] {
  const bare = expr
    .replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`/g, '""')
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(/\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ');
  const names = [...bare.matchAll(/(?<![\w$.:])[A-Za-z_:][\w:]*(?![\w:]|\s*\()/g)].map((m) => m[0]);
  return [...new Set(names.filter((n) => !KEYWORDS.has(n.toLowerCase())))];
}

/** Every metric name used, with where it is used. */
function usedNames(): Map<string, string[]> {
  const used = new Map<string, string[]>();
  const add = (names: string[], where: string) => {
    for (const n of names) used.set(n, [...(used.get(n) ?? []), where]);
  };
  for (const p of dashboard.panels)
    for (const t of p.targets ?? []) add(metricNames(t.expr ?? ''), `panel "${p.title}"`);
  for (const v of dashboard.templating.list) {
    const query = JSON.stringify(v.query ?? '');
    add(
      [...query.matchAll(/label_values\(\s*([A-Za-z_:][\w:]*)/g)].map((m) => m[1]!),
      `$${v.name}`,
    );
  }
  for (const r of rules) add(metricNames(r.expr ?? ''), `alert ${r.alert}`);
  return used;
}

/** Metric name → type, from the `# TYPE` lines of scraped /metrics bodies. */
function types(bodies: string[]): Map<string, MetricType> {
  const found = new Map<string, MetricType>();
  for (const body of bodies)
    for (const m of body.matchAll(/^# TYPE (\S+) (\w+)$/gm)) found.set(m[1]!, m[2] as MetricType);
  return found;
}

/** Whether `name` is a series some metric of `known` produces. */
function produces(known: Map<string, MetricType>, name: string): boolean {
  const type = known.get(name);
  if (type && type !== 'histogram') return true;
  const base = /^(.*)_(bucket|sum|count)$/.exec(name);
  const baseType = base && known.get(base[1]!);
  return baseType === 'histogram' || (baseType === 'summary' && base![2] !== 'bucket');
}

/** Names in `used` that no process exports (Prometheus's own `up` aside). */
const missing = (used: Map<string, string[]>, known: Map<string, MetricType>) =>
  [...used]
    .filter(([name]) => name !== 'up' && !produces(known, name))
    .map(([name, where]) => `${name} (${where.join(', ')})`);

/** The workflow metrics as declared for the worker's Temporal runtime. */
const declared = new Map<string, MetricType>(
  [...read('workflows/metrics.ts').matchAll(/\b(histogram|counter|gauge)\(\s*'([\w:]+)'/g)].map(
    (m) => [m[2]!, m[1]!.toLowerCase() as MetricType],
  ),
);

/** Workflow metrics this suite cannot produce here: VMs need a cloud (whose test subnets are all
 * taken by the dynamic tests), rollout nodes a MachineConfigPool rollout. */
const NOT_PRODUCED_HERE = [
  'hostflow_orphan_vms_collected',
  'hostflow_pool_vms',
  'hostflow_rollout_nodes',
  'hostflow_vm_start_failures',
];
/** Short resync and garbage-collection periods, as in terminated-workflows.test.ts. */
let pool: StaticPool;
let live: Map<string, MetricType>;
let workerBody: string;
let bridgeBody: string;

/** Serves TaskRuns so that the worker has recorded its workflow metrics: a host that fails, the
 * OTP service down for a while, and leftovers of a terminated workflow for garbage collection. */
async function serveTaskRuns(): Promise<void> {
  const { scope } = pool;
  const { taskRuns } = scope;
  const create = (name: string) => taskRuns.create({ name, platform: pool.platform });
  const finish = async (name: string) => {
    expect((await taskRuns.waitForSecret(name, 60_000)).host).toContain(pool.hosts[1]!.address);
    await taskRuns.complete(name);
    await taskRuns.waitForSecretGone(name);
  };
  // h1 has the most free slots but a key it refuses: the TaskRun fails there, then h2 serves it.
  await pool.adminSecret('wrong-key', generateEd25519KeyPair('test').privateKey);
  await scope.setHostConfig(
    pool.hostEntries([
      { host: 0, concurrency: 2, secret: 'wrong-key' },
      { host: 1, concurrency: 1 },
    ]),
  );
  await finish((await create('failed-over')).name);
  await scope.setHostConfig(pool.hostEntries([{ host: 1 }]));
  await pool.killOtp();
  try {
    await create('otp-down');
    await workerExports('hostflow_dependency_waits');
  } finally {
    await pool.startOtp();
  }
  await finish('otp-down');
  // Terminated by hand and deleted: its build user and Secret are left for garbage collection.
  const tr = await create('orphaned');
  await taskRuns.waitForSecret(tr.name);
  await scope.temporal.client.workflow
    .getHandle(WORKFLOW_ID.taskRun(scope.namespace, tr.name, tr.uid))
    .terminate('test: leave leftovers for garbage collection');
  await taskRuns.delete(tr.name, { orphan: true });
  await workerExports('hostflow_orphan_users_collected', 'hostflow_orphan_secrets_collected');
}

/** Waits until the worker's /metrics has samples of all these metrics; returns the body. */
const workerExports = (...names: string[]) =>
  waitFor(
    `the worker to export ${names.join(', ')}`,
    async () => {
      const body = await (await fetch(pool.metrics.worker)).text();
      return names.every((n) => new RegExp(`^${n}(_count)?\\{`, 'm').test(body)) ? body : undefined;
    },
    { timeoutMs: 60_000 },
  );

beforeAll(async () => {
  pool = await createStaticPool('monitor', 2, {
    worker: SHORT_GC_PERIODS,
    bridge: SHORT_GC_PERIODS,
  });
  await serveTaskRuns();
  const worker = await workerExports(
    'hostflow_provisioning_failures',
    'hostflow_provisioning_seconds',
    'hostflow_allocation_wait_seconds',
    'hostflow_slots_total',
  );
  const others = [pool.metrics.bridge, pool.metrics.otp, testEnv('lockAuditMetrics')];
  const bodies = await Promise.all(others.map(async (url) => (await fetch(url)).text()));
  workerBody = worker;
  bridgeBody = bodies[0]!;
  live = types([worker, ...bodies]);
}, 240_000);

afterAll(async () => {
  await pool?.dispose();
});

describe('the Grafana dashboard', () => {
  it('has a Prometheus datasource variable, unique panel ids, and a titled query in every panel', () => {
    const variable = dashboard.templating.list.find((v) => v.name === 'datasource');
    expect(variable).toMatchObject({ type: 'datasource', query: 'prometheus' });
    const ids = dashboard.panels.map((p) => p.id);
    expect(new Set(ids).size).toBe(ids.length);
    const queries = dashboard.panels.filter((p) => p.type !== 'row'); // rows only group panels
    expect(queries.length).toBeGreaterThan(10);
    for (const p of dashboard.panels) expect(p.title).toMatch(/\S/);
    const incomplete = queries.filter(
      (p) =>
        p.datasource?.uid !== '${datasource}' ||
        !p.targets?.length ||
        p.targets.some((t) => !t.expr?.trim()),
    );
    expect(incomplete.map((p) => p.title)).toEqual([]);
  });
});

describe('the alert rules', () => {
  it('give every alert an expression, a duration, a severity, and a summary and runbook', () => {
    const names = rules.map((r) => r.alert);
    expect(new Set(names).size).toBe(names.length);
    const incomplete = rules.filter(
      (r) =>
        !r.alert?.startsWith('Hostflow') ||
        !r.expr?.trim() ||
        !/^\d+[smh]$/.test(r.for ?? '') ||
        !['critical', 'warning', 'info'].includes(r.labels?.severity ?? '') ||
        !r.annotations?.summary?.trim() ||
        !r.annotations.description?.includes('Runbook:'),
    );
    expect(incomplete.map((r) => r.alert)).toEqual([]);
  });
});

describe('the metric names they query', () => {
  it('are read from PromQL without functions, labels, ranges, strings or keywords', () => {
    expect(
      metricNames(
        'histogram_quantile(0.95, sum by (le, platform) (rate(a_bucket{platform=~"$platform", x="b c"}[$__rate_interval])))',
      ),
    ).toEqual(['a_bucket']);
    expect(
      metricNames(
        'max by (platform) (a) > 0 and on (platform) (b - c) unless ignoring (x) group_left (y) d offset 5m or e == bool 1e3',
      ),
    ).toEqual(['a', 'b', 'c', 'd', 'e']);
    expect(metricNames('sum(rate(x[5m])) by (job) / min_over_time(y[30m:1m])')).toEqual(['x', 'y']);
  });

  it('are exported by a process: live, or declared for the worker under the name it exports', () => {
    const used = usedNames();
    expect(used.size).toBeGreaterThan(15);
    // The worker exports workflow metrics under their declared names and types: nothing added.
    const seen = [...declared].filter(([name]) => live.has(name));
    expect(seen.length).toBeGreaterThanOrEqual(6);
    for (const [name, type] of seen) expect([name, live.get(name)]).toEqual([name, type]);
    expect(missing(used, new Map([...declared, ...live]))).toEqual([]);
    const fromSource = [...used.keys()].filter((n) => n !== 'up' && !produces(live, n));
    expect(fromSource.filter((n) => !NOT_PRODUCED_HERE.includes(n))).toEqual([]);
    console.log(
      `${used.size} metric names used; checked against workflows/metrics.ts only: ${fromSource.join(', ')}`,
    );
  });

  it('include ClusterOperations from the bridge: every phase and action from zero, no names', () => {
    expect(live.get('hostflow_cluster_operations')).toBe('gauge');
    const series = [...bridgeBody.matchAll(/^hostflow_cluster_operations\{([^}]*)\} \d+$/gm)];
    const labels = series.map(([, text]) => [...text!.matchAll(/(\w+)="([^"]*)"/g)]);
    // Each phase with each action, at zero when none is (other suites' may count).
    expect(series).toHaveLength(PHASES.length * ACTION_LABELS.length);
    for (const pairs of labels) {
      expect(pairs.map((m) => m[1]).sort()).toEqual(['action', 'phase', 'process']);
    }
  });

  it("gives the worker's latency histograms bucket edges in seconds, not the SDK's milliseconds", () => {
    for (const name of ['hostflow_provisioning_seconds', 'hostflow_allocation_wait_seconds'])
      expect(workerBody).toMatch(new RegExp(`^${name}_bucket\\{[^}]*le="0\\.5"`, 'm'));
  });

  it('would fail on a name no process exports, or on a histogram queried without a suffix', () => {
    const known = new Map([...declared, ...live]);
    const wrong = new Map([
      ['hostflow_slots_free', ['x']],
      ['hostflow_otp_request_seconds', ['x']],
      ['hostflow_provisioning_failures_total', ['x']],
      ['hostflow_slots_total_bucket', ['x']],
    ]);
    expect(missing(wrong, known)).toHaveLength(4);
    expect(missing(new Map([['hostflow_otp_request_seconds_bucket', ['x']]]), known)).toEqual([]);
  });
});
