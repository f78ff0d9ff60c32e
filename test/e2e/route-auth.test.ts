// Every route of the standalone service with the credentials and scopes it accepts, as a file
// snapshot under review: a change to any route's auth (a decorator removed, a scope changed, a
// route added without one) changes test/e2e/__snapshots__/route-auth.txt in the same diff.
// (Modelled on twenty's endpoint-permission-declarations spec.) Update with `npx vitest run -u`.
import { GUARDS_METADATA, METHOD_METADATA, PATH_METADATA } from '@nestjs/common/constants.js';
import { RequestMethod, type Type } from '@nestjs/common';
import { ModulesContainer } from '@nestjs/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { routeAuth } from '../../src/index.js';
import { startTestApp, type TestApp } from '../support/test-app.js';

const join = (...parts: string[]) =>
  `/${parts
    .flatMap((p) => p.split('/'))
    .filter(Boolean)
    .join('/')}`;
const guardNames = (target: object): string[] =>
  ((Reflect.getMetadata(GUARDS_METADATA, target) as Array<Type<unknown> | object> | undefined) ?? []).map((g) =>
    typeof g === 'function' ? g.name : g.constructor.name,
  );

describe('the auth every route declares', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(async () => t?.close());

  it('matches the reviewed snapshot', async () => {
    const lines = new Set<string>();
    for (const module of t.app.get(ModulesContainer).values()) {
      for (const { metatype } of module.controllers.values()) {
        const controller = metatype as Type<unknown>;
        const base = (Reflect.getMetadata(PATH_METADATA, controller) as string | undefined) ?? '';
        for (const name of Object.getOwnPropertyNames(controller.prototype)) {
          const handler = (controller.prototype as Record<string, unknown>)[name];
          if (name === 'constructor' || typeof handler !== 'function') continue;
          const path = Reflect.getMetadata(PATH_METADATA, handler) as string | string[] | undefined;
          if (path === undefined) continue;
          const method = RequestMethod[Reflect.getMetadata(METHOD_METADATA, handler) as RequestMethod];
          const auth = routeAuth(handler, controller);
          const accepts = auth
            ? `${auth.credentials === 'session' ? 'session only' : 'session or api key'}; scopes: ${auth.scopes.join(', ') || '-'}`
            : 'no credential of ours';
          const guards = [...guardNames(controller), ...guardNames(handler)];
          for (const p of [path].flat()) {
            lines.add(
              `${method.padEnd(6)} ${join(base, p).padEnd(30)} ${accepts}${guards.length ? `; guards: ${[...new Set(guards)].join(', ')}` : ''}`,
            );
          }
        }
      }
    }
    // Code-unit order, not localeCompare: the snapshot must not depend on the machine's locale.
    const byText = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
    const table = [...lines].sort((a, b) => byText(a.slice(7), b.slice(7)) || byText(a, b)).join('\n');
    await expect(`${table}\n`).toMatchFileSnapshot('__snapshots__/route-auth.txt');
  });
});
