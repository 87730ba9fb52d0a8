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
