/**
 * The module graph points one way (STYLE.md "The shape: layers that point one way").
 * `npm test` runs this over src/ (tests excluded) before vitest; a cycle or an arrow that points
 * up fails the run. Layers, lowest first:
 *
 *   base      common/ (roles, clock, meters, plan limits, openapi helpers), settings/ (the module's
 *             options turned into Settings), config/ (the server's env), database/ low parts
 *             (transactions, connection errors, migrations and the migrator)
 *   stores    directory/ (users, orgs, members, the OrgDirectory port), events/ (outbox, activity)
 *   coherence coherence/: the cache lease, change notifications and acknowledgements, the change
 *             tail (afterCommit) and CoherentCache, the one way an in-process cache stays coherent
 *             with PostgreSQL; auth's verification cache and versioning's org pins use it.
 *   auth      auth/: strategies, guards, decorators, the principal, key verification. It reads
 *             api keys through its own ApiKeyStore port, which api-keys implements and the
 *             assembler binds, so auth never imports a feature.
 *   budgets   budgets/: what a request may spend (a key's credits and rate windows, the plan's
 *             windows, the orgs' meter blocks: every lease) and the guard that enforces them. It
 *             implements auth's RequestBudget port (the assembler binds it), so it imports auth
 *             and auth never imports it; it reaches usage through ports usage implements.
 *   features  audit/ < api-keys/ < usage/, leaks/, service-keys/, key-policies/ < webhooks/, personal-data/; identity/, orgs/ and versioning/ import no feature
 *             (api-keys/ and service-keys/ import versioning/ for the @Versioned decorator)
 *             (inside base: common/ < settings/ < config/, database/ beside settings; inside stores,
 *             directory/ and events/ import neither other)
 *   library   core/: the dynamic module a host imports (forRoot/forFeature), the ENTITIES/MIGRATIONS list
 *   server    main, bootstrap, app.module, cli/, http/, health/, metrics/, account/, observability/,
 *             and database/'s embedded-server files (data-source-options, embedded, open-database, migrate-cli, roles)
 */
const BASE =
  '^src/(common|settings|config)/|^src/database/(database[.]module|transactions|connection-errors|migrate|migration-schema|pg-pool|in-process-notifications)[.]ts$|^src/database/migrations/';
const STORES = '^src/(directory|events)/';
const COHERENCE = '^src/coherence/';
const AUTH = '^src/auth/';
const BUDGETS = '^src/budgets/';
const FEATURES =
  '^src/(audit|api-keys|usage|identity|orgs|leaks|webhooks|personal-data|versioning|service-keys|key-policies)/';
const LIBRARY = '^src/core/|^src/index[.]ts$';
const SERVER =
  '^src/(main|bootstrap|app[.]module)[.]ts$|^src/(cli|http|health|metrics|account|observability)/|^src/database/(data-source-options|embedded|open-database|migrate-cli|roles)[.]ts$';

const up = (name, from, to, comment) => ({ name, severity: 'error', comment, from: { path: from }, to: { path: to } });
/** A feature may import only the features listed for it (the one allowed direction between features). */
const feature = (name, allowed) => {
  const others = [
    'audit',
    'api-keys',
    'usage',
    'identity',
    'orgs',
    'leaks',
    'webhooks',
    'personal-data',
    'versioning',
    'service-keys',
    'key-policies',
  ].filter((f) => f !== name && !allowed.includes(f));
  return up(
    `feature-${name}`,
    `^src/${name}/`,
    `^src/(${others.join('|')})/`,
    `${name}/ may import ${allowed.length ? allowed.join(', ') : 'no other feature'}`,
  );
};

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'Import cycles between files: split the file that holds two things.',
      from: {},
      to: { circular: true },
    },
    up(
      'base-up',
      BASE,
      `${STORES}|${COHERENCE}|${AUTH}|${BUDGETS}|${FEATURES}|${LIBRARY}|${SERVER}`,
      'common/settings/config/database import nothing above them',
    ),
    up(
      'common-up',
      '^src/common/',
      '^src/(settings|config|database)/',
      'common/ is the bottom: it imports no other folder',
    ),
    up('settings-up', '^src/settings/', '^src/(config|database)/', 'settings/ imports only common/'),
    up(
      'database-low-up',
      '^src/database/(database[.]module|transactions|connection-errors|migrate|migration-schema|pg-pool|in-process-notifications)[.]ts$|^src/database/migrations/',
      '^src/(settings|config)/',
      "database/'s library parts read no settings or env",
    ),
    up('stores-apart', '^src/directory/', '^src/events/', 'directory/ and events/ are independent stores'),
    up('stores-apart-2', '^src/events/', '^src/directory/', 'directory/ and events/ are independent stores'),
    up(
      'stores-up',
      STORES,
      `${COHERENCE}|${AUTH}|${BUDGETS}|${FEATURES}|${LIBRARY}|${SERVER}`,
      'directory/ and events/ import only the base layer',
    ),
    up(
      'coherence-up',
      COHERENCE,
      `${AUTH}|${BUDGETS}|${FEATURES}|${LIBRARY}|${SERVER}`,
      'coherence/ offers caches to auth and the features: it imports only stores and the base layer',
    ),
    up(
      'auth-up',
      AUTH,
      `${BUDGETS}|${FEATURES}|${LIBRARY}|${SERVER}`,
      'auth defines ports (ApiKeyStore, RequestBudget) instead of importing budgets or a feature',
    ),
    up('budgets-up', BUDGETS, `${FEATURES}|${LIBRARY}|${SERVER}`, 'budgets import only auth and the layers below'),
    up('features-up', FEATURES, `${LIBRARY}|${SERVER}`, 'features never import the assembler or the server'),
    up('library-up', LIBRARY, SERVER, 'what a host imports never imports the standalone server'),
    feature('audit', []),
    feature('api-keys', ['audit', 'versioning']),
    feature('usage', ['api-keys']),
    feature('leaks', ['api-keys', 'audit']),
    feature('webhooks', ['leaks', 'audit', 'api-keys']),
    feature('identity', []),
    feature('orgs', []),
    feature('personal-data', ['api-keys', 'audit']),
    up(
      'client-standalone',
      '^packages/client/',
      '^src/',
      'the typed client is a package of its own: its types come from the OpenAPI document, never from the service',
    ),
    up('service-not-client', '^src/', '^packages/', 'the service never imports its client'),
    feature('versioning', []),
    feature('service-keys', ['api-keys', 'audit', 'versioning']),
    feature('key-policies', ['api-keys', 'audit']),
    {
      name: 'no-unknown-folder',
      severity: 'error',
      comment:
        'Every file under src/ that imports anything belongs to a layer above; a new top-level folder must be given one here.',
      from: {
        path: '^src/',
        pathNot: `${BASE}|${STORES}|${COHERENCE}|${AUTH}|${BUDGETS}|${FEATURES}|${LIBRARY}|${SERVER}`,
      },
      to: {},
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '[.]spec[.]ts$' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
  },
};
