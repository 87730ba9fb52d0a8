// The OTP service through its own entry point (`node dist/otp-server/main.js`) against the real
// kube-apiserver, redeemed with the build task's own curl command: exactly once, expiring,
// durable across restarts and replicas, authenticated, sealed at rest, and quiet about secrets.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { FlowcontrolApiserverV1Api, KubeConfig, type V1Secret } from '@kubernetes/client-node';
import { createHash, randomBytes, X509Certificate } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { connect } from 'node:tls';
import { freePort } from '../local-stack/ports.js';
import { spawnManaged, waitFor } from '../local-stack/process.js';
import { OtpClient, OtpClientError } from '../activities/otp-client.js';
import { loadOtpSettings } from '../otp-server/main.js';
import { createSealer, readSealingKey } from '../otp-server/sealing.js';
import { EXPIRES_ANNOTATION, recordName, TOKEN_PATTERN } from '../otp-server/store.js';
import { REPO_ROOT } from '../local-stack/paths.js';
import { testEnv, uniqueSuffix } from './support/env.js';
import { tenantIdentity } from './support/service-account.js';
import {
  createOtpFixture,
  httpsRequest,
  newPrivateKey,
  redeemWithCurl,
  type OtpFixture,
  type OtpProcess,
} from './support/otp.js';

/**
 * Sweeping is left to the expiry test's own replica, so records stay put elsewhere. The rate
 * limit is raised: these tests redeem from one address far faster than a build would.
 */
const QUIET_SWEEP = {
  HOSTFLOW_OTP_SWEEP_SECONDS: '3600',
  HOSTFLOW_OTP_RELOAD_SECONDS: '1',
  HOSTFLOW_OTP_REDEEM_BURST: '10000',
};

let fx: OtpFixture;
let a: OtpProcess;
/** Every key and OTP the tests handled, for the log scan at the end. */
const secretMaterial: string[] = [];

beforeAll(async () => {
  fx = await createOtpFixture();
  a = await fx.start('a', QUIET_SWEEP);
});

afterAll(async () => {
  await fx?.dispose();
});

const auth = () => ({ Authorization: `Bearer ${fx.storeToken}` });

async function store(server: OtpProcess, key = newPrivateKey()) {
  secretMaterial.push(key);
  const reply = await httpsRequest(`${server.url}/store`, {
    ca: fx.caPem,
    headers: auth(),
    body: key,
  });
  expect(reply.status).toBe(201);
  const otp = reply.body.toString('utf8');
  secretMaterial.push(otp);
  expect(otp).toMatch(TOKEN_PATTERN);
  return { key, otp };
}

/** As curl -d sends it: a form content type and the raw token. */
const redeem = (server: OtpProcess, otp: string) =>
  httpsRequest(server.redeemUrl, {
    ca: fx.caPem,
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    body: otp,
  });

/** A build pod's view: the Secret's otp, otp-ca and otp-server keys as files. */
function buildDir(redeemUrl: string, otp: string): string {
  const dir = mkdtempSync(join(fx.dir, 'build-'));
  writeFileSync(join(dir, 'otp'), otp);
  writeFileSync(join(dir, 'otp-ca'), fx.caPem);
  writeFileSync(join(dir, 'otp-server'), redeemUrl);
  return dir;
}

const recordOf = async (otp: string): Promise<V1Secret | undefined> =>
  (await fx.records()).find((s) => s.metadata?.name === recordName(otp));

/** The lines of a key that carry key material (not the BEGIN/END markers). */
const keyLines = (key: string) => key.split('\n').filter((l) => l && !l.startsWith('-----'));

function statuses(replies: { status: number }[]): Record<number, number> {
  const counts: Record<number, number> = {};
  for (const r of replies) counts[r.status] = (counts[r.status] ?? 0) + 1;
  return counts;
}

