// Asserting on the failures activities throw for Temporal's retry policy.
import { expect } from '@jest/globals';
import { ApplicationFailure } from '@temporalio/common';

/** Awaits a promise that must reject with an ApplicationFailure, and returns that failure. */
export async function expectFailure(promise: Promise<unknown>): Promise<ApplicationFailure> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ApplicationFailure);
  return err as ApplicationFailure;
}
