// Where TaskRuns live in the API. v1 is what we read and patch; v1beta1 objects are served
// through v1 as well (the CRD stores v1).
export const TASKRUN_API = {
  group: 'tekton.dev',
  version: 'v1',
  plural: 'taskruns',
} as const;