describe('redeeming', () => {
  it("serves the key once to the build task's own curl command", async () => {
    const { key, otp } = await store(a);
    const dir = buildDir(a.redeemUrl, otp);

    const first = await redeemWithCurl(dir);
    expect(first.exitCode).toBe(0);
    expect(readFileSync(join(dir, 'id_rsa')).equals(Buffer.from(key))).toBe(true);

    const second = await redeemWithCurl(dir);
    expect(second.exitCode).toBe(22); // curl --fail on an HTTP error
    expect(second.stderr).toContain('404');
  });

  it('gives the key to exactly one of 100 concurrent redemptions', async () => {
    const { key, otp } = await store(a);
    const t0 = performance.now();
    const replies = await Promise.all(Array.from({ length: 100 }, () => redeem(a, otp)));
    const ms = performance.now() - t0;
    expect(statuses(replies)).toEqual({ 200: 1, 404: 99 });
    expect(replies.find((r) => r.status === 200)!.body.toString('utf8')).toBe(key);
    expect(await recordOf(otp)).toBeUndefined();
    console.log(`100 concurrent redemptions of one OTP: ${ms.toFixed(0)} ms`);
  });

  it('refuses an expired OTP before the sweeper runs, and the sweeper then deletes it', async () => {
    const shortLived = await fx.start('short-ttl', {
      ...QUIET_SWEEP,
      HOSTFLOW_OTP_TTL_SECONDS: '2',
    });
    const fresh = await store(shortLived);
    expect((await redeem(shortLived, fresh.otp)).status).toBe(200); // redeemable until it expires
    const expiring = await store(shortLived);
    const lasting = await store(a);
    const expiresAt = Date.parse(
      (await recordOf(expiring.otp))!.metadata!.annotations![EXPIRES_ANNOTATION]!,
    );
    expect(expiresAt - Date.now()).toBeLessThanOrEqual(2000);

    await waitFor('the OTP to expire', () => (Date.now() > expiresAt ? true : undefined));
    expect((await redeem(shortLived, expiring.otp)).status).toBe(404);
    expect((await redeem(a, expiring.otp)).status).toBe(404);
    // Refused by the expiry check: the record is still there.
    expect(await recordOf(expiring.otp)).toBeDefined();
    await shortLived.stop();

    const sweeper = await fx.start('sweeper', { HOSTFLOW_OTP_SWEEP_SECONDS: '1' });
    await waitFor(
      'the sweeper to delete the expired record',
      async () => ((await recordOf(expiring.otp)) ? undefined : true),
      { process: sweeper },
    );
    await waitFor('the sweep to be logged', () =>
      /swept 1 expired/.test(sweeper.tail()) ? true : undefined,
    );
    await sweeper.stop();
    // Unexpired records are left alone.
    expect(await recordOf(lasting.otp)).toBeDefined();
    expect((await redeem(a, lasting.otp)).body.toString('utf8')).toBe(lasting.key);
  });

  it('keeps issued OTPs across a restart of the service', async () => {
    const before = await store(a);
    const port = a.port;
    await a.stop();
    expect(await a.exited).toBe(0); // SIGTERM: a clean drain
    a = await fx.start('a-restarted', QUIET_SWEEP, port);

    const dir = buildDir(a.redeemUrl, before.otp);
    expect((await redeemWithCurl(dir)).exitCode).toBe(0);
    expect(readFileSync(join(dir, 'id_rsa'), 'utf8')).toBe(before.key);
  });

  it('lets two replicas serve one store, still exactly once across both', async () => {
    const b = await fx.start('b', QUIET_SWEEP);
    const viaA = await store(a);
    const fromB = await redeem(b, viaA.otp);
    expect(fromB.status).toBe(200);
    expect(fromB.body.toString('utf8')).toBe(viaA.key);
    expect((await redeem(a, viaA.otp)).status).toBe(404);

    const raced = await store(b);
    const replies = await Promise.all(
      Array.from({ length: 100 }, (_, i) => redeem(i % 2 ? a : b, raced.otp)),
    );
    expect(statuses(replies)).toEqual({ 200: 1, 404: 99 });
    expect(replies.find((r) => r.status === 200)!.body.toString('utf8')).toBe(raced.key);
    await b.stop();
  });
});

