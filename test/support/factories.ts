/**
 * The one set of test factories, for every tier:
 * - unit specs: `testPrincipal` / `testSession` (principals), `TestClock`, `FakeDirectory`
 *   (the directory port in memory), `testSettings`, `CountedOutcomes` (a verification outcome
 *   recorder whose writes stay in memory);
 * - database, HTTP and host tiers: `Seeder` (orgs, users, members, workspaces, sessions, on a
 *   test database), `insertKeyRow(s)` (key rows as minting writes them),
 *   `createSeededDatabase` and `openRepositoryDatabase` (a database of the test's own);
 * - `NOWHERE`, the id that names nothing.
 */
import type { KeysUsageIdentityOptions } from '../../src/settings/keys-usage-identity.options.js';
import { Settings } from '../../src/settings/settings.js';
import { TEST_API_KEY_SECRET, TEST_SESSION_SECRET } from './seed.js';

export { TestClock } from './clock.js';
export { testPrincipal, testSession } from './principal.js';
export { FakeDirectory } from './fakes.js';
export { CountedOutcomes } from './outcomes.js';
export {
  handSignedJwt,
  JsonText,
  jwtPart,
  Seeder,
  TEST_API_KEY_SECRET,
  TEST_SESSION_SECRET,
  type SessionOptions,
} from './seed.js';
export { insertKeyRow, insertKeyRows, testKeyHash, type KeyRow, type KeyRowOptions } from './key-rows.js';
export {
  createSeededDatabase,
  createTestDatabase,
  openRepositoryDatabase,
  type RepositoryDatabase,
  type TestDatabase,
} from './database.js';

/** The module's settings as the test apps have them (the test secrets), with `options` on top. */
export function testSettings(options: Partial<KeysUsageIdentityOptions> = {}): Settings {
  return new Settings({ apiKeySecret: TEST_API_KEY_SECRET, session: { secret: TEST_SESSION_SECRET }, ...options });
}

/** A well-formed UUID (version 4) that names nothing in any test database. */
export const NOWHERE = '0b9e4a7e-3c55-4c1e-9d9a-5b8f1e2d7c61';
