// A stand-in for what guards a managed Temporal's frontend, which the tests' dev server does not
// do: an HTTP/2 proxy in front of it that passes a gRPC call on only with an API key it accepts
// (`authorization: Bearer …`), and, with `tls`, only over TLS with a client certificate of the
// CA it trusts. Temporal Cloud checks both; the engine's credential reloads are tested through it.
import { connect, createSecureServer, createServer, type Http2Server } from 'node:http2';
import type { AddressInfo } from 'node:net';

export interface GrpcGate {
  address: string;
  /** The API keys let through from now on (a rotation accepts the old and the new a while). */
  acceptKeys(keys: string[]): void;
  /** Calls refused for their key, and client certificates seen on accepted connections. */
  readonly refused: number;
  readonly clientCerts: Set<string>;
  stop(): Promise<void>;
}

export async function startGrpcGate(
  upstream: string,
  options: { keys?: string[]; tls?: { cert: Buffer; key: Buffer; ca: Buffer } },
): Promise<GrpcGate> {
  let keys = options.keys;
  let refused = 0;
  const clientCerts = new Set<string>();
  const session = connect(`http://${upstream}`);
  session.on('error', () => undefined); // a dead upstream fails each call, below
  const server: Http2Server = options.tls
    ? createSecureServer({ ...options.tls, requestCert: true, rejectUnauthorized: true })
    : createServer();
  const sessions = new Set<{ destroy(): void }>();
  server.on('session', (s) => {
    sessions.add(s);
    s.on('close', () => sessions.delete(s));
  });
  server.on('stream', (stream, headers) => {
    stream.on('error', () => undefined);
    const socket = stream.session?.socket as {
      getPeerCertificate?: () => { serialNumber?: string };
    };
    const serial = socket?.getPeerCertificate?.().serialNumber;
    if (serial) clientCerts.add(serial);
    if (keys && !keys.some((key) => headers.authorization === `Bearer ${key}`)) {
      refused++;
      stream.respond(
        {
          ':status': 200,
          'content-type': 'application/grpc',
          'grpc-status': '16', // UNAUTHENTICATED
          'grpc-message': 'API key not accepted',
        },
        { endStream: true },
      );
      return;
    }
    // Upstream's own authority and scheme; the method, path and gRPC headers as they came.
    const forwarded = Object.fromEntries(
      Object.entries(headers).filter(([name]) => name !== ':authority' && name !== ':scheme'),
    );
    const call = session.request(forwarded);
    call.on('error', () => stream.close());
    stream.on('close', () => call.close());
    let trailers: Record<string, string> = {};
    call.on('response', (answer) => {
      // A trailers-only answer (an error) ends the call with its headers.
      if ('grpc-status' in answer) return void stream.respond(answer, { endStream: true });
      stream.respond(answer, { waitForTrailers: true });
      call.pipe(stream);
    });
    call.on('trailers', (received) => (trailers = received as Record<string, string>));
    stream.on('wantTrailers', () => stream.sendTrailers(trailers));
    stream.pipe(call);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    address: `127.0.0.1:${port}`,
    acceptKeys: (next) => (keys = next),
    get refused() {
      return refused;
    },
    clientCerts,
    stop: async () => {
      session.close();
      for (const s of sessions) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
