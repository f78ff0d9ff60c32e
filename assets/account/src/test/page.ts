// Helpers for the view specs (happy-dom): the page's own markup, and a context with a fake API.
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Principal } from '../../../../packages/client/src/types.js';
import type { Api } from '../api.js';
import type { KeyRecord } from '../keys/key-view.js';
import { ApiDocument, type OpenApiDocument } from '../api-document.js';
import { newSession, type PageContext } from '../context.js';
import { Sections } from '../sections.js';

const INDEX = resolve(import.meta.dirname, '..', '..', 'index.html');

/** Puts the page's body (assets/account/index.html, scripts not run) into the document. */
export function loadPage(): void {
  const html = readFileSync(INDEX, 'utf8');
  // The body only: the head's style sheet and script are not loaded here.
  const body = html.slice(html.indexOf('<body'), html.lastIndexOf('</body>') + '</body>'.length);
  const parsed = new DOMParser().parseFromString(`<!doctype html><html><head></head>${body}</html>`, 'text/html');
  document.title = /<title>([^<]*)<\/title>/.exec(html)?.[1] ?? '';
  document.body.replaceWith(document.importNode(parsed.body, true));
}

export const principal = (over: Partial<Principal> = {}): Principal => ({
  user_id: '00000000-0000-4000-8000-000000000001',
  org_id: '00000000-0000-4000-8000-0000000000aa',
  email: 'ada@example.com',
  scopes: ['decisions:read', 'decisions:write'],
  org_role: 'owner',
  org_member_count: 1,
  ...over,
});

/** A key record as the API answers it, active, with no controls; `over` sets the rest. */
export const keyRecord = (over: Partial<KeyRecord> = {}): KeyRecord => ({
  id: '11111111-2222-4333-8444-555555555555',
  org_id: '00000000-0000-4000-8000-0000000000aa',
  name: 'partner',
  lookup: 'AbCdEfGhIjKl',
  last4: 'Zz9Q',
  scopes: ['decisions:read'],
  created_at: '2026-11-01T00:00:00Z',
  state: 'active',
  ...over,
});

/** A context over the loaded page: `api` is whatever the spec fakes (only what it calls). */
export function testContext(
  options: { doc?: OpenApiDocument; me?: Principal; api?: Partial<Record<keyof Api, unknown>> } = {},
): PageContext {
  const session = newSession('session-token');
  session.me = options.me ?? principal();
  session.orgId = session.me.org_id;
  return {
    session,
    doc: new ApiDocument(options.doc ?? {}),
    api: (options.api ?? {}) as Api,
    panels: {},
    sections: new Sections(document),
  };
}