describe('a client hammering /otp', () => {
  /**
   * The API server's own count of the requests one flow schema (matching only this replica's
   * ServiceAccount) let through: every read the replica makes, and nothing else.
   */
  async function apiRequestsOf(flowSchema: string): Promise<number> {
    const kc = fx.kube.kc;
    const reply = await httpsRequest(`${kc.getCurrentCluster()!.server}/metrics`, {
      method: 'GET',
      ca: readFileSync(kc.getCurrentCluster()!.caFile!, 'utf8'),
      headers: { Authorization: `Bearer ${kc.getCurrentUser()!.token}` },
    });
    expect(reply.status).toBe(200);
    let total = 0;
    for (const line of reply.body.toString('utf8').split('\n'))
      if (line.startsWith('apiserver_flowcontrol_dispatched_requests_total{'))
        if (line.includes(`flow_schema="${flowSchema}"`)) total += Number(line.split(' ').pop());
    return total;
  }

  it('gets 429 with Retry-After once past its burst, counted, at no API-server read', async () => {
    const identity = await tenantIdentity(fx.kube.kc, fx.namespace, [
      { apiGroups: [''], resources: ['secrets'], verbs: ['get', 'list', 'create', 'delete'] },
    ]);
    const kubeconfig = join(fx.dir, 'limited.kubeconfig');
    writeFileSync(kubeconfig, identity.exportConfig(), { mode: 0o600 });
    const account = identity.getCurrentUser()!.name;
    const flowSchema = `otp-limited-${uniqueSuffix()}`;
    const flowcontrol = fx.kube.kc.makeApiClient(FlowcontrolApiserverV1Api);
    await flowcontrol.createFlowSchema({
      body: {
        metadata: { name: flowSchema },
        spec: {
          matchingPrecedence: 100,
          priorityLevelConfiguration: { name: 'catch-all' },
          rules: [
            {
              subjects: [
                {
                  kind: 'ServiceAccount',
                  serviceAccount: { name: account, namespace: fx.namespace },
                },
              ],
              resourceRules: [
                { verbs: ['*'], apiGroups: ['*'], resources: ['*'], namespaces: ['*'] },
              ],
            },
          ],
        },
      },
    });
    const metricsPort = await freePort();
    // A burst of 3 and a refill far slower than the test: what is refused does not depend on time.
    const limited = await fx.start('limited', {
      ...QUIET_SWEEP,
      KUBECONFIG: kubeconfig,
      HOSTFLOW_OTP_REDEEM_BURST: '3',
      HOSTFLOW_OTP_REDEEM_PER_SECOND: '0.001',
      HOSTFLOW_METRICS_ADDRESS: `127.0.0.1:${metricsPort}`,
    });
    try {
      // Its start-up reads (readiness, the first sweep) done: one authorized read seen.
      const { key, otp } = await store(limited);
      const before = await waitFor('the replica to be seen by its flow schema', async () => {
        const n = await apiRequestsOf(flowSchema);
        return n > 0 ? n : undefined;
      });
      const guess = randomBytes(32).toString('base64url').slice(0, 43);
      const replies = [];
      for (let i = 0; i < 3; i++) replies.push(await redeem(limited, otp));
      for (let i = 0; i < 30; i++) replies.push(await redeem(limited, guess));
      expect(replies.map((r) => r.status).slice(0, 4)).toEqual([200, 404, 404, 429]);
      expect(statuses(replies)).toEqual({ 200: 1, 404: 2, 429: 30 });
      expect(replies[0]!.body.toString('utf8')).toBe(key);
      const refused = replies.filter((r) => r.status === 429);
      for (const r of refused) expect(Number(r.headers['retry-after'])).toBeGreaterThan(0);
      // The three let through read (and the first deleted) its record; the 30 refused, nothing.
      const after = await apiRequestsOf(flowSchema);
      expect(after - before).toBe(4);
      const metrics = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
      expect(metrics).toMatch(/^hostflow_otp_rate_limited_total(\{[^}]*\})? 30$/m);
      // Other clients are not held up by this one: a fresh address still redeems.
      const other = await store(limited);
      const elsewhere = await httpsRequest(limited.redeemUrl, {
        ca: fx.caPem,
        localAddress: '127.0.0.2',
        body: other.otp,
      });
      expect(elsewhere.status).toBe(200);
    } finally {
      await limited.stop();
      await flowcontrol.deleteFlowSchema({ name: flowSchema });
    }
  });
});

