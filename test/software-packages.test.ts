// A Software's package lists (pure): the BPA operator's two shapes, pinned versions as apt takes
// them, what each role's node gets, and every entry that must never reach a host's command line.
import { describe, expect, it } from '@jest/globals';
import { parseSoftware, wantedOn } from '../workflows/software/packages.js';

describe('package lists', () => {
  it("reads the original's shapes: a name, or {name: {version}} pinned as name=version", () => {
    expect(
      parseSoftware({
        masterSoftware: ['curl', 'htop', { jq: { version: '1.6-2.1' } }, { tmux: null }],
        workerSoftware: [{ 'nfs-common': { version: '1:2.6.2-4' } }, 'g++'],
      }),
    ).toEqual({
      master: ['curl', 'htop', 'jq=1.6-2.1', 'tmux'],
      worker: ['nfs-common=1:2.6.2-4', 'g++'],
    });
    expect(parseSoftware({})).toEqual({ master: [], worker: [] });
    // YAML reads `version: 3.3` as a number: it is the version 3.3 all the same
    expect(parseSoftware({ masterSoftware: [{ tmux: { version: 3.3 } }] })).toEqual({
      master: ['tmux=3.3'],
      worker: [],
    });
  });

  it('gives a node the lists of its roles, once each', () => {
    const packages = { master: ['chrony', 'curl'], worker: ['curl', 'jq'] };
    const node = (roles: string[]) => ({ label: 'n', ip: '10.0.0.1', user: 'root', roles });
    expect(wantedOn(node(['master']), packages)).toEqual(['chrony', 'curl']);
    expect(wantedOn(node(['worker']), packages)).toEqual(['curl', 'jq']);
    expect(wantedOn(node(['master', 'worker']), packages)).toEqual(['chrony', 'curl', 'jq']);
  });

  it('refuses what is not a package, naming the entry; nothing of it reaches a shell', () => {
    expect(
      parseSoftware({
        masterSoftware: [
          'curl; reboot',
          '-oAPT::Update::Pre-Invoke::=reboot',
          'Curl',
          { a: {}, b: {} },
          42 as unknown as string,
          { jq: { version: '$(reboot)' } },
          { jq: { version: '1.6 -y' } },
        ],
        workerSoftware: ['jq', { jq: { version: '1.7.1-3' } }],
      }),
    ).toEqual({
      problems: [
        'masterSoftware[0]: "curl; reboot" is not a package name (lower case letters, digits, + - .)',
        'masterSoftware[1]: "-oAPT::Update::Pre-Invoke::=reboot" is not a package name (lower case letters, digits, + - .)',
        'masterSoftware[2]: "Curl" is not a package name (lower case letters, digits, + - .)',
        'masterSoftware[3]: give a package name, or {<name>: {version: <version>}} with one name',
        'masterSoftware[4]: give a package name, or {<name>: {version: <version>}} with one name',
        'masterSoftware[5]: jq: "$(reboot)" is not a package version',
        'masterSoftware[6]: jq: "1.6 -y" is not a package version',
        'workerSoftware[1]: jq is listed twice, as jq and jq=1.7.1-3',
      ],
    });
  });
});
