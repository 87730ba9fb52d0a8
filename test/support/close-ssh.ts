// Every test file ends by closing the SSH connections its in-process activities pooled
// (activities/ssh/connection-pool.ts): idle ones would otherwise hold jest up to IDLE_CLOSE_MS.
import { afterAll } from '@jest/globals';
import { closeSshConnections } from '../../activities/ssh/connection-pool.js';

afterAll(() => closeSshConnections());
