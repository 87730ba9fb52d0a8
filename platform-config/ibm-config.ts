// IBM provider keys of `dynamic.<cfg>.*` (docs/architecture.md, "host-config"): `ibmz` (System Z on IBM VPC) and
// `ibmp` (Power Virtual Server). `read` and `problem` take the short key (`region`); the caller
// prefixes `dynamic.<cfg>.` in messages. Where the original silently fell back (a bad `disk`
// became 100, an unparsable `cores` 0.25), hostflow rejects the value and names the key.
import type { CloudProviderSpec } from './cloud-provider-spec.js';
import { printable } from './platform.js';

type Read = (key: string) => string | undefined;
type Problem = (key: string, reason: string) => void;

export interface IbmzConfig {
  /** A VPC zone such as us-east-2 (the original's key is `region` but it names a zone). */
  region: string;
  /** Name (or ID) of the VPC SSH key installed for the admin user. */
  key: string;
  /** Name (or ID) of the subnet, and of the VPC it belongs to. */
  subnet: string;
  vpc: string;
  imageId: string;
  /** Secret in the engine namespace holding the IBM Cloud API key (key `api-key`). */
  secret: string;
  /** VPC API base URL, ending in /v1 (default from the region). */
  url: string;
  /** Instance profile, e.g. bz2-1x4. */
  profile: string;
  /** SSH to the private address instead of attaching a floating IP. */
  privateIp: boolean;
  /** Boot volume capacity in GB. */
  disk: number;
}

export interface IbmpConfig {
  /** Name of the workspace SSH key (keyPairName). */
  key: string;
  /** Boot image ID. */
  image: string;
  secret: string;
  /** Power VS API base URL, e.g. https://us-south.power-iaas.cloud.ibm.com. */
  url: string;
  /** Workspace CRN; `zone` and `cloudInstanceId` are parsed from it. */
  crn: string;
  zone: string;
  cloudInstanceId: string;
  /** Network IDs, in order; the first carries the SSH address. */
  networks: string[];
  /** System type (sysType), e.g. e980; the API picks its default when unset. */
  system?: string;
  cores: number;
  /** GB. */
  memory: number;
  /** Boot volume size in GB. */
  disk: number;
  /** Cloud-init user data, raw (base64-encoded at launch). */
  userData?: string;
}

