// The one shape every cloud provider implements (docs/architecture.md, "Dynamic platforms"): launch with
// owner tags, describe, list and count by owner tag, terminate. Each provider is a thin adapter
// over its own API; errors are classified for Temporal (throttling and 5xx retry, permanent
// problems such as a bad image or rejected credentials are non-retryable with a clear message).
// Adapters are opened by type through registry.ts (docs/extending.md, "How to add a cloud
// provider").
import type { CoreV1Api } from '@kubernetes/client-node';
import type { ProviderConfigs, ProviderType } from '../../platform-config/cloud-providers.js';
import type { CloudPlatform } from '../../platform-config/host-config.js';

export type InstanceState =
  'pending' | 'running' | 'stopping' | 'stopped' | 'terminated' | 'failed' | 'unknown';

export interface Instance {
  id: string;
  state: InstanceState;
  /** The address to SSH to, chosen by the provider's address rules (e.g. strict-public-address). */
  address?: string;
  /** ISO time the cloud reports the instance was launched. */
  launchedAt?: string;
  tags: Record<string, string>;
  /** The availability zone (or region) the cloud placed it in, for provider IDs. */
  zone?: string;
  /** What `launchRef` of its idempotency key gives, when this engine launched it. */
  launchRef?: string;
}

export interface LaunchRequest {
  /** Human-readable instance name (the `Name` tag on AWS). */
  name: string;
  /** Owner tag key/value: which hostflow install owns the VM (`instance-tag`). */
  owner: { key: string; value: string };
  /** Extra tags: the TaskRun id `<ns>:<name>`, additional-instance-tags, … */
  tags: Record<string, string>;
  /**
   * Makes launch idempotent: a retried launch with the same key returns the same instance
   * instead of creating a second one (AWS ClientToken; IBM: look up by name/tag first).
   */
  idempotencyKey: string;
  /** Replaces the platform's user-data for this VM (a Machine's bootstrap data). */
  userData?: string;
}

export interface CloudProvider {
  readonly kind: ProviderType;
  /** The admin user on the provider's images, which provisions build users. */
  readonly sshUser: string;
  /**
   * The mark a launch with this idempotency key leaves on its instance (`Instance.launchRef`):
   * how garbage collection matches VMs to the workflows that claimed them before launching.
   */
  launchRef(idempotencyKey: string, owner: { key: string; value: string }): string;
  launch(request: LaunchRequest): Promise<Instance>;
  /** undefined when the cloud no longer knows the instance. */
  describe(id: string): Promise<Instance | undefined>;
  /** Instances carrying the owner tag, in any state but terminated. */
  listByOwner(owner: { key: string; value: string }): Promise<Instance[]>;
  countByOwner(owner: { key: string; value: string }): Promise<number>;
  /** Idempotent: terminating a gone instance is success. */
  terminate(id: string): Promise<void>;
}

/** What opening a provider may need: the engine namespace's Secrets and the test endpoints. */
export interface ProviderDeps {
  core: CoreV1Api;
  engineNamespace: string;
  /** EC2 endpoint override (moto in the tests and the local stack). */
  awsEndpoint?: string;
  /** IBM Cloud IAM token endpoint override (the IBM double in the tests and the local stack). */
  ibmIamEndpoint?: string;
}

/** A provider opened for one call; `destroy` frees what it holds (an SDK client's sockets). */
export type OpenedProvider = CloudProvider & { destroy?(): void };

/** Opens a platform's provider of type K, its credentials read for each call. */
export type OpenProvider<K extends ProviderType> = (
  cloud: CloudPlatform,
  config: ProviderConfigs[K],
) => Promise<OpenedProvider>;

/** Made once per worker, so that what it keeps across calls (IAM tokens) lives that long. */
export type ProviderOpener<K extends ProviderType> = (deps: ProviderDeps) => OpenProvider<K>;

// The tag keys are part of the contract (platform-config/contract.ts); re-exported for adapters.
export {
  OWNER_TAG_KEY,
  PLATFORM_TAG_KEY,
  TASKRUN_TAG_KEY,
} from '../../platform-config/contract.js';
