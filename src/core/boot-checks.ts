import { RequestMethod, Scope, type Type } from '@nestjs/common';
import { METHOD_METADATA, PATH_METADATA } from '@nestjs/common/constants.js';
import { MetadataScanner, Reflector, type ModuleRef, type ModulesContainer } from '@nestjs/core';
import { routeAuth } from '../auth/route-auth.js';
import type { ScopeRegistry } from '../common/scope-registry.js';
import type { MeterRegistry } from '../common/meter-registry.js';
import { ChargesMeta } from '../budgets/charges.meta.js';
import { DataSource } from 'typeorm';
import { OrgDirectory } from '../directory/org-directory.js';

/**
 * Mistakes a host can make when wiring the module that Nest itself would not report, or would
 * report only as a 500 on the first request. Each throws at boot with what to do instead.
 */
export function checkSingleRoot(root: Type<unknown>, modules: ModulesContainer): void {
  // Nest keys dynamic modules by reference, so each forRoot() call is a module of its own: a
  // second one would mount the routes twice and keep a second set of batchers and settings.
  const roots = [...modules.values()].filter((m) => m.metatype === root);
  if (roots.length > 1) {
    throw new Error(
      `KeysUsageIdentityModule.forRoot()/forRootAsync() is imported ${roots.length} times. Import it once, in the root module; ` +
        'feature modules that need the guards, decorators, @Charges() or UsageService import KeysUsageIdentityModule.forFeature().',
    );
  }
}

/**
 * Run once every singleton is built (onModuleInit, before the app listens): only then does Nest
 * know whether the directory depends, through its constructor or its properties, on the request.
 */
export function checkDirectoryScope(moduleRef: ModuleRef): void {
  // Key verification and session org lookups are batched across requests by singletons, so the
  // directory cannot be built per request; left alone, its dependants would never be built and
  // every authenticated request would answer 500 ("Unknown authentication strategy").
  if (moduleRef.introspect(OrgDirectory as Type<OrgDirectory>).scope !== Scope.DEFAULT) {
    throw new Error(
      'KeysUsageIdentityModule: the orgDirectory is request-scoped or transient (or injects a provider that is). ' +
        'The module reads the directory outside any one request (it batches lookups of concurrent requests), so the ' +
        'directory must be a singleton: inject only singletons, and read per-request context (tenant, user) through ' +
        "AsyncLocalStorage (for example nestjs-cls's ClsService, itself a singleton) instead of REQUEST or a request-scoped provider.",
    );
  }
}

/**
 * The module's statements name their tables without a schema (hand-written SQL on the hot paths),
 * so with a DataSource `schema` other than the connections' current schema they would fail on
 * the first request ("relation does not exist"): refuse at boot and say how to point them at it.
 */
export async function checkDataSourceSchema(moduleRef: ModuleRef): Promise<void> {
  const dataSource = moduleRef.get(DataSource, { strict: false });
  const schema = (dataSource.options as { schema?: string }).schema;
  if (!schema) return;
  const rows: Array<{ current_schema: string | null }> = await dataSource.query('SELECT current_schema()');
  const current = rows[0]?.current_schema ?? null;
  if (current !== schema) {
    throw new Error(
      `KeysUsageIdentityModule: the DataSource's schema is "${schema}" but its connections resolve unqualified tables in ` +
        `"${current ?? '(none)'}". Set the connections' search_path too: add extra: { options: '-c search_path=${schema}' } ` +
        `to the DataSource options (or ALTER ROLE … SET search_path = ${schema}).`,
    );
  }
}

/**
 * What only the module's migrations create: a schema built by TypeORM's `synchronize` has the
 * tables (from ENTITIES) but none of these, so every charge would answer 500
 * (`kui_charge_batch`), a mint's cap would count nothing (`kui_count_api_keys`) and a revoked key
 * would stay verified on other instances (`kui_notify_verification`).
 */
const MIGRATED_FUNCTIONS = [
  'kui_charge_batch',
  'kui_charge_meter_batch',
  'kui_lease_meters',
  'kui_count_meters',
  'kui_count_api_keys',
  'kui_notify_verification',
];

