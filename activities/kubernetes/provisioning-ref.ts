// Which Provisioning: its uid tells it apart from a same-named successor. Its own file so that
// cluster-outputs.ts imports it downward instead of from provisionings.ts, which imports
// cluster-outputs.ts; provisionings.ts re-exports it.
export interface ProvisioningRef {
  namespace: string;
  name: string;
  uid: string;
}
