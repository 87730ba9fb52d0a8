// `hostflow start`'s options and usage, apart from the start itself: the other commands (and the
// image, which ships no local stack) print the usage without loading the local stack's modules.
import { DEFAULT_ENGINE_NAMESPACE, DEFAULT_OTP_NAMESPACE } from '../platform-config/contract.js';

export interface StartOptions {
  kubeconfig?: string;
  context?: string;
  temporalAddress?: string;
  temporalNamespace?: string;
  temporalApiKey?: string;
  temporalTls?: boolean;
  temporalTlsCert?: string;
  temporalTlsKey?: string;
  temporalTlsCa?: string;
  /** A production-shaped local Temporal (server on PostgreSQL, four services), not the dev server. */
  temporalServer?: boolean;
  stateDir?: string;
}

export const START_USAGE = `
start options (each defaults to a local component started and stopped by hostflow):
  --kubeconfig PATH            use this cluster instead of a local kube-apiserver
  --context NAME               kubeconfig context (default: its current context)
  --temporal-address HOST:PORT use this Temporal instead of a local dev server
  --temporal-namespace NS      Temporal namespace (default: default)
  --temporal-api-key KEY       API key (Temporal Cloud); or TEMPORAL_API_KEY
  --temporal-tls               use TLS (implied by an API key or client cert)
  --temporal-tls-cert PATH     mTLS client certificate (with --temporal-tls-key)
  --temporal-tls-key PATH      mTLS client key
  --temporal-tls-ca PATH       CA of the Temporal server certificate
  --temporal-server            run a production-shaped local Temporal instead of the dev server:
                               the Temporal server on PostgreSQL, frontend, history, matching and
                               worker as separate processes (the first start builds it: 5-15 min)
  --state-dir DIR              where local state persists (default: .hostflow/)

environment: TEMPORAL_* and KUBECONFIG as for the temporal CLI and kubectl;
HOSTFLOW_NAMESPACE is the engine namespace holding host-config (default ${DEFAULT_ENGINE_NAMESPACE});
HOSTFLOW_OTP_NAMESPACE holds the OTP service's records (default ${DEFAULT_OTP_NAMESPACE}).`;
