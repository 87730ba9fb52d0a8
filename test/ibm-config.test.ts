// Pure logic: parsing the ibmz / ibmp keys of `dynamic.<cfg>.*`.
import { describe, expect, it } from '@jest/globals';
import { parseIbmpConfig, parseIbmzConfig, parsePowerCrn } from '../platform-config/ibm-config.js';

const CRN =
  'crn:v1:bluemix:public:power-iaas:dal10:a/934e118c399b4a28a70afdf2210d708f:8c9ef568-16a5-4aa2-bfd5-946349c9aeac::';

function parse<T>(
  parser: (read: (k: string) => string | undefined, problem: (k: string, r: string) => void) => T,
  data: Record<string, string>,
) {
  const problems: Record<string, string> = {};
  const config = parser(
    (key) => data[key],
    (key, reason) => (problems[key] = problems[key] ? `${problems[key]} | ${reason}` : reason),
  );
  return { config, problems };
}

const ibmz = {
  region: 'us-east-2',
  key: 'my-key',
  subnet: 'us-east-2-default-subnet',
  vpc: 'us-east-default-vpc',
  'image-id': 'r014-17c8f3c9-1a2b-4c5d-8e9f-0123456789ab',
  secret: 'ibm-api-key',
  profile: 'bz2-1x4',
};
const ibmp = {
  key: 'my-key',
  image: 'ppc64le-image',
  secret: 'ibm-api-key',
  url: 'https://us-south.power-iaas.cloud.ibm.com',
  crn: CRN,
  network: 'dff71085-73da-49f5-9bf2-5ea60c66c99b',
  system: 'e980',
};

describe('ibmz config', () => {
  it('applies defaults: url from the region, public address, 100 GB disk', () => {
    expect(parse(parseIbmzConfig, ibmz)).toEqual({
      problems: {},
      config: {
        region: 'us-east-2',
        key: 'my-key',
        subnet: 'us-east-2-default-subnet',
        vpc: 'us-east-default-vpc',
        imageId: ibmz['image-id'],
        secret: 'ibm-api-key',
        url: 'https://us-east.iaas.cloud.ibm.com/v1',
        profile: 'bz2-1x4',
        privateIp: false,
        disk: 100,
      },
    });
  });

  it('reads url, private-ip and disk', () => {
    const { config } = parse(parseIbmzConfig, {
      ...ibmz,
      url: 'https://us-east.iaas.cloud.ibm.com/',
      'private-ip': 'TRUE',
      disk: '250',
    });
    expect(config).toMatchObject({
      url: 'https://us-east.iaas.cloud.ibm.com/v1',
      privateIp: true,
      disk: 250,
    });
  });

  it.each([
    [{ region: 'us-east' }, 'region', /not valid; expected a VPC zone such as us-east-2/],
    [{ disk: '99' }, 'disk', /from 100 to 250/],
    [{ disk: '251' }, 'disk', /from 100 to 250/],
    [{ disk: 'big' }, 'disk', /not a number/],
    [{ 'private-ip': 'yes' }, 'private-ip', /not true or false/],
    [{ url: 'ftp://x' }, 'url', /not an http\(s\) URL/],
    [{ secret: 'Bad_Name' }, 'secret', /Kubernetes object name/],
    [{ profile: 'BZ2 1x4' }, 'profile', /profile name/],
  ])('rejects %j', (override, key, reason) => {
    const { config, problems } = parse(parseIbmzConfig, { ...ibmz, ...override });
    expect(config).toBeUndefined();
    expect(Object.keys(problems)).toEqual([key]);
    expect(problems[key]).toMatch(reason);
  });

  it('names every missing key, and the image key of the multi-platform-controller docs that the original never read', () => {
    const { problems } = parse(parseIbmzConfig, { image: 'sdouglas-rhel-snapshot' });
    expect(Object.keys(problems).sort()).toEqual(
      ['image-id', 'key', 'profile', 'region', 'secret', 'subnet', 'vpc'].sort(),
    );
    expect(problems['image-id']).toMatch(/reads image-id, not image/);
  });
});

