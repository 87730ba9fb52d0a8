// The dynamic-pool half of a platform's allocator: launches VMs when waiters need slots, turns
// VMs that answer SSH into allocator hosts, retires them at max-age and terminates them once
// idle (down to zero), and rebuilds all of that from the cloud when it starts without state.
// Cloud calls run as activities alongside the allocator's loop, never blocking it; each is
// idempotent by VM, so an allocator that continues-as-new simply issues them again.
import { log, sleep, upsertSearchAttributes, uuid4 } from '@temporalio/workflow';
import type { CloudPlatform } from '../../platform-config/host-config.js';
import { CLOUD_PROVIDERS } from '../../platform-config/cloud-providers.js';
import type { Host } from '../../platform-config/host.js';
import { cloudApi, hostConfigApi, temporalApi } from './activity-proxies.js';
import { bootTimedOut, checkBoot, launchVm } from '../kit/vm-launch.js';
import { terminateVm } from '../kit/vm-terminate.js';
import type { AllocationState } from './allocation.js';
import { metrics } from '../metrics.js';
import { innermostMessage } from '../../shared/failures.js';
import {
  addLaunches,
  adopt,
  describePool,
  emptyPool,
  launchesNeeded,
  poolClaims,
  poolHosts,
  poolWakeUp,
  recordPoolFailure,
  recordServed,
  recordUnservable,
  retire,
  type PoolSpec,
  type PoolState,
  type PoolVm,
} from './pool-state.js';
import { SA } from '../../shared/search-attributes.js';

/** What the allocator carries across continue-as-new for a pool. */
export interface PoolCarry {
  state: PoolState;
  /** The last config seen: VMs of a platform that left the config are still terminated with it. */
  cloud: CloudPlatform;
  additionalTags: Record<string, string>;
  /** Whether the VMs already in the cloud (by owner tag) have been adopted. */
  rebuilt: boolean;
}

/** The pseudo-key of the rebuild call among the per-VM calls. */
const REBUILD = 'rebuild';
/** A cloud call that failed for good (say, credentials missing) is tried again after this. */
const RETRY_MS = 10_000;
/**
 * How long a rebuild from visibility (holders not kept: the last run ran an older build) lets it
 * catch up.
 */
const VISIBILITY_SETTLE_MS = 3_000;

/**
 * What the pool may do to its allocator: read its state, and ask it to change it. The allocator's
 * state is the allocator's own; the pool never writes it.
 */
export interface AllocatorPort {
  readonly view: Readonly<AllocationState>;
  /** Turn every waiter away with this reason (VMs keep failing to start). */
  turnAway(reason: string): void;
  /** Slots of adopted VMs found held by running builds. */
  addHolders(holders: Array<{ workflowId: string; host: string }>): void;
  /** Something changed: run the allocator's loop again. */
  wake(): void;
}

export class PoolScaler {
  /** Keys of VMs with a cloud call in flight (not carried: calls are simply issued again). */
  private readonly busy = new Set<string>();
  /** Keys whose last call failed, and when to try again (not carried either). */
  private readonly retryAt = new Map<string, number>();
  private claims = '';
  private _configured = false;
  /** The allocator resumed its slots from its last run's memo: the VMs' holders are known. */
  private knowsHolders = false;

  constructor(
    private readonly platform: string,
    private readonly allocator: AllocatorPort,
    private carry: PoolCarry | undefined,
  ) {}

  /** Whether this platform is (or was, with VMs left) a pool: its hosts come from here. */
  get active(): boolean {
    return this.carry !== undefined;
  }

  /** Whether the platform is a valid pool in the config now: its capacity can grow. */
  get configured(): boolean {
    return this._configured;
  }

  /** Whether the pool has VMs in the cloud, or may have (not rebuilt yet after a crash). */
  get mayHaveVms(): boolean {
    return this.carry !== undefined && (!this.carry.rebuilt || this.carry.state.vms.length > 0);
  }

  get inFlight(): number {
    return this.busy.size;
  }

  /** The allocator knows who holds its slots (holders.ts, resumeSlots): none to look for. */
  holdersKnown(): void {
    this.knowsHolders = true;
  }

