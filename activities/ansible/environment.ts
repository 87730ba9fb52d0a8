// The environment ansible-playbook runs with: what ansible, Python and SSH need, and none of the
// worker's credentials. ansible runs against hosts that tenants control, and a controller-side
// module, lookup or plugin runs with this environment: KUBECONFIG, TEMPORAL_API_KEY, cloud keys
// and the OTP store token's path stay with the worker. (The files stay readable: ansible runs as
// the worker's uid, which can read the pod's service-account token and the OTP store token.)

/** Passed as they are. */
const NAMES = new Set([
  'PATH',
  'HOME',
  'USER',
  'LOGNAME',
  'LANG',
  'TZ',
  'TMPDIR',
  'VIRTUAL_ENV',
  'PYTHONPATH',
  // TLS trust and proxies, for controller-side downloads.
  'SSL_CERT_FILE',
  'SSL_CERT_DIR',
  'REQUESTS_CA_BUNDLE',
  'HTTP_PROXY',
  'HTTPS_PROXY',
  'NO_PROXY',
  'http_proxy',
  'https_proxy',
  'no_proxy',
  // The kubespray stand-in's failure switch (local-stack/kubespray-stand-in).
  'HOSTFLOW_STAND_IN_FAIL',
]);

/** Locale (ansible insists on UTF-8) and ansible's own settings, which operators may tune. */
const PREFIXES = ['LC_', 'ANSIBLE_'];

/** The part of `env` that ansible-playbook gets. */
export function ansibleEnvironment(env: NodeJS.ProcessEnv): Record<string, string> {
  const kept: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined) continue;
    if (NAMES.has(name) || PREFIXES.some((prefix) => name.startsWith(prefix))) kept[name] = value;
  }
  return kept;
}
