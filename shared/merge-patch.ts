// The request option of a JSON merge patch (RFC 7386), which every patch of hostflow's is: the
// client's patch calls send a JSON patch unless told otherwise.
import { PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';

export const MERGE_PATCH = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