  saved(): PoolCarry | undefined {
    return this.carry;
  }

  /** Reads the platform's pool config; a new pool first rebuilds itself from the cloud. */
  async reload(): Promise<void> {
    const loaded = await hostConfigApi.loadCloudPool({ platform: this.platform });
    this._configured = loaded !== undefined;
    if (!loaded) return;
    this.carry = this.carry
      ? { ...this.carry, ...loaded }
      : { state: emptyPool(uuid4()), ...loaded, rebuilt: false };
  }

  /**
   * One pass: retire and terminate, launch what waiters need, start the cloud calls that are
   * due. Returns the hosts the allocator is to serve from: the ready VMs (undefined when the
   * platform is no pool).
   */
  step(now: number): { hosts: Host[] } | undefined {
    if (!this.carry) return undefined;
    const { state } = this.carry;
    const alloc = this.allocator.view;
    const spec = this._configured ? this.spec() : undefined;
    const due = (key: string) => !this.busy.has(key) && (this.retryAt.get(key) ?? 0) <= now;
    // Nothing is launched before the VMs already in the cloud are known: that would over-launch.
    if (!this.carry.rebuilt && due(REBUILD)) this.run(REBUILD, () => this.rebuild());
    const unservable = retire(state, alloc, spec, now);
    for (const vm of unservable) {
      const reason = recordUnservable(state, vm.id!);
      if (reason) this.allocator.turnAway(reason);
    }
    const hosts = spec ? poolHosts(state, spec) : [];
    if (spec && this.carry.rebuilt) {
      addLaunches(state, spec, launchesNeeded(state, alloc, spec), now);
    }
    this.publishClaims();
    for (const vm of state.vms) {
      if (!due(vm.key)) continue;
      if (vm.phase === 'launching') this.run(vm.key, () => this.launch(vm));
      else if (vm.phase === 'booting' && vm.nextCheck <= now) {
        this.run(vm.key, () => this.check(vm));
      } else if (vm.phase === 'terminating') this.run(vm.key, () => this.terminate(vm));
    }
    this.report();
    return { hosts };
  }

  /** Epoch ms of the next boot check, max-age retirement or retry of a failed call. */
  wakeUp(): number | undefined {
    if (!this.carry) return undefined;
    const times = [...this.retryAt.values()];
    const pool = poolWakeUp(this.carry.state, this._configured ? this.spec() : undefined);
    if (pool !== undefined) times.push(pool);
    return times.length > 0 ? Math.min(...times) : undefined;
  }

  /** A build was provisioned on this host: if it is one of the pool's VMs, the VMs can serve. */
  served(host: string): void {
    if (this.carry?.state.vms.some((vm) => vm.id === host)) recordServed(this.carry.state);
  }

  describe(): string {
    return this.carry ? describePool(this.carry.state, this.allocator.view) || 'no VMs' : '';
  }

  private spec(): PoolSpec {
    const { cloud } = this.carry!;
    return {
      platform: this.platform,
      concurrency: cloud.pool?.concurrency ?? 1,
      maxInstances: cloud.common.maxInstances,
      maxAgeMs: (cloud.pool?.maxAgeMinutes ?? 0) * 60_000,
      bootTimeoutMs: cloud.common.allocationTimeoutSeconds * 1000,
      checkIntervalMs: cloud.common.checkIntervalSeconds * 1000,
      user: CLOUD_PROVIDERS[cloud.provider.type].adminUser,
      secret: cloud.common.sshSecret,
      sudoCommands: cloud.common.sudoCommands,
    };
  }

  /**
   * After a crash: the pool's VMs are found by owner tag, their holders kept by the allocator's
   * last run (or, after a run of an older build that kept none, found by search attribute).
   */
  private async rebuild(): Promise<void> {
    const { state, cloud } = this.carry!;
    const found = (
      await cloudApi.listInstances({ cloud }).catch((err: unknown) => {
        this.failed(`listing the platform's VMs failed: ${innermostMessage(err)}`);
        throw err;
      })
    ).filter((vm) => ['pending', 'running'].includes(vm.state));
    let holders: Array<{ workflowId: string; host: string }> = [];
    if (found.length > 0 && !this.knowsHolders) {
      // A build granted just before the old allocator was lost may not be visible yet.
      await sleep(VISIBILITY_SETTLE_MS);
      holders = await temporalApi.holdersOfHosts({
        platform: this.platform,
        hosts: found.map((vm) => vm.id),
      });
    }
    // VMs and their holders appear together: no adopted VM is ever granted without its holders.
    for (const vm of found) adopt(state, this.spec(), vm, Date.now());
    this.allocator.addHolders(holders);
    this.carry!.rebuilt = true;
  }

