import { Controller, Get, Post } from '@nestjs/common';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  CurrentPrincipal,
  RequireScopes,
  ScopeRegistry,
  type Principal,
  type ScopeRegistryInput,
} from '../../src/index.js';
import { createSeededDatabase, type TestDatabase } from '../support/database.js';
import type { Seeder } from '../support/seed.js';
import { ExportsController, PLATFORMS, startHost, type HostApp } from './support/host-app.js';

/** A host's own scopes, as it passes them in the module options. */
const scopes: ScopeRegistryInput = {
  'invoices:read': { description: 'Read invoices', roles: ['owner', 'admin', 'member', 'viewer'] },
  'invoices:write': { description: 'Create invoices', roles: ['owner', 'admin'] },
};

/** The host's routes, guarded by its own scopes. */
@Controller('invoices')
class InvoicesController {
  constructor(private readonly registry: ScopeRegistry) {}

  @Get()
  @RequireScopes('invoices:read')
  list(@CurrentPrincipal() principal: Principal): { org_id: string | null; known: readonly string[] } {
    return { org_id: principal.orgId, known: this.registry.names };
  }

  @Post()
  @RequireScopes('invoices:write')
  create(): { created: true } {
    return { created: true };
  }
}

let db: TestDatabase;
let seed: Seeder;
beforeAll(async () => ({ db, seed } = await createSeededDatabase()));
afterAll(async () => db?.drop());

describe.each(PLATFORMS)('a host with its own scopes on %s', (platform) => {
  let host: HostApp;
  beforeAll(async () => {
    host = await startHost({ platform, databaseUrl: db.url, scopes, hostControllers: [InvoicesController] });
  });
  afterAll(async () => host?.close());

  it("mints the host's scopes up to the minting role, and refuses an unregistered one naming it", async () => {
    const member = await seed.world('member');
    const minted = await host.api.post('/api-keys', member.session, {
      org_id: member.orgId,
      scopes: ['invoices:read'],
    });
    expect(minted.status).toBe(201);
    expect(minted.body.scopes).toEqual(['invoices:read']);
    const above = await host.api.post('/api-keys', member.session, {
      org_id: member.orgId,
      scopes: ['invoices:write'],
    });
    expect(above.status).toBe(403);
    const unknown = await host.api.post('/api-keys', member.session, { org_id: member.orgId, scopes: ['exports:run'] });
    expect(unknown.status).toBe(400);
    expect(unknown.body.message).toContain('"exports:run"');
    const listed = await host.api.get('/scopes', member.session);
    expect(listed.body.scopes.map((s: { scope: string }) => s.scope)).toEqual([
      'decisions:read',
      'decisions:write',
      'invoices:read',
      'invoices:write',
    ]);
  });

  it('guards its routes with @RequireScopes on its own scopes, for keys and sessions, within the live role ceiling', async () => {
    const admin = await seed.world('admin');
    const minted = await host.api.post('/api-keys', admin.session, {
      org_id: admin.orgId,
      scopes: ['invoices:read', 'invoices:write'],
    });
    expect(minted.status).toBe(201);
    const key = minted.body.key as string;
    expect((await host.api.get('/invoices', key)).body).toMatchObject({ org_id: admin.orgId });
    expect((await host.api.post('/invoices', key, {})).status).toBe(201);
    const readOnly = await host.api.post('/api-keys', admin.session, {
      org_id: admin.orgId,
      scopes: ['decisions:read'],
    });
    const refused = await host.api.get('/invoices', readOnly.body.key);
    expect(refused.status).toBe(403);
    expect(refused.body.message).toContain('invoices:read');
    // Demoted to member: the key loses invoices:write at once; sessions follow the role too.
    await seed.member(admin.orgId, admin.userId, 'member');
    expect((await host.api.post('/invoices', key, {})).status).toBe(403);
    expect((await host.api.get('/invoices', key)).status).toBe(200);
    expect((await host.api.get('/me', key)).body.scopes).toEqual(['invoices:read']);
    const session = await host.api.request('POST', '/invoices', {
      token: admin.session,
      headers: { 'X-Org-Id': admin.orgId },
    });
    expect(session.status).toBe(403);
  });

  it('refuses to start when a route requires a scope the registry lacks, naming the route and the scope', async () => {
    await expect(
      startHost({ platform, databaseUrl: db.url, scopes, hostControllers: [InvoicesController, ExportsController] }),
    ).rejects.toThrow(
      /@RequireScopes on GET \/exports \(ExportsController\.run\) requires "exports:run", which is not a registered scope/,
    );
  });

  it('refuses to start with a malformed registry, in one line naming the module option and the entry', async () => {
    await expect(
      startHost({
        platform,
        databaseUrl: db.url,
        scopes: { 'invoices:read': { description: 'x', roles: ['boss' as 'owner'] } },
      }),
    ).rejects.toThrow(/^KeysUsageIdentityModule option scopes\["invoices:read"\]\.roles: unknown role "boss"[^\n]*$/);
  });
});
