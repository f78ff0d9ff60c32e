/**
 * The one set of test factories, for every tier:
 * - unit specs: `testPrincipal` / `testSession` (principals), `TestClock`, `FakeDirectory`
 *   (the directory port in memory);
 * - database, HTTP and host tiers: `Seeder` (orgs, users, members, workspaces, sessions, on a
 *   test database), `insertKeyRow(s)` (key rows as minting writes them),
 *   `createSeededDatabase` and `openRepositoryDatabase` (a database of the test's own);
 * - `NOWHERE`, the id that names nothing.
 */

export { TestClock } from './clock.js';
export { testPrincipal, testSession } from './principal.js';
export { FakeDirectory } from './fakes.js';
export { handSignedJwt, JsonText, jwtPart, Seeder, TEST_API_KEY_SECRET, TEST_SESSION_SECRET, type SessionOptions } from './seed.js';
export { insertApiKeyRow, insertKeyRow, insertKeyRows, testKeyHash, type KeyRow, type KeyRowOptions } from './key-rows.js';
export { createSeededDatabase, createTestDatabase, openRepositoryDatabase, type RepositoryDatabase, type TestDatabase } from './database.js';

/** A well-formed UUID (version 4) that names nothing in any test database. */
export const NOWHERE = '0b9e4a7e-3c55-4c1e-9d9a-5b8f1e2d7c61';
