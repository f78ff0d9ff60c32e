#!/usr/bin/env node
// The README's five-minute tour as a script: `npm run tour` while the server runs (`npm start`).
//
// BASE_URL (default http://localhost:$PORT, PORT default 3000) names the server. The operator
// CLI runs with this process's environment, so give it the server's DATABASE_URL / DATA_DIR.
// Every run creates its own org and user (names carry a run id), so it can run any number of
// times against the same database. Exit 0 when every step answered as the README says; else
// one line naming the step, then exit 1.
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join, resolve } from 'node:path';

const root = resolve(import.meta.dirname, '..');
const base = (process.env.BASE_URL || `http://localhost:${process.env.PORT || 3000}`).replace(/\/+$/, '');
const run = `${Date.now().toString(36)}${randomBytes(3).toString('hex')}`;

class TourError extends Error {}

function say(line) {
  process.stdout.write(`${line}\n`);
}

/** `npm run --silent admin -- ...`, without npm: one JSON object back, or the CLI's own error. */
function admin(...args) {
  const r = spawnSync(process.execPath, [join(root, 'scripts', 'run-built.mjs'), 'cli/admin.js', ...args], {
    encoding: 'utf8',
    env: process.env,
  });
  if (r.status !== 0)
    throw new TourError(`admin ${args.join(' ')} failed (exit ${r.status}): ${(r.stderr || '').trim().split('\n')[0]}`);
  return JSON.parse(r.stdout);
}

async function call(method, path, { token, body } = {}) {
  const headers = {};
  if (token) headers.authorization = `Bearer ${token}`;
  if (body !== undefined) headers['content-type'] = 'application/json';
  let res;
  try {
    res = await fetch(base + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  } catch (error) {
    throw new TourError(
      `no server answers at ${base} (${error.cause?.code ?? error.message}): start one with \`npm start\`, or set BASE_URL / PORT`,
    );
  }
  const text = await res.text();
  let json;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = undefined;
  }
  return { status: res.status, body: json, text };
}

async function expectStatus(title, expected, request) {
  const res = await request;
  if (res.status !== expected)
    throw new TourError(`${title}: expected ${expected}, got ${res.status} ${res.text.slice(0, 200)}`);
  say(`  ${expected}  ${title}`);
  return res.body;
}

async function tour() {
  say(`Tour against ${base} (run ${run})`);
  await expectStatus('the server is up (GET /health/live)', 200, call('GET', '/health/live'));

  const org = admin('org', 'create', '--name', `Acme ${run}`, '--plan', 'free');
  const me = admin('user', 'create', '--email', `ada+${run}@example.com`);
  admin('member', 'add', '--org', org.id, '--user', me.id, '--role', 'owner');
  admin('workspace', 'create', '--org', org.id, '--user', me.id); // "a repository is connected"
  const { token: session } = admin('session', '--user', me.id); // a development session JWT
  say(`  ok   org ${org.id}, owner ${me.email}, workspace, session (CLI)`);

  const who = await expectStatus('who am I, with the session (GET /me)', 200, call('GET', '/me', { token: session }));
  if (who.org_id !== org.id || who.org_role !== 'owner')
    throw new TourError(`GET /me: expected org ${org.id} as owner, got ${JSON.stringify(who)}`);

  const minted = await expectStatus(
    'mint a key; the full key is shown exactly once (POST /api-keys)',
    201,
    call('POST', '/api-keys', {
      token: session,
      body: { org_id: org.id, name: 'laptop', scopes: ['decisions:read'], expires_in_days: 30 },
    }),
  );
  const key = minted.key;
  await expectStatus('the key proves itself (GET /me)', 200, call('GET', '/me', { token: key }));
  await expectStatus('plan and daily meters (GET /usage)', 200, call('GET', '/usage', { token: key }));
  await expectStatus(
    'keys cannot manage keys (GET /api-keys with the key)',
    403,
    call('GET', '/api-keys', { token: key }),
  );

  const list = await expectStatus(
    'list, masked (GET /api-keys)',
    200,
    call('GET', `/api-keys?org_id=${org.id}`, { token: session }),
  );
  const listed = list.keys.find((k) => k.id === minted.id);
  if (!listed || 'key' in listed || listed.last4 !== key.slice(-4))
    throw new TourError(`GET /api-keys: the minted key is not listed masked`);
  await expectStatus(
    'revoke (DELETE /api-keys/{id})',
    204,
    call('DELETE', `/api-keys/${minted.id}`, { token: session }),
  );
  await expectStatus('the revoked key stops working at once (GET /me)', 401, call('GET', '/me', { token: key }));
  say('Tour complete.');
}

tour().then(
  () => process.exit(0),
  (error) => {
    process.stderr.write(`tour failed: ${error instanceof TourError ? error.message : (error?.stack ?? error)}\n`);
    process.exit(1);
  },
);
