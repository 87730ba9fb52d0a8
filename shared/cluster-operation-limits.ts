// How much of a tenant's ClusterOperations the engine keeps (docs/provisionings.md, "Limits"):
// a spec goes into its operation's workflow history (before v19, into its Provisioning's, and
// waited in its queue, carried across continue-as-new); a Provisioning's line holds at most so
// many; a custom action's text goes into the operation's history; a step's hosts into its
// status. Pure.
import type { ClusterOperationSpec } from './cluster-operation-api.js';

/** A spec's JSON, hooks and extraVars included: larger ones are refused, and not sent whole. */
export const MAX_SPEC_BYTES = 32 * 1024;
/** Operations that may wait for their turn on one Provisioning. */
export const MAX_QUEUED_OPERATIONS = 20;
/** spec.nodes, as the CRD's maxItems says. */
export const MAX_OPERATION_NODES = 100;
/** One custom action's text, read from its ConfigMap into the operation's history. */
export const MAX_ACTION_BYTES = 64 * 1024;
/** All custom actions of one operation together. */
export const MAX_ACTIONS_BYTES = 256 * 1024;
/** Hosts a step's status lists (hosts, wouldChange); the rest are counted in hostsNotShown. */
export const MAX_STATUS_HOSTS = 50;

/** What makes a spec too large to take; `specBytes` when the bridge measured and did not send it. */
export function checkOperationLimits(spec: ClusterOperationSpec, specBytes?: number): string[] {
  const problems: string[] = [];
  const bytes = specBytes ?? specSize(spec);
  if (bytes > MAX_SPEC_BYTES) {
    problems.push(
      `spec is ${bytes} bytes of JSON: at most ${MAX_SPEC_BYTES}, hooks and extraVars included`,
    );
  }
  const nodes = spec.nodes;
  if (Array.isArray(nodes) && nodes.length > MAX_OPERATION_NODES) {
    problems.push(`spec.nodes lists ${nodes.length} nodes: at most ${MAX_OPERATION_NODES}`);
  }
  return problems;
}

/** A spec's size as JSON, in UTF-8 bytes. */
export const specSize = (spec: ClusterOperationSpec): number => utf8Bytes(JSON.stringify(spec));

/** UTF-8 bytes of `text`, counted without Buffer (not in a workflow's sandbox). */
export function utf8Bytes(text: string): number {
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    // A surrogate pair (one character, 4 bytes) counts 2 for each half.
    bytes += code < 0x80 ? 1 : code < 0x800 || (code >= 0xd800 && code < 0xe000) ? 2 : 3;
  }
  return bytes;
}
