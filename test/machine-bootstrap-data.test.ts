// What a Machine's bootstrap data becomes (pure): Go durations as Cluster API writes them,
// which Machines are hostflow's, and bootstrap data as a host without
// cloud-init runs it, with nothing from the data reaching the shell's parser unquoted.
import { describe, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bootstrapScript } from '../activities/ssh/bootstrap-script.js';
import { parseGoDuration } from '../shared/go-duration.js';
import { isHostflowInfrastructure } from '../shared/machine-api.js';

describe('Go durations', () => {
  it('reads what metav1.Duration writes, and 0', () => {
    expect(parseGoDuration('10m')).toEqual({ ms: 600_000 });
    expect(parseGoDuration('1h30m0s')).toEqual({ ms: 5_400_000 });
    expect(parseGoDuration('1.5s')).toEqual({ ms: 1_500 });
    expect(parseGoDuration('250ms')).toEqual({ ms: 250 });
    expect(parseGoDuration('0s')).toEqual({ ms: 0 });
    expect(parseGoDuration('0')).toEqual({ ms: 0 });
  });

  it('says what a duration looks like when given something else', () => {
    for (const bad of ['ten minutes', '10', '-5m', '5 m', '', 'm'])
      expect(parseGoDuration(bad)).toEqual({
        error: expect.stringMatching(/is not a duration: write a number and a unit/),
      });
  });
});

describe("a Machine's infrastructure", () => {
  it("is hostflow's only when it is a HostflowMachine of hostflow's group, whatever its version", () => {
    const served = (apiVersion: string | undefined, kind: string) =>
      isHostflowInfrastructure({ ...(apiVersion ? { apiVersion } : {}), kind });
    expect(served('infrastructure.hostflow.dev/v1alpha1', 'HostflowMachine')).toBe(true);
    expect(served('infrastructure.hostflow.dev/v1beta2', 'HostflowMachine')).toBe(true);
    expect(served(undefined, 'HostflowMachine')).toBe(true);
    expect(served('infrastructure.cluster.x-k8s.io/v1beta2', 'AWSMachine')).toBe(false);
    expect(served('infrastructure.cluster.x-k8s.io/v1beta2', 'HostflowMachine')).toBe(false);
    expect(served('v1', 'HostflowMachine')).toBe(false);
    expect(isHostflowInfrastructure(undefined)).toBe(false);
    // Cluster API v1beta2 names it by group, with no version.
    expect(
      isHostflowInfrastructure({
        apiGroup: 'infrastructure.hostflow.dev',
        kind: 'HostflowMachine',
      }),
    ).toBe(true);
    expect(
      isHostflowInfrastructure({
        apiGroup: 'infrastructure.cluster.x-k8s.io',
        kind: 'HostflowMachine',
      }),
    ).toBe(false);
  });
});

describe('bootstrap data', () => {
  it('runs a shell script as it is', () => {
    expect(bootstrapScript('#!/bin/sh\necho hi\n')).toEqual({ script: '#!/bin/sh\necho hi\n' });
  });

  it("runs #cloud-config's write_files and runcmd, as kubeadm's bootstrap data uses them", () => {
    const dir = mkdtempSync(join(tmpdir(), 'cloud-config-'));
    const data = [
      '#cloud-config',
      'write_files:',
      `  - path: ${dir}/etc/kubeadm.yaml`,
      '    permissions: "0600"',
      "    content: |\n      kind: JoinConfiguration\n      token: '$(touch " + dir + "/pwned)'",
      `  - path: ${dir}/b64`,
      '    encoding: b64',
      `    content: ${Buffer.from('decoded').toString('base64')}`,
      'runcmd:',
      `  - [touch, "${dir}/list form; rm -rf ~"]`,
      `  - echo ran > ${dir}/string-form`,
    ].join('\n');
    const converted = bootstrapScript(data);
    if ('error' in converted) throw new Error(converted.error);
    execFileSync('/bin/sh', ['-c', converted.script]);
    expect(readFileSync(join(dir, 'etc/kubeadm.yaml'), 'utf8')).toBe(
      `kind: JoinConfiguration\ntoken: '$(touch ${dir}/pwned)'\n`,
    );
    expect(statSync(join(dir, 'etc/kubeadm.yaml')).mode & 0o777).toBe(0o600);
    expect(readFileSync(join(dir, 'b64'), 'utf8')).toBe('decoded');
    expect(statSync(join(dir, 'list form; rm -rf ~')).isFile()).toBe(true);
    expect(readFileSync(join(dir, 'string-form'), 'utf8')).toBe('ran\n');
    expect(() => statSync(join(dir, 'pwned'))).toThrow(); // content never ran
  });

  it('refuses what it cannot run, saying why', () => {
    expect(bootstrapScript('{"ignition": {}}')).toEqual({
      error: expect.stringMatching(/neither a shell script .* nor #cloud-config/),
    });
    expect(bootstrapScript('#cloud-config\nwrite_files:\n  - path: relative\n')).toEqual({
      error: 'write_files[0] has no absolute path',
    });
    expect(
      bootstrapScript(
        '#cloud-config\nwrite_files:\n  - path: /x\n    permissions: "0600; rm -rf /"\n',
      ),
    ).toEqual({
      error: expect.stringMatching(/is not octal/),
    });
    expect(bootstrapScript('#cloud-config\n: [\n')).toEqual({
      error: expect.stringMatching(/is not valid YAML: .* at line 3, column \d+/),
    });
    expect(bootstrapScript('#cloud-config\nruncmd: echo\n')).toEqual({
      error: 'the #cloud-config key runcmd is not a list',
    });
    expect(bootstrapScript('#cloud-config\nruncmd:\n  - {a: 1}\n')).toEqual({
      error: 'runcmd[0] is neither a string nor a list',
    });
  });

  it('never quotes the data in its errors: it holds join tokens', () => {
    const marker = 'SECRETMARK';
    const malformed = [
      `#cloud-config\nwrite_files:\n  - path: /x\n    content: ${marker}: a: ${marker}\n`,
      `#cloud-config\nrun: [${marker}\n`,
      `#cloud-config\na: !${marker} x\na: 1\n`, // an unknown tag (a warning) and a duplicate key
      `#cloud-config\nwrite_files:\n  - path: ${marker}\n`,
      `#cloud-config\nwrite_files:\n  - path: /x\n    permissions: "${marker}"\n`,
      `#cloud-config\nwrite_files:\n  - path: /x\n    owner: "${marker};"\n`,
    ];
    const warned: unknown[] = [];
    const warn = process.emitWarning;
    process.emitWarning = ((w: unknown) => void warned.push(w)) as typeof process.emitWarning;
    try {
      for (const data of malformed) {
        const converted = bootstrapScript(data);
        expect('error' in converted).toBe(true);
        expect('error' in converted && converted.error).not.toContain(marker);
      }
    } finally {
      process.emitWarning = warn;
    }
    expect(warned).toEqual([]); // the YAML library prints nothing either
  });
});
