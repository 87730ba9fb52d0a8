// The one shape of a build host (docs/architecture.md, "host-config"). It sits in platform-config/,
// the lowest layer, because static hosts are parsed into it, and every other part imports it
// from here.

/**
 * A host that runs builds: a static host of host-config (`host.<name>.*`), or a cloud VM. The one
 * shape the allocator grants, the TaskRun keeps, and the SSH activities connect to.
 */
export interface Host {
  /** `<name>` of `host.<name>.*`, or the VM's instance id: the `assigned-host` label value. */
  name: string;
  address: string;
  /** The admin user, who creates build users with passwordless sudo. */
  user: string;
  /** Secret in the engine namespace holding the admin's private key (key `id_rsa`). */
  secret: string;
  /** Builds the host runs at once. */
  concurrency: number;
  /** Absolute command paths build users may run with sudo. */
  sudoCommands: string[];
  /** 22 unless given. */
  port?: number;
  /**
   * `ssh-ed25519 AAAA…`: a VM's generated key, or host-config's `host.<name>.host-key`; without it
   * the key is trusted on first use (activities/ssh/host-keys.ts).
   */
  hostKey?: string;
  /** Set for a host that serves Cluster API Machines only; unset, it serves builds only. */
  serves?: 'machines';
}