const K8S_NAME = /^(?=.{1,253}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const RESOURCE = /^[A-Za-z0-9][-A-Za-z0-9_.]{0,127}$/;
const RESOURCE_TEXT = 'letters, digits, "-", "_" and ".", at most 128 characters';
const ZONE = /^[a-z]+(-[a-z]+)+-\d+$/;
const BOOLEANS: Record<string, boolean> = {
  true: true,
  t: true,
  '1': true,
  false: false,
  f: false,
  '0': false,
};
const DECIMAL = /^\d+(\.\d+)?$/;
// Boot volumes are 100 GB by default and at most 250 GB (IBM Cloud docs, "Block Storage
// capacity and performance": "you can specify a boot volume capacity up to 250 GB").
const VPC_BOOT_GB = { min: 100, max: 250 };

function reader(read: Read, problem: Problem) {
  let ok = true;
  const report = (key: string, reason: string): undefined => {
    ok = false;
    problem(key, reason);
    return undefined;
  };
  const value = (key: string): string | undefined => {
    const raw = read(key)?.trim();
    return raw ? raw : undefined;
  };
  const text = (key: string, what: string, pattern: RegExp, expected: string, optional = false) => {
    const raw = value(key);
    if (raw === undefined) return optional ? undefined : report(key, `required, ${what}`);
    if (!pattern.test(raw))
      return report(key, `"${printable(raw)}" is not valid; expected ${expected}`);
    return raw;
  };
  const number = (key: string, fallback: number, min: number, max: number, unit: string) => {
    const raw = value(key);
    if (raw === undefined) return fallback;
    const parsed = DECIMAL.test(raw) ? Number(raw) : NaN;
    if (!(parsed >= min && parsed <= max)) {
      const range = max === Infinity ? `at least ${min}` : `from ${min} to ${max}`;
      return report(key, `"${printable(raw)}" is not a number ${range} (${unit})`);
    }
    return parsed;
  };
  const url = (key: string, fallback?: string) => {
    const raw = value(key) ?? fallback;
    if (raw === undefined) return report(key, 'required, the API endpoint URL');
    try {
      const parsed = new URL(raw);
      if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:') throw new Error('protocol');
      if (parsed.search || parsed.hash || parsed.username) throw new Error('extras');
      return parsed.href.replace(/\/+$/, '');
    } catch {
      return report(key, `"${printable(raw)}" is not an http(s) URL without query or credentials`);
    }
  };
  /** An IBM Cloud resource's name or ID: `what` it is when missing, `noun` when malformed. */
  const resource = (key: string, what: string, noun: string) =>
    text(key, what, RESOURCE, `${noun} (${RESOURCE_TEXT})`);
  const secret = () =>
    text(
      'secret',
      'the Secret in the engine namespace holding the IBM Cloud API key (key api-key)',
      K8S_NAME,
      'a Kubernetes object name (lowercase letters, digits, "-" and ".")',
    );
  return { ok: () => ok, report, value, text, number, url, resource, secret };
}

export function parseIbmzConfig(read: Read, problem: Problem): IbmzConfig | undefined {
  const r = reader(read, problem);
  const region = r.text(
    'region',
    'the VPC zone (for example us-east-2)',
    ZONE,
    'a VPC zone such as us-east-2',
  );
  const imageId =
    r.value('image-id') === undefined && r.value('image') !== undefined
      ? r.report('image-id', 'required, the boot image ID (the original reads image-id, not image)')
      : r.resource('image-id', 'the boot image ID', 'an image ID');
  // The VPC API lives at https://<region>.iaas.cloud.ibm.com/v1 (IBM Cloud API docs, "API endpoint").
  const defaultUrl = region && `https://${region.replace(/-\d+$/, '')}.iaas.cloud.ibm.com/v1`;
  // Without a valid region there is no default URL; the region's problem already says why.
  let url = r.value('url') !== undefined || defaultUrl ? r.url('url', defaultUrl) : undefined;
  if (url && new URL(url).pathname === '/') url = `${url}/v1`;
  const privateIpText = r.value('private-ip');
  const privateIp = privateIpText === undefined ? false : BOOLEANS[privateIpText.toLowerCase()];
  if (privateIp === undefined)
    r.report('private-ip', `"${printable(privateIpText ?? '')}" is not true or false`);
  const disk = r.number('disk', 100, VPC_BOOT_GB.min, VPC_BOOT_GB.max, 'GB of boot volume');
  const config = {
    region,
    key: r.resource('key', 'the name of the VPC SSH key', 'an SSH key name'),
    subnet: r.resource('subnet', 'the subnet name', 'a subnet name'),
    vpc: r.resource('vpc', 'the VPC name', 'a VPC name'),
    imageId,
    secret: r.secret(),
    url,
    profile: r.text(
      'profile',
      'the instance profile (for example bz2-1x4)',
      /^[a-z0-9][-a-z0-9]{0,62}$/,
      'a profile name such as bz2-1x4',
    ),
    privateIp,
    disk,
  };
  return r.ok() ? (config as IbmzConfig) : undefined;
}

/** `crn:v1:<cname>:<ctype>:power-iaas:<zone>:a/<account>:<workspace id>::` (IBM Cloud docs, "CRN"). */
export function parsePowerCrn(crn: string): { zone: string; cloudInstanceId: string } | string {
  const segments = crn.split(':');
  const shape = 'crn:v1:bluemix:public:power-iaas:<zone>:a/<account>:<workspace id>::';
  if (segments.length !== 10) {
    return `has ${segments.length} colon-separated segments, expected 10 (${shape})`;
  }
  const [crnTag, version, , , service, zone, scope, instance, resourceType, resource] = segments;
  if (crnTag !== 'crn' || version !== 'v1') return `must start with "crn:v1:" (${shape})`;
  if (service !== 'power-iaas') {
    return `names service "${printable(service)}", expected power-iaas (the CRN of a Power Virtual Server workspace)`;
  }
  if (!/^[a-z]+[a-z0-9-]*$/.test(zone) || zone === 'global') {
    return `location "${printable(zone)}" is not the workspace zone (for example dal10)`;
  }
  if (!/^a\/[A-Za-z0-9]+$/.test(scope)) return `scope "${printable(scope)}" is not a/<account id>`;
  if (!instance) return 'has no workspace ID (the 8th segment is empty)';
  if (!/^[A-Za-z0-9-]{1,64}$/.test(instance)) {
    return `workspace ID "${printable(instance)}" is not valid; expected letters, digits and "-"`;
  }
  if (resourceType || resource)
    return `names a resource inside the workspace; use the workspace CRN (${shape})`;
  return { zone, cloudInstanceId: instance };
}

export function parseIbmpConfig(read: Read, problem: Problem): IbmpConfig | undefined {
  const r = reader(read, problem);
  const crn = r.value('crn');
  const parsedCrn =
    crn === undefined
      ? 'required, the CRN of the Power Virtual Server workspace'
      : parsePowerCrn(crn);
  if (typeof parsedCrn === 'string')
    r.report('crn', crn === undefined ? parsedCrn : `"${printable(crn)}" ${parsedCrn}`);
  const networkText = r.value('network');
  const networks = (networkText ?? '')
    .split(',')
    .map((item) => item.trim())
    .filter(Boolean);
  if (networks.length === 0) r.report('network', 'required, a comma list of Power VS network IDs');
  for (const network of networks.filter((item) => !/^[A-Za-z0-9][-A-Za-z0-9_]{0,63}$/.test(item))) {
    r.report(
      'network',
      `"${printable(network)}" is not a network ID (letters, digits, "-" and "_")`,
    );
  }
  const userData = read('user-data');
  const config = {
    key: r.resource('key', 'the name of the workspace SSH key', 'an SSH key name'),
    image: r.resource('image', 'the boot image ID', 'an image ID'),
    secret: r.secret(),
    url: r.url('url'),
    crn,
    ...(typeof parsedCrn === 'object' ? parsedCrn : {}),
    networks,
    system: r.text(
      'system',
      '',
      /^[a-z0-9][-a-z0-9]{0,31}$/,
      'a system type such as e980 or s922',
      true,
    ),
    // Power VS: shared processors start at 0.25 cores; memory at 2 GB. The original raised a
    // disk under 100 GB to 100 silently ("potentially unwanted to downsize the bootable volume").
    cores: r.number(
      'cores',
      0.25,
      0.25,
      Infinity,
      'processor cores; Power VS allows at least 0.25',
    ),
    memory: r.number('memory', 2, 2, Infinity, 'GB of memory; Power VS allows at least 2'),
    disk: r.number('disk', 100, 100, Infinity, 'GB of boot volume; at least 100'),
    ...(userData?.trim() ? { userData } : {}),
  };
  return r.ok() ? (config as IbmpConfig) : undefined;
}

/** The admin user of the IBM images the original launched. */
const IBM_ADMIN_USER = 'root';

/** `type: ibmz` (platform-config/cloud-providers.ts); the adapter is activities/cloud/ibmz.ts. */
export const IBMZ_PROVIDER: CloudProviderSpec<IbmzConfig> = {
  cloudName: 'IBM Cloud VPC',
  parse: parseIbmzConfig,
  adminUser: IBM_ADMIN_USER,
  credentialsSecret: (config) => config.secret,
  userData: () => undefined,
  providerIdPrefix: 'ibm:///',
};

/** `type: ibmp` (platform-config/cloud-providers.ts); the adapter is activities/cloud/ibmp.ts. */
export const IBMP_PROVIDER: CloudProviderSpec<IbmpConfig> = {
  cloudName: 'IBM Power VS',
  parse: parseIbmpConfig,
  adminUser: IBM_ADMIN_USER,
  credentialsSecret: (config) => config.secret,
  userData: (config) => config.userData,
  providerIdPrefix: 'ibmpowervs://',
};
