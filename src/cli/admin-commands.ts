import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { PROGRAM, UsageError, type CommandSpec, type Flags } from './command-spec.js';
import { DATA_COMMANDS } from './commands/data.commands.js';
import { DIRECTORY_COMMANDS } from './commands/directory.commands.js';
import { USER_DATA_COMMANDS } from './commands/user-data.commands.js';
import { KEY_COMMANDS } from './commands/keys.commands.js';
import { KEY_POLICY_COMMANDS } from './commands/key-policy.commands.js';
import { SERVICE_KEY_COMMANDS } from './commands/service-keys.commands.js';

export { EXIT, PROGRAM, Streamed, UsageError } from './command-spec.js';

/**
 * The operator CLI's command table, help and argument parsing. Each command lives, with its flags,
 * help and what it prints, in one of the topic files under commands/; `--help` is built from them.
 */
export const COMMANDS: Record<string, CommandSpec<unknown>> = {
  ...DIRECTORY_COMMANDS,
  ...KEY_POLICY_COMMANDS,
  ...DATA_COMMANDS,
  ...KEY_COMMANDS,
  ...SERVICE_KEY_COMMANDS,
  ...USER_DATA_COMMANDS,
};

export function version(): string {
  // dist/cli/admin.js and src/cli/admin.ts are both two levels below the package root.
  const pkg = JSON.parse(readFileSync(join(import.meta.dirname, '..', '..', 'package.json'), 'utf8')) as {
    name: string;
    version: string;
  };
  return `${pkg.name} ${pkg.version}`;
}

function synopsis(name: string): string {
  const flags = Object.entries(COMMANDS[name].flags).map(([flag, spec]) => {
    const text = spec.boolean ? `--${flag}` : `--${flag} ${spec.value}`;
    return spec.required ? text : `[${text}]`;
  });
  return [name, ...flags].join(' ');
}

function validFlags(name: string): string {
  return [...Object.keys(COMMANDS[name].flags), 'help'].map((f) => `--${f}`).join(', ');
}

export function toolHelp(): string {
  const names = Object.keys(COMMANDS);
  const width = Math.max(...names.map((n) => n.length));
  return [
    `Usage: ${PROGRAM} <command> [flags]`,
    '       (without npm, e.g. in the production image: node dist/cli/admin.js <command> [flags])',
    '',
    'Commands:',
    ...names.map((n) => `  ${n.padEnd(width)}  ${COMMANDS[n].summary}`),
    '',
    `Help on a command: ${PROGRAM} <command> --help   Version: ${PROGRAM} --version`,
    'It reads the same environment as the server (DATABASE_URL, SESSION_JWT_SECRET, DATA_DIR, ...).',
    'Each command prints one JSON object on stdout (the exports stream lines). Changes in an org',
    'are recorded in its audit log with the operator CLI as actor. Exit codes: 0 done; 1 the command failed',
    '(not found, not a member, limit reached, database unavailable); 2 usage error (unknown command',
    'or flag, missing or bad value). Errors go to stderr.',
  ].join('\n');
}

export function commandHelp(name: string): string {
  const spec = COMMANDS[name];
  const rows = Object.entries(spec.flags).map(([flag, f]) => [
    f.boolean ? `--${flag}` : `--${flag} ${f.value}`,
    f.required ? 'required' : 'optional',
    f.help,
  ]);
  rows.push(['--help', '', 'Show this help.']);
  const w = Math.max(...rows.map((r) => r[0].length));
  return [
    `Usage: ${PROGRAM} ${synopsis(name)}`,
    '',
    spec.summary,
    '',
    'Flags:',
    ...rows.map(([flag, req, help]) => `  ${flag.padEnd(w)}  ${req.padEnd(8)}  ${help}`.trimEnd()),
    '',
    `Prints: ${spec.prints}`,
  ].join('\n');
}

export type Parsed = { kind: 'help'; text: string } | { kind: 'version' } | { kind: 'run'; name: string; flags: Flags };

/** The command is the leading words; the rest are that command's flags, and only those. */
export function parse(argv: string[]): Parsed {
  if (argv.length === 1 && argv[0] === '--version') return { kind: 'version' };
  if (argv[0] === 'help' || argv[0] === '--help' || argv[0] === '-h') {
    const topic = argv.slice(1).join(' ');
    if (!topic) return { kind: 'help', text: toolHelp() };
    if (!COMMANDS[topic]) throw new UsageError(`unknown command "${topic}"`);
    return { kind: 'help', text: commandHelp(topic) };
  }
  const words: string[] = [];
  for (const arg of argv) {
    if (arg.startsWith('-')) break;
    words.push(arg);
  }
  const name = COMMANDS[words.slice(0, 2).join(' ')] ? words.slice(0, 2).join(' ') : words[0];
  if (!name || !COMMANDS[name]) {
    if (words.length > 0 && argv.includes('--help')) {
      // `admin org --help`: the commands of that group.
      const group = Object.keys(COMMANDS).filter((n) => n.startsWith(`${words[0]} `));
      if (group.length > 0) return { kind: 'help', text: group.map((n) => commandHelp(n)).join('\n\n') };
    }
    throw new UsageError(
      words.length
        ? `unknown command "${words.join(' ')}"`
        : argv.length
          ? `unknown flag ${argv[0]}`
          : 'no command given',
    );
  }
  const rest = argv.slice(name.split(' ').length);
  const spec = COMMANDS[name];
  let values: Record<string, string | boolean | undefined>;
  let positionals: string[];
  try {
    ({ values, positionals } = parseArgs({
      args: rest,
      options: {
        ...Object.fromEntries(
          Object.entries(spec.flags).map(([n, f]) => [
            n,
            { type: f.boolean ? ('boolean' as const) : ('string' as const) },
          ]),
        ),
        help: { type: 'boolean' as const, short: 'h' },
      },
      allowPositionals: true,
      strict: true,
    }));
  } catch (error) {
    const e = error as { code?: string; message: string };
    const unknown = /Unknown option '(.*?)'/.exec(e.message)?.[1];
    if (unknown) throw new UsageError(`unknown flag ${unknown} for "${name}"; valid flags: ${validFlags(name)}`, name);
    const missingValue = /Option '(?:-\w, )?(--[\w-]+).*argument missing/.exec(e.message)?.[1];
    if (missingValue) throw new UsageError(`${missingValue} needs a value`, name);
    throw new UsageError(e.message.split('\n')[0], name);
  }
  if (values.help) return { kind: 'help', text: commandHelp(name) };
  if (positionals.length > 0) throw new UsageError(`unexpected argument "${positionals[0]}" for "${name}"`, name);
  const flags = Object.fromEntries(
    Object.entries(values)
      .filter(([k]) => k !== 'help')
      .map(([k, v]) => [k, v === true ? '' : v]),
  ) as Flags;
  return { kind: 'run', name, flags };
}
