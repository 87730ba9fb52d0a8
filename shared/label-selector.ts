// A Kubernetes LabelSelector in the string form list calls take (`labelSelector=`), so the API
// server does the selecting, by its own rules.
import type { LabelSelector } from './mco-api.js';

/** The selector as a query string; `''` selects everything (as an empty selector does). */
export function labelSelectorQuery(selector: LabelSelector | undefined): string {
  const terms = Object.entries(selector?.matchLabels ?? {}).map(([k, v]) => `${k}=${v}`);
  for (const e of selector?.matchExpressions ?? []) {
    const values = (e.values ?? []).join(',');
    if (e.operator === 'In') terms.push(`${e.key} in (${values})`);
    else if (e.operator === 'NotIn') terms.push(`${e.key} notin (${values})`);
    else if (e.operator === 'Exists') terms.push(e.key);
    else if (e.operator === 'DoesNotExist') terms.push(`!${e.key}`);
    else
      throw new Error(
        `label selector operator "${String(e.operator)}" is not one of In, NotIn, Exists, DoesNotExist`,
      );
  }
  return terms.join(',');
}
