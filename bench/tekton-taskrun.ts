// An ordinary TaskRun, not for hostflow (no PLATFORM param, no multi-platform Secret), shaped
// and sized like one Tekton writes for a pipeline's build task: labels, annotations, an owner,
// a bundle taskRef with params, and once finished a status of a few KB (its resolved task spec,
// one entry per step, results). The bridge lists and watches these too, so its memory and its
// resync time depend on their size, not only on the few it serves.

const STEPS = ['init', 'clone', 'build', 'push'];

/** The object to create (the status subresource ignores `status` on create). */
export function ordinaryTaskRun(name: string, namespace: string, i: number) {
  const pipelineRun = `app-${i % 97}-on-push-${(i * 7919).toString(36)}`;
  return {
    apiVersion: 'tekton.dev/v1',
    kind: 'TaskRun',
    metadata: {
      name,
      namespace,
      labels: {
        'app.kubernetes.io/managed-by': 'tekton-pipelines',
        'app.kubernetes.io/version': '0.1',
        'tekton.dev/pipeline': 'docker-build',
        'tekton.dev/pipelineRun': pipelineRun,
        'tekton.dev/pipelineTask': 'build-container',
        'tekton.dev/task': 'buildah',
        'appstudio.openshift.io/application': `app-${i % 97}`,
        'appstudio.openshift.io/component': `component-${i % 211}`,
        'pipelines.appstudio.openshift.io/type': 'build',
      },
      annotations: {
        'build.appstudio.openshift.io/repo': `https://github.com/example/app-${i % 97}?rev=main`,
        'pipelinesascode.tekton.dev/sha': (i * 2654435761).toString(16).padStart(40, '0'),
        'pipelinesascode.tekton.dev/event-type': 'push',
        'tekton.dev/pipelines.minVersion': '0.12.1',
        'tekton.dev/tags': 'image-build, konflux',
      },
      ownerReferences: [
        {
          apiVersion: 'tekton.dev/v1',
          kind: 'PipelineRun',
          name: pipelineRun,
          uid: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`,
          controller: true,
          blockOwnerDeletion: true,
        },
      ],
    },
    spec: {
      params: [
        { name: 'IMAGE', value: `quay.io/example/app-${i % 97}:${pipelineRun}` },
        { name: 'DOCKERFILE', value: './Dockerfile' },
        { name: 'CONTEXT', value: '.' },
        { name: 'HERMETIC', value: 'false' },
        { name: 'IMAGE_EXPIRES_AFTER', value: '5d' },
        { name: 'COMMIT_SHA', value: (i * 40503).toString(16).padStart(40, 'a') },
        { name: 'BUILD_ARGS', value: ['VERSION=1.2.3', 'GOFLAGS=-mod=vendor'] },
      ],
      serviceAccountName: `build-pipeline-component-${i % 211}`,
      taskRef: {
        resolver: 'bundles',
        params: [
          { name: 'name', value: 'buildah' },
          {
            name: 'bundle',
            value:
              'quay.io/konflux-ci/tekton-catalog/task-buildah:0.4@sha256:' +
              (i * 97).toString(16).padStart(64, 'f'),
          },
          { name: 'kind', value: 'task' },
        ],
      },
      timeout: '2h0m0s',
      workspaces: [{ name: 'source', persistentVolumeClaim: { claimName: `pvc-${pipelineRun}` } }],
    },
  };
}

/** The status Tekton writes once the build has finished. */
export function ordinaryTaskRunStatus(name: string) {
  const start = new Date(Date.UTC(2026, 10, 1, 12, 0, 0)).toISOString();
  const end = new Date(Date.UTC(2026, 10, 1, 12, 6, 30)).toISOString();
  return {
    podName: `${name}-pod`,
    startTime: start,
    completionTime: end,
    conditions: [
      {
        type: 'Succeeded',
        status: 'True',
        reason: 'Succeeded',
        message: 'All Steps have completed executing',
        lastTransitionTime: end,
      },
    ],
    steps: STEPS.map((step, n) => ({
      name: step,
      container: `step-${step}`,
      imageID: `registry.access.redhat.com/ubi9/buildah@sha256:${String(n).repeat(64)}`,
      terminated: {
        exitCode: 0,
        reason: 'Completed',
        startedAt: start,
        finishedAt: end,
        containerID: `cri-o://${name.padEnd(64, String(n))}`,
      },
    })),
    results: [
      { name: 'IMAGE_DIGEST', type: 'string', value: `sha256:${'e'.repeat(64)}` },
      { name: 'IMAGE_URL', type: 'string', value: `quay.io/example/${name}` },
    ],
    taskSpec: {
      description: 'Buildah task builds source code into a container image and pushes it.',
      params: ['IMAGE', 'DOCKERFILE', 'CONTEXT', 'HERMETIC', 'IMAGE_EXPIRES_AFTER'].map((p) => ({
        name: p,
        type: 'string',
        description: `The ${p.toLowerCase()} of the build.`,
      })),
      steps: STEPS.map((step) => ({
        name: step,
        image: 'registry.access.redhat.com/ubi9/buildah:9.4',
        computeResources: { limits: { memory: '4Gi' }, requests: { cpu: '1', memory: '1Gi' } },
        env: [
          { name: 'STORAGE_DRIVER', value: 'vfs' },
          { name: 'IMAGE', value: '$(params.IMAGE)' },
        ],
        script: `#!/bin/bash\nset -euo pipefail\necho "${step}: $(params.IMAGE)"\n${step} --context "$(params.CONTEXT)" --file "$(params.DOCKERFILE)"\n`,
      })),
      volumes: [{ name: 'varlibcontainers', emptyDir: {} }],
      workspaces: [{ name: 'source', description: 'Workspace containing the source code.' }],
    },
  };
}
