// Fixed ports of the persistent local stack (`npm start`). Temporal's live in temporal-dev.yaml.
// Away from 6443/2379 so a kind or k3s cluster on the same machine does not collide.
export const LOCAL_PORTS = {
  kubeApi: 16443,
  etcd: 12379,
  otp: 18443,
  /** hostflow's lock-audit receiver: the local API server's audit webhook. */
  lockAudit: 18444,
  /** moto's EC2, the demo cloud. */
  moto: 15000,
} as const;

/**
 * Node flags of hostflow's processes, here and in the image (deploy/image/Dockerfile). A 1 MiB
 * young generation instead of V8's 16 MiB default: each process holds little live data, and the
 * default let the worker's two V8 heaps grow by about 200 MB of uncollected garbage in a burst.
 */
export const ENGINE_NODE_FLAGS = ['--max-semi-space-size=1'];
