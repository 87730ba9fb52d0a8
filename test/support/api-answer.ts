// What the API server answered, as a person reads it: for comparing refusals in tests.
import { statusCode } from '../../shared/kube-errors.js';

/** 'allowed', or the status code and message of a refusal. */
export async function apiAnswer(call: Promise<unknown>): Promise<string> {
  try {
    await call;
    return 'allowed';
  } catch (err) {
    const body = (err as { body?: unknown }).body;
    const message = (() => {
      try {
        return (JSON.parse(String(body)) as { message?: string }).message ?? String(body);
      } catch {
        return String(body ?? err);
      }
    })();
    return `${statusCode(err) ?? 'error'}: ${message}`;
  }
}