/** Refuses a database the module's migrations have not run on (e.g. one built by `synchronize`). */
export async function checkMigrated(moduleRef: ModuleRef): Promise<void> {
  const dataSource = moduleRef.get(DataSource, { strict: false });
  // Resolved as the statements resolve them: through the connections' search_path.
  const missing: Array<{ name: string }> = await dataSource.query(
    `SELECT f.name FROM unnest($1::text[]) AS f(name)
      WHERE NOT EXISTS (SELECT 1 FROM pg_proc p WHERE p.proname = f.name AND pg_function_is_visible(p.oid))`,
    [MIGRATED_FUNCTIONS],
  );
  if (missing.length > 0) {
    throw new Error(
      `KeysUsageIdentityModule: the database lacks ${missing.map((m) => m.name).join(', ')}, which only the module's migrations create ` +
        "(TypeORM's synchronize builds the tables but not these, and charging, key caps and cache invalidation need them). " +
        "Run the migrations: add MIGRATIONS to the DataSource's migrations with migrationsRun: true (or run them with your migration " +
        'command, or runMigrationsLocked) and leave synchronize off for these tables.',
    );
  }
}

const pathOf = (target: object): string => {
  const path: unknown = Reflect.getMetadata(PATH_METADATA, target);
  const first = Array.isArray(path) ? (path[0] as unknown) : path;
  return typeof first === 'string' ? first.replace(/^\/+|\/+$/g, '') : '';
};

type Route = { controller: Type<unknown>; name: string; handler: () => unknown };

/** Every route method of every controller of the application (this module's and the host's), once each. */
function* routesOf(modules: ModulesContainer): Generator<Route> {
  const scanner = new MetadataScanner();
  const seen = new Set<unknown>();
  for (const module of modules.values()) {
    for (const wrapper of module.controllers.values()) {
      const controller = wrapper.metatype as Type<unknown> | null;
      if (!controller || seen.has(controller)) continue;
      seen.add(controller);
      const prototype = controller.prototype as Record<string, unknown>;
      for (const name of scanner.getAllMethodNames(prototype)) {
        const handler = prototype[name];
        if (typeof handler === 'function') yield { controller, name, handler: handler as () => unknown };
      }
    }
  }
}

/** `GET /exports (ExportsController.run)`, or `ExportsController.run` for a method that is not a route. */
function describeRoute({ controller, name, handler }: Route): string {
  const method = Reflect.getMetadata(METHOD_METADATA, handler) as RequestMethod | undefined;
  return method === undefined
    ? `${controller.name}.${name}`
    : `${RequestMethod[method]} /${[pathOf(controller), pathOf(handler)].filter(Boolean).join('/')} (${controller.name}.${name})`;
}

/**
 * Every route of the application (this module's and the host's) that requires a scope must
 * require a registered one: otherwise no credential could ever reach it. Refuses the start naming
 * the route and the scope.
 */
export function checkRouteScopes(modules: ModulesContainer, registry: ScopeRegistry): void {
  for (const route of routesOf(modules)) {
    const missing = routeAuth(route.handler, route.controller)?.scopes.find((s) => !registry.has(s));
    if (missing === undefined) continue;
    throw new Error(
      `@RequireScopes on ${describeRoute(route)} requires "${String(missing)}", which is not a registered scope: ` +
        'register it in the KeysUsageIdentityModule option scopes (or API_KEY_SCOPES), or fix the name',
    );
  }
}

/**
 * Every route that charges (`@Charges`, on it or on its controller) must charge a defined meter,
 * and carry `@Authenticated()` or `@RequireScopes()`, whose guards (SpendGuard) charge it in the
 * principal's org: otherwise every request to it would fail, or none would be charged. Refuses
 * the start naming the route.
 */
export function checkRouteMeters(modules: ModulesContainer, registry: MeterRegistry): void {
  const reflector = new Reflector();
  for (const route of routesOf(modules)) {
    // As SpendGuard reads it: the route's own @Charges, else its controller's.
    const spec = reflector.getAllAndOverride(ChargesMeta, [route.handler, route.controller]);
    if (!spec) continue;
    if (!registry.has(spec.meter)) {
      throw new Error(
        `@Charges on ${describeRoute(route)} charges "${spec.meter}", which is not a defined meter: ` +
          'define it in the KeysUsageIdentityModule option meters (or USAGE_METERS), or fix the name',
      );
    }
    if (routeAuth(route.handler, route.controller)?.credentials !== 'any') {
      throw new Error(
        `@Charges on ${describeRoute(route)} would never be charged: put @Authenticated() or @RequireScopes() on it (or its controller), whose guards charge it (a @SessionOnly route acts in no org)`,
      );
    }
  }
}
