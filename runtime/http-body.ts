// Request bodies, bounded: read up to a limit, and drop (within reason) what a rejected request
// still sends, so the client can read the answer instead of a connection reset.
import type { IncomingMessage } from 'node:http';

/** Beyond a rejected body's limit, bytes read and dropped before the connection is cut. */
const DISCARD_BYTES = 1024 * 1024;

/** Reads at most `limit` bytes; stops listening (leaving the rest unread) past it. */
export function readLimited(req: IncomingMessage, limit: number): Promise<Buffer | 'too-large'> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const done = (result: Buffer | 'too-large' | Error): void => {
      req.off('data', onData).off('end', onEnd).off('error', onError).off('close', onClose);
      if (result instanceof Error) reject(result);
      else resolve(result);
    };
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (size > limit) done('too-large');
      else chunks.push(chunk);
    };
    const onEnd = (): void => done(Buffer.concat(chunks));
    const onError = (err: Error): void => done(err);
    const onClose = (): void => done(new Error('client closed the request'));
    req.on('data', onData).on('end', onEnd).on('error', onError).on('close', onClose);
  });
}

/**
 * Drops what is left of a rejected body so the client reads our answer (closing with unread
 * data would reset the connection under it), but gives up on a client that keeps sending.
 */
export function discardRest(req: IncomingMessage): void {
  if (req.complete) return;
  let dropped = 0;
  req.on('data', (chunk: Buffer) => {
    dropped += chunk.length;
    if (dropped > DISCARD_BYTES) req.socket.destroy();
  });
  req.on('error', () => undefined);
  req.resume();
}