  /** Runs a cloud call beside the loop; one that fails is tried again later, never dropped. */
  private run(key: string, call: () => Promise<void>): void {
    this.busy.add(key);
    this.retryAt.delete(key);
    void call()
      .catch((err: unknown) => {
        log.warn('pool cloud call failed; trying again later', {
          platform: this.platform,
          call: key,
          error: innermostMessage(err),
        });
        this.retryAt.set(key, Date.now() + RETRY_MS);
      })
      .finally(() => {
        this.busy.delete(key);
        this.allocator.wake();
      });
  }

  private async launch(vm: PoolVm): Promise<void> {
    const { cloud, additionalTags } = this.carry!;
    try {
      // Its key was claimed with the pool's others (publishClaims) before this launch started.
      const launched = await launchVm({
        cloud,
        launchKey: vm.key,
        tags: additionalTags,
        summary: `Launch a ${this.platform} pool VM`,
      });
      vm.id = launched.id;
      const at = launched.launchedAt ? Date.parse(launched.launchedAt) : NaN;
      if (Number.isFinite(at)) vm.launchedAt = at;
      vm.phase = 'booting';
    } catch (err) {
      this.drop(vm);
      this.failed(`launching a VM failed: ${innermostMessage(err)}`);
    }
  }

  private async check(vm: PoolVm): Promise<void> {
    const { cloud } = this.carry!;
    const check = await checkBoot(cloud, vm.id!, {
      summary: `Check pool VM ${vm.id}`,
      deadline: vm.bootDeadline,
    });
    if ('failed' in check) {
      vm.phase = 'terminating';
      return this.failed(check.failed);
    }
    if ('ready' in check) {
      Object.assign(vm, { phase: 'ready', address: check.address });
      this.carry!.state.failures = 0;
      return;
    }
    if (Date.now() >= vm.bootDeadline) {
      vm.phase = 'terminating';
      return this.failed(bootTimedOut(cloud, vm.id!));
    }
    vm.nextCheck = Date.now() + check.nextCheckMs;
  }

  /**
   * Retried until the cloud confirms: a pool VM is never dropped while it may still run. A
   * failure is tried again by `run`, after RETRY_MS, like every call of the pool.
   */
  private async terminate(vm: PoolVm): Promise<void> {
    if (vm.id) await terminateVm(this.carry!.cloud, vm.id, `Terminate pool VM ${vm.id}`);
    this.drop(vm);
  }

  private drop(vm: PoolVm): void {
    const { state } = this.carry!;
    state.vms = state.vms.filter((known) => known !== vm);
    if (state.vms.length === 0 && !this._configured) this.carry = undefined; // left the config
  }

  private failed(reason: string): void {
    metrics.vmFailures.add(1, { platform: this.platform });
    const exhausted = this.carry && recordPoolFailure(this.carry.state, reason);
    if (exhausted) this.allocator.turnAway(exhausted);
  }

  /** Launch keys (and adopted ids) are claimed before any launch, so GC spares these VMs. */
  private publishClaims(): void {
    const claims = this.carry ? poolClaims(this.carry.state) : [];
    const joined = claims.join('\n');
    if (joined === this.claims) return;
    this.claims = joined;
    upsertSearchAttributes([{ key: SA.cloudLaunches, value: claims }]);
  }

  private report(): void {
    const phases = ['launching', 'booting', 'ready', 'retiring', 'terminating'] as const;
    for (const phase of phases) {
      const count = this.carry?.state.vms.filter((vm) => vm.phase === phase).length ?? 0;
      metrics.poolVms.set(count, { platform: this.platform, phase });
    }
  }
}