describe('ibmp config', () => {
  it('parses the CRN and applies the Power VS minimums as defaults', () => {
    expect(parse(parseIbmpConfig, ibmp)).toEqual({
      problems: {},
      config: {
        ...ibmp,
        network: undefined,
        zone: 'dal10',
        cloudInstanceId: '8c9ef568-16a5-4aa2-bfd5-946349c9aeac',
        networks: ['dff71085-73da-49f5-9bf2-5ea60c66c99b'],
        cores: 0.25,
        memory: 2,
        disk: 100,
      },
    });
  });

  it('reads the network list, sizes and user data', () => {
    const { config } = parse(parseIbmpConfig, {
      ...ibmp,
      network: ' net-a , net-b,',
      cores: '1.5',
      memory: '8',
      disk: '120',
      'user-data': '#cloud-config\nruncmd: []\n',
    });
    expect(config).toMatchObject({
      networks: ['net-a', 'net-b'],
      cores: 1.5,
      memory: 8,
      disk: 120,
      userData: '#cloud-config\nruncmd: []\n',
    });
  });

  it.each([
    [{ cores: '0.1' }, 'cores', /at least 0.25/],
    [{ cores: '0' }, 'cores', /at least 0.25/],
    [{ cores: '-1' }, 'cores', /not a number/],
    [{ memory: '1' }, 'memory', /at least 2/],
    [{ disk: '50' }, 'disk', /at least 100/],
    [{ network: ',' }, 'network', /required/],
    [{ network: 'ok,bad id' }, 'network', /"bad id" is not a network ID/],
    [{ system: 'E 980' }, 'system', /system type/],
    [
      { crn: 'crn:v1:bluemix:public:power-iaas:dal10' },
      'crn',
      /has 6 colon-separated segments, expected 10/,
    ],
  ])('rejects %j', (override, key, reason) => {
    const { config, problems } = parse(parseIbmpConfig, { ...ibmp, ...override });
    expect(config).toBeUndefined();
    expect(Object.keys(problems)).toEqual([key]);
    expect(problems[key]).toMatch(reason);
  });

  it('requires key, image, secret, url, crn and network; system and user-data are optional', () => {
    const { problems } = parse(parseIbmpConfig, {});
    expect(Object.keys(problems).sort()).toEqual([
      'crn',
      'image',
      'key',
      'network',
      'secret',
      'url',
    ]);
  });
});

describe('Power VS CRN', () => {
  it('yields the zone and the workspace (cloud instance) ID', () => {
    expect(parsePowerCrn(CRN)).toEqual({
      zone: 'dal10',
      cloudInstanceId: '8c9ef568-16a5-4aa2-bfd5-946349c9aeac',
    });
  });

  it.each([
    [CRN.replace('power-iaas', 'is'), /names service "is", expected power-iaas/],
    [CRN.replace('crn:v1', 'crn:v2'), /must start with "crn:v1:"/],
    [CRN.replace('dal10', 'global'), /not the workspace zone/],
    [CRN.replace('a/934e', 'b/934e'), /scope .* is not a\/<account id>/],
    [CRN.replace('8c9ef568-16a5-4aa2-bfd5-946349c9aeac', ''), /no workspace ID/],
    [
      CRN.replace('8c9ef568-16a5-4aa2-bfd5-946349c9aeac', '../x'),
      /workspace ID "..\/x" is not valid/,
    ],
    [`${CRN.slice(0, -2)}:volume:v1`, /names a resource inside the workspace/],
    [`${CRN}:`, /has 11 colon-separated segments/],
  ])('rejects %s', (crn, reason) => {
    const parsed = parsePowerCrn(crn);
    expect(typeof parsed).toBe('string');
    expect(parsed).toMatch(reason);
  });
});
