import { COMMANDS, EXIT, parse, PROGRAM, Streamed, toolHelp, UsageError, version } from './admin-commands.js';

/**
 * The operator CLI's process: parse (admin-commands.ts), open the database, run one command,
 * print one JSON object (or stream an export's lines). Nest, TypeORM and the app are loaded only once a command is known to be
 * well-formed, so help, --version and usage errors answer at once.
 */
/** Writes to stdout and waits when the pipe is full, so a large export never piles up in memory. */
function writeStdout(chunk: string): Promise<void> {
  return new Promise((resolve, reject) => {
    if (process.stdout.write(chunk)) resolve();
    else {
      process.stdout.once('drain', resolve);
      process.stdout.once('error', reject);
    }
  });
}

async function runCommand(name: string, args: unknown): Promise<void> {
  await import('reflect-metadata');
  const [
    { NestFactory },
    { buildAppConfig, loadEnvironment },
    { fillDevelopmentSecrets },
    { openDatabase },
    { AdminModule },
    { DirectoryAdminService },
  ] = await Promise.all([
    import('@nestjs/core'),
    import('../config/app-config.js'),
    import('../config/dev-secrets.js'),
    import('../database/open-database.js'),
    import('./admin.module.js'),
    import('./directory-admin.service.js'),
  ]);
  const config = buildAppConfig(loadEnvironment());
  fillDevelopmentSecrets(config);
  const app = await NestFactory.createApplicationContext(
    AdminModule.register(config, () => openDatabase(config, 'cli')),
    {
      logger: false,
      abortOnError: false,
    },
  );
  try {
    const result = await COMMANDS[name].run(app.get(DirectoryAdminService), args, app);
    if (result instanceof Streamed) await result.pipe(writeStdout);
    else await writeStdout(`${JSON.stringify(result)}\n`);
  } finally {
    await app.close();
  }
}

async function main(argv: string[]): Promise<number> {
  if (argv.length === 0) {
    process.stderr.write(`${toolHelp()}\n`);
    return EXIT.usage;
  }
  const parsed = parse(argv);
  if (parsed.kind === 'version') {
    process.stdout.write(`${version()}\n`);
    return EXIT.ok;
  }
  if (parsed.kind === 'help') {
    process.stdout.write(`${parsed.text}\n`);
    return EXIT.ok;
  }
  const args = COMMANDS[parsed.name].args(parsed.flags);
  await runCommand(parsed.name, args);
  return EXIT.ok;
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    if (error instanceof UsageError) {
      const hint = error.command ? `${PROGRAM} ${error.command} --help` : `${PROGRAM} --help`;
      process.stderr.write(`error: ${error.message}\n(see ${hint})\n`);
      process.exitCode = EXIT.usage;
      return;
    }
    // AdminError, ConfigError, UsageLimitExceededError, DatabaseStartupError: their messages are written for operators.
    process.stderr.write(`error: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = EXIT.failed;
  },
);