describe('storing', () => {
  it('requires the store token and stores nothing without it', async () => {
    const before = (await fx.records()).length;
    const key = newPrivateKey();
    secretMaterial.push(key);
    const attempts: Record<string, string>[] = [
      {},
      { Authorization: `Bearer ${randomBytes(24).toString('base64url')}` },
      { Authorization: `Bearer ${fx.storeToken}x` },
      { Authorization: `Basic ${Buffer.from(`otp:${fx.storeToken}`).toString('base64')}` },
      { Authorization: fx.storeToken },
    ];
    for (const headers of attempts) {
      const reply = await httpsRequest(`${a.url}/store`, { ca: fx.caPem, headers, body: key });
      expect(reply.status).toBe(401);
      expect(reply.headers['www-authenticate']).toBe('Bearer');
      expect(reply.body.toString('utf8')).not.toContain('PRIVATE');
    }
    expect((await fx.records()).length).toBe(before);
  });

  it('keeps neither the key nor the OTP in plaintext in the Kubernetes Secret', async () => {
    const { key, otp } = await store(a);
    const record = (await recordOf(otp))!;
    expect(record.metadata!.name).toBe(`otp-${createHash('sha256').update(otp).digest('hex')}`);
    expect(record.immutable).toBe(true);
    const asJson = JSON.stringify(record);
    const decoded = Object.values(record.data ?? {}).map((v) => Buffer.from(v, 'base64'));
    expect(decoded.length).toBeGreaterThan(0);
    const needles = [
      key,
      otp,
      ...keyLines(key),
      Buffer.from(key).toString('base64'),
      Buffer.from(otp).toString('base64'),
    ];
    for (const needle of needles) {
      expect(asJson.includes(needle)).toBe(false);
      for (const data of decoded) {
        expect(data.includes(needle)).toBe(false);
        expect(data.toString('latin1').includes(needle)).toBe(false);
      }
    }
    // Sealed with the configured key, bound to this record's name.
    const sealer = createSealer(readSealingKey(fx.sealingKeyFile));
    expect(sealer.open(record.metadata!.name!, decoded[0]!).toString('utf8')).toBe(key);
    expect(() => sealer.open('otp-elsewhere', decoded[0]!)).toThrow(/authentication/);
    expect(() => createSealer(randomBytes(32)).open(record.metadata!.name!, decoded[0]!)).toThrow(
      /sealed with key/,
    );
  });
});

