// One GET over https against a component of the local stack, which serves with a certificate of
// the stack's own CA (Node's fetch cannot take a private CA without undici's dispatcher).
import { readFileSync } from 'node:fs';
import { request } from 'node:https';

/** True when `url` answers 200; false on any other status or error. Never throws. */
export function httpsOk(url: string, { caFile, token }: { caFile: string; token?: string }) {
  return new Promise<boolean>((resolve) => {
    const req = request(
      url,
      {
        headers: token ? { Authorization: `Bearer ${token}` } : {},
        ca: readFileSync(caFile),
        timeout: 2000,
      },
      (res) => {
        res.resume();
        resolve(res.statusCode === 200);
      },
    );
    req.on('error', () => resolve(false));
    req.on('timeout', () => req.destroy());
    req.end();
  });
}
