import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { createRequire } from 'node:module';
import { cruise, type ICruiseOptions, type IViolation } from 'dependency-cruiser';
import extractTSConfig from 'dependency-cruiser/config-utl/extract-ts-config';
import { afterAll, describe, expect, it } from 'vitest';

const root = resolve(import.meta.dirname, '../..');
const config = createRequire(import.meta.url)(join(root, '.dependency-cruiser.cjs')) as {
  forbidden: NonNullable<ICruiseOptions['ruleSet']>['forbidden'];
  options: ICruiseOptions;
};

async function violations(baseDir: string): Promise<string[]> {
  const { tsConfig, ...options } = config.options as ICruiseOptions & { tsConfig: { fileName: string } };
  const result = await cruise(
    ['src'],
    { ...options, baseDir, ruleSet: { forbidden: config.forbidden }, validate: true },
    undefined,
    { tsConfig: extractTSConfig(join(baseDir, tsConfig.fileName)) },
  );
  if (typeof result.output === 'string') throw new Error('expected a JSON cruise result');
  return result.output.summary.violations.map((v: IViolation) => `${v.rule.name}: ${v.from} -> ${v.to}`).sort();
}

describe('the dependency rules that npm test checks', () => {
  const fixture = mkdtempSync(join(tmpdir(), 'depgraph-'));
  afterAll(() => rmSync(fixture, { recursive: true, force: true }));

  it('report a cycle, an import that points up a layer and a feature import against the allowed direction', async () => {
    // coherence/ sits between the stores and auth: auth may use it, it may not use auth.
    const files: Record<string, string> = {
      'src/common/low.ts': "import '../auth/guard.js';\nexport const low = 1;\n",
      'src/auth/guard.ts': "import '../coherence/lease.js';\nexport const guard = 1;\n",
      'src/coherence/lease.ts': 'export const lease = 1;\n',
      'src/coherence/cache.ts': "import '../auth/guard.js';\nexport const cache = 1;\n",
      'src/auth/a.ts': "import './b.js';\nexport const a = 1;\n",
      'src/auth/b.ts': "import './a.js';\nexport const b = 1;\n",
      'src/auth/verifier.ts': "import '../api-keys/api-key.repository.js';\nexport const v = 1;\n",
      'src/api-keys/api-key.repository.ts':
        "import '../auth/guard.js';\nimport '../audit/audit.service.js';\nexport const r = 1;\n",
      'src/audit/audit.service.ts': "import '../usage/usage.service.js';\nexport const s = 1;\n",
      'src/usage/usage.service.ts': "import '../api-keys/api-key.repository.js';\nexport const u = 1;\n",
      'src/core/root.module.ts': "import '../usage/usage.service.js';\nexport const m = 1;\n",
      'src/stray/thing.ts': "import '../common/low.js';\nexport const t = 1;\n",
      'tsconfig.json': JSON.stringify({
        compilerOptions: { module: 'nodenext', moduleResolution: 'nodenext', strict: true },
        include: ['src/**/*.ts'],
      }),
    };
    for (const [path, text] of Object.entries(files)) {
      mkdirSync(dirname(join(fixture, path)), { recursive: true });
      writeFileSync(join(fixture, path), text);
    }
    const found = await violations(fixture);
    expect(found.filter((v) => !v.startsWith('no-circular'))).toEqual([
      'auth-up: src/auth/verifier.ts -> src/api-keys/api-key.repository.ts',
      'base-up: src/common/low.ts -> src/auth/guard.ts',
      'coherence-up: src/coherence/cache.ts -> src/auth/guard.ts',
      'feature-audit: src/audit/audit.service.ts -> src/usage/usage.service.ts',
      'no-unknown-folder: src/stray/thing.ts -> src/common/low.ts',
    ]);
    // One report per cycle: a <-> b, and audit -> usage -> api-keys -> audit across three folders.
    const cycles = found
      .filter((v) => v.startsWith('no-circular'))
      .map((v) => v.split(' -> ')[0].replace('no-circular: ', ''));
    expect(cycles).toHaveLength(2);
    expect(cycles.filter((f) => f === 'src/auth/a.ts' || f === 'src/auth/b.ts')).toHaveLength(1);
    expect(cycles.filter((f) => /^src\/(audit|usage|api-keys)\//.test(f))).toHaveLength(1);
  });

  it('find nothing wrong in src/', async () => {
    expect(await violations(root)).toEqual([]);
  }, 60_000);
});