describe('bad requests', () => {
  it('get a clear 4xx and leave the service serving', async () => {
    const before = (await fx.records()).length;
    const post = (path: string, body?: string | Buffer, headers: Record<string, string> = {}) =>
      httpsRequest(`${a.url}${path}`, { ca: fx.caPem, headers, body });
    const expectReply = async (
      reply: Promise<{ status: number; body: Buffer; headers: Record<string, unknown> }>,
      status: number,
      message: RegExp,
    ) => {
      const r = await reply;
      expect({ status: r.status, body: r.body.toString('utf8') }).toEqual({
        status,
        body: expect.stringMatching(message),
      });
      expect(r.headers['content-type']).toMatch(/^text\/plain/);
      return r;
    };

    await expectReply(post('/otp'), 400, /empty body/);
    await expectReply(post('/otp', '  \n'), 400, /empty body/);
    await expectReply(post('/otp', 'x'.repeat(2048)), 413, /too long/);
    await expectReply(post('/otp', 'not a token'), 400, /malformed OTP/);
    await expectReply(
      post('/otp', randomBytes(32).toString('base64url')),
      404,
      /unknown, expired or already used/,
    );
    const getOtp = await expectReply(
      httpsRequest(`${a.url}/otp`, { ca: fx.caPem, method: 'GET' }),
      405,
      /method not allowed/,
    );
    expect(getOtp.headers.allow).toBe('POST');
    const postHealth = await expectReply(post('/healthz'), 405, /method not allowed/);
    expect(postHealth.headers.allow).toBe('GET, HEAD');
    await expectReply(post('/nope'), 404, /not found/);
    await expectReply(post('/otp/extra', 'x'), 404, /not found/);

    await expectReply(post('/store', '', auth()), 400, /empty body/);
    await expectReply(post('/store', 'hello', auth()), 400, /PEM or OpenSSH private key/);
    const bigKey = `-----BEGIN OPENSSH PRIVATE KEY-----\n${'A'.repeat(17 * 1024)}\n-----END OPENSSH PRIVATE KEY-----\n`;
    await expectReply(post('/store', bigKey, auth()), 413, /larger than 16384 bytes/);
    // Announced too large: refused before the body is sent.
    await expectReply(
      httpsRequest(`${a.url}/store`, {
        ca: fx.caPem,
        headers: { ...auth(), 'Content-Length': String(1024 * 1024), Expect: '100-continue' },
        body: Buffer.alloc(1024 * 1024, 'A'),
        expectContinue: true,
      }),
      413,
      /larger than/,
    );
    // A client that keeps sending far past the limit is cut off; either way nothing breaks.
    const flood = await httpsRequest(a.redeemUrl, {
      ca: fx.caPem,
      body: Buffer.alloc(8 * 1024 * 1024, 'A'),
    }).catch((err: NodeJS.ErrnoException) => err.code);
    expect([413, 'ECONNRESET', 'EPIPE']).toContain(
      typeof flood === 'object' ? flood.status : flood,
    );
    // Not HTTP at all.
    const answer = await new Promise<string>((resolve, reject) => {
      let received = '';
      const socket = connect({ host: '127.0.0.1', port: a.port, ca: fx.caPem }, () =>
        socket.write('\x00\x01garbage\r\n\r\n'),
      );
      socket.on('data', (d: Buffer) => (received += d.toString('latin1')));
      socket.on('end', () => resolve(received)).on('error', reject);
    });
    expect(answer).toMatch(/^HTTP\/1.1 400 Bad Request\r\n[\s\S]*\r\n\r\nbad request\n$/);

    expect((await fx.records()).length).toBe(before);
    await expectReply(httpsRequest(`${a.url}/healthz`, { ca: fx.caPem, method: 'GET' }), 200, /ok/);
    await expectReply(
      httpsRequest(`${a.url}/readyz`, { ca: fx.caPem, method: 'GET' }),
      200,
      /ready/,
    );
    const { key, otp } = await store(a);
    expect((await redeem(a, otp)).body.toString('utf8')).toBe(key);
  });

  it('answer 503 while the store is unreachable, and the service stays up', async () => {
    const kc = new KubeConfig();
    kc.loadFromFile(testEnv('kubeconfig'));
    const deadPort = await freePort();
    const broken = new KubeConfig();
    broken.loadFromOptions({
      clusters: kc.clusters.map((c) => ({ ...c, server: `https://127.0.0.1:${deadPort}` })),
      users: kc.users,
      contexts: kc.contexts,
      currentContext: kc.currentContext,
    });
    const kubeconfig = join(fx.dir, 'unreachable.kubeconfig');
    writeFileSync(kubeconfig, broken.exportConfig());
    const cut = await fx.start('no-store', { ...QUIET_SWEEP, KUBECONFIG: kubeconfig });
    const get = (path: string) =>
      httpsRequest(`${cut.url}${path}`, { ca: fx.caPem, method: 'GET' });
    expect((await get('/healthz')).status).toBe(200);
    expect((await get('/readyz')).status).toBe(503);
    const key = newPrivateKey();
    secretMaterial.push(key);
    const stored = await httpsRequest(`${cut.url}/store`, {
      ca: fx.caPem,
      headers: auth(),
      body: key,
    });
    expect({ status: stored.status, body: stored.body.toString() }).toEqual({
      status: 503,
      body: 'OTP store unavailable, retry\n',
    });
    expect((await redeem(cut, randomBytes(32).toString('base64url'))).status).toBe(503);
    expect((await get('/healthz')).status).toBe(200);
    await cut.stop();
  });
});

