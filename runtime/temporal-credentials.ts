// The worker's and the bridge's Temporal credentials, taken up when their files change, as the
// OTP service takes up its certificate. A rotated API key (TEMPORAL_API_KEY_FILE) is set on the
// live connections. The SDK cannot change a live connection's TLS, so new client certificate
// files (a pair that matches), or a new server CA, make the process drain and exit: its
// Deployment, or `hostflow start`, starts it again, and it connects with them.
import { createSecureContext } from 'node:tls';
import { apiKeyOf, type Settings } from './settings.js';
import { watchFiles, type WatchedFiles } from './watched-files.js';

export interface CredentialHandlers {
  /** Sets a new API key on every connection the process holds. */
  apiKey(key: string): Promise<void>;
  /** New TLS files: drain and exit, to be started again with them. */
  restart(reason: string): void;
  warn(message: string): void;
}

export function watchTemporalCredentials(settings: Settings, on: CredentialHandlers): WatchedFiles {
  const intervalMs = settings.HOSTFLOW_TEMPORAL_RELOAD_SECONDS * 1000;
  const watched: WatchedFiles[] = [];
  const keyFile = settings.TEMPORAL_API_KEY_FILE;
  if (keyFile) {
    let current: string | undefined;
    watched.push(
      watchFiles(
        [keyFile],
        intervalMs,
        ([contents]) => {
          const key = apiKeyOf(contents!, keyFile);
          // The first read is the key the connections were made with.
          if (current !== undefined && key !== current) {
            on.apiKey(key).catch((err: unknown) =>
              on.warn(`the new Temporal API key could not be set: ${(err as Error).message}`),
            );
          }
          current = key;
        },
        (err) => on.warn(`Temporal API key not reloaded, keeping the previous one: ${err.message}`),
      ),
    );
  }
  const cert = settings.TEMPORAL_TLS_CLIENT_CERT_PATH;
  const key = settings.TEMPORAL_TLS_CLIENT_KEY_PATH;
  const ca = settings.TEMPORAL_TLS_SERVER_CA_CERT_PATH;
  const tlsFiles = [cert, key, ca].filter((path): path is string => Boolean(path));
  if (tlsFiles.length > 0) {
    let first = true;
    watched.push(
      watchFiles(
        tlsFiles,
        intervalMs,
        (contents) => {
          if (cert && key) {
            // Throws while the pair does not match (one file replaced before the other): the
            // change is then looked at again at the next poll, and nothing restarts.
            createSecureContext({ cert: contents[0], key: contents[1] });
          }
          if (first) return void (first = false);
          on.restart(`Temporal TLS files changed (${tlsFiles.join(', ')})`);
        },
        (err) => on.warn(`Temporal TLS files changed but are not usable yet: ${err.message}`),
      ),
    );
  }
  return { stop: () => watched.forEach((w) => w.stop()) };
}