describe('TLS', () => {
  it('serves a rotated certificate within seconds, without a restart', async () => {
    const servedSerial = () =>
      new Promise<string>((resolve, reject) => {
        const socket = connect({ host: '127.0.0.1', port: a.port, ca: fx.caPem }, () => {
          resolve(socket.getPeerCertificate().serialNumber.toUpperCase());
          socket.end();
        });
        socket.on('error', reject);
      });
    const before = await servedSerial();
    const pid = a.pid;

    await fx.rotateCertificate({
      between: async () => {
        // New certificate, old key: a mismatched pair is not applied; the old one keeps serving.
        await waitFor(
          'the half-rotated pair to be refused',
          () => (a.tail(20).includes('not reloaded') ? true : undefined),
          { process: a },
        );
        expect(await servedSerial()).toBe(before);
      },
    });
    const next = new X509Certificate(readFileSync(fx.certFile)).serialNumber.toUpperCase();
    expect(next).not.toBe(before);
    const t0 = Date.now();
    await waitFor(
      'the rotated certificate to be served',
      async () => ((await servedSerial()) === next ? true : undefined),
      { timeoutMs: 10_000, process: a },
    );
    console.log(`rotated certificate served after ${Date.now() - t0} ms`);
    expect(a.pid).toBe(pid);

    const { key, otp } = await store(a);
    const dir = buildDir(a.redeemUrl, otp);
    expect((await redeemWithCurl(dir)).exitCode).toBe(0);
    expect(readFileSync(join(dir, 'id_rsa'), 'utf8')).toBe(key);
  });
});

describe('OtpClient', () => {
  it('stores a key whose OTP the build redeems with curl', async () => {
    const client = OtpClient.fromFiles({
      url: a.url,
      caFile: fx.ca.cert,
      storeTokenFile: fx.storeTokenFile,
    });
    try {
      expect(client.redeemUrl).toBe(a.redeemUrl);
      const key = newPrivateKey();
      const otp = await client.storeKey(key);
      secretMaterial.push(key, otp);
      expect(otp).toMatch(TOKEN_PATTERN);
      const dir = buildDir(client.redeemUrl, `${otp}\n`); // a trailing newline is stripped by curl
      expect((await redeemWithCurl(dir)).exitCode).toBe(0);
      expect(readFileSync(join(dir, 'id_rsa'), 'utf8')).toBe(key);
    } finally {
      client.close();
    }
  });

  it('fails with a clear error that carries no key', async () => {
    const key = newPrivateKey();
    secretMaterial.push(key);
    const failure = async (client: OtpClient, privateKey = key) => {
      try {
        await client.storeKey(privateKey);
      } catch (err) {
        return err as OtpClientError;
      } finally {
        client.close();
      }
      throw new Error('storeKey should have failed');
    };

    const wrongToken = await failure(
      new OtpClient({ url: a.url, ca: fx.caPem, storeToken: 'not-the-store-token' }),
    );
    expect(wrongToken).toBeInstanceOf(OtpClientError);
    // retryable: the token may be mid-rotation; the worker waits rather than failing builds
    expect(wrongToken).toMatchObject({ status: 401, retryable: true });
    expect(wrongToken.message).toMatch(/HTTP 401 \(missing or wrong bearer token\)/);

    const notAKey = await failure(
      new OtpClient({ url: a.url, ca: fx.caPem, storeToken: fx.storeToken }),
      'hello',
    );
    expect(notAKey).toMatchObject({ status: 400, retryable: false });

    const down = await failure(
      new OtpClient({
        url: `https://127.0.0.1:${await freePort()}`,
        ca: fx.caPem,
        storeToken: fx.storeToken,
      }),
    );
    expect(down).toMatchObject({ status: undefined, retryable: true });
    expect(down.message).toMatch(/unreachable.*ECONNREFUSED/);

    for (const err of [wrongToken, notAKey, down]) {
      for (const line of keyLines(key)) expect(err.message.includes(line)).toBe(false);
      expect(err.message.includes(fx.storeToken)).toBe(false);
    }
  });
});

describe('settings', () => {
  it('name the variable that is missing or wrong', () => {
    expect(() => loadOtpSettings({})).toThrow(/HOSTFLOW_OTP_TLS_CERT_FILE/);
    const files = {
      HOSTFLOW_OTP_TLS_CERT_FILE: 'c',
      HOSTFLOW_OTP_TLS_KEY_FILE: 'k',
      HOSTFLOW_OTP_STORE_TOKEN_FILE: 't',
      HOSTFLOW_OTP_SEALING_KEY_FILE: 's',
    };
    expect(loadOtpSettings(files)).toMatchObject({
      HOSTFLOW_OTP_LISTEN: '0.0.0.0:8443',
      HOSTFLOW_OTP_TTL_SECONDS: 1200,
      // Its own namespace, never the engine's (HOSTFLOW_NAMESPACE), which holds admin keys.
      HOSTFLOW_OTP_NAMESPACE: 'hostflow-otp',
    });
    expect(() => loadOtpSettings({ ...files, HOSTFLOW_OTP_NAMESPACE: 'Not_A_Namespace' })).toThrow(
      /HOSTFLOW_OTP_NAMESPACE: must be a Kubernetes namespace name/,
    );
    expect(() => loadOtpSettings({ ...files, HOSTFLOW_OTP_TTL_SECONDS: 'soon' })).toThrow(
      /HOSTFLOW_OTP_TTL_SECONDS/,
    );
    expect(() => loadOtpSettings({ ...files, HOSTFLOW_OTP_LISTEN: '8443' })).toThrow(
      /HOSTFLOW_OTP_LISTEN: must be host:port/,
    );
  });

  it('stop the process at start with the reason', async () => {
    const proc = spawnManaged(
      'otp-server (bad key)',
      process.execPath,
      [join(REPO_ROOT, 'dist/otp-server/main.js')],
      {
        env: {
          ...process.env,
          KUBECONFIG: testEnv('kubeconfig'),
          HOSTFLOW_OTP_NAMESPACE: fx.namespace,
          HOSTFLOW_OTP_LISTEN: `127.0.0.1:${await freePort()}`,
          HOSTFLOW_OTP_TLS_CERT_FILE: fx.certFile,
          HOSTFLOW_OTP_TLS_KEY_FILE: fx.keyFile,
          HOSTFLOW_OTP_STORE_TOKEN_FILE: fx.storeTokenFile,
          HOSTFLOW_OTP_SEALING_KEY_FILE: fx.storeTokenFile, // not 32 bytes
        },
      },
    );
    expect(await proc.exited).toBe(1);
    expect(proc.tail()).toContain(`the sealing key ${fx.storeTokenFile} must hold 32 bytes`);
  });
});

describe('logs', () => {
  // Last: scans what every process of this file wrote.
  it('have one line per request and never a key or an OTP', async () => {
    await a.stop();
    const logs = fx.logFiles.map((file) => readFileSync(file, 'utf8')).join('\n');
    // JSON lines (runtime/logger.ts): the request line is each record's msg.
    const messages = logs
      .split('\n')
      .filter(Boolean)
      .map((line) => (JSON.parse(line) as { msg: string }).msg)
      .join('\n');
    expect(messages).toMatch(/^POST \/store 201 \d+\.\dms$/m);
    expect(messages).toMatch(/^POST \/otp 200 \d+\.\dms$/m);
    expect(messages).toMatch(/^POST \/otp 404 \d+\.\dms$/m);
    expect(messages).toMatch(/^POST \(other\) 404 \d+\.\dms$/m);
    expect(logs).not.toContain('PRIVATE KEY');
    expect(secretMaterial.length).toBeGreaterThan(20);
    for (const secret of secretMaterial) {
      const pieces = secret.includes('PRIVATE KEY') ? keyLines(secret) : [secret];
      for (const piece of pieces) expect(logs.includes(piece)).toBe(false);
    }
    expect(logs.includes(fx.storeToken)).toBe(false);
  });
});
