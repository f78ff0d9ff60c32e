import { readFileSync } from 'node:fs';
import type { Server } from 'node:http';
import type { Socket } from 'node:net';

/** How long a socket may take or sit idle before it is destroyed, and how many may be open. */
export interface SocketLimits {
  /** Whole header section must arrive within this (Node `headersTimeout`). */
  headersTimeoutMs: number;
  /** Whole request (headers and body) must arrive within this (Node `requestTimeout`). */
  requestTimeoutMs: number;
  /** A socket with no traffic either way for this long is destroyed (Fastify `connectionTimeout`). */
  idleTimeoutMs: number;
  /** An idle keep-alive connection is closed after this (Node `keepAliveTimeout`). */
  keepAliveTimeoutMs: number;
  /** Open connections beyond this are dropped at accept (Node `server.maxConnections`). */
  maxConnections: number;
}

/** File descriptors kept free for the database pool, log files and the metrics listener. */
const DESCRIPTOR_HEADROOM = 256;

/**
 * The default connection cap: below the process's soft descriptor limit (RLIMIT_NOFILE, read
 * from /proc on Linux), so sockets never take the descriptors the pool and files need (EMFILE).
 */
export function defaultMaxConnections(limitsFile = '/proc/self/limits'): number {
  try {
    const line = readFileSync(limitsFile, 'utf8')
      .split('\n')
      .find((l) => l.startsWith('Max open files'));
    const soft = Number(line?.split(/\s{2,}/)[1]);
    if (Number.isFinite(soft) && soft > 0)
      return Math.max(64, Math.min(soft - DESCRIPTOR_HEADROOM, Math.floor(soft * 0.9)));
  } catch {
    // not Linux: fall through
  }
  return 4096;
}

/** Node's options for `http.createServer` (passed as Fastify's `http` option). */
export function httpServerOptions(limits: SocketLimits) {
  return {
    headersTimeout: limits.headersTimeoutMs,
    requestTimeout: limits.requestTimeoutMs,
    keepAliveTimeout: limits.keepAliveTimeoutMs,
    // How often Node checks headers/request timeouts (default 30 s would let a slow client linger).
    connectionsCheckingInterval: Math.max(100, Math.min(1000, Math.floor(limits.headersTimeoutMs / 4))),
  };
}

/** What Fastify needs to apply the limits (it sets these on the server itself). */
export function fastifySocketOptions(limits: SocketLimits) {
  return {
    http: httpServerOptions(limits),
    requestTimeout: limits.requestTimeoutMs,
    keepAliveTimeout: limits.keepAliveTimeoutMs,
    // Node destroys a socket whose timeout fires when no 'timeout' listener is attached.
    connectionTimeout: limits.idleTimeoutMs,
  };
}

/**
 * Applies the connection cap and keeps accept errors harmless. With `maxConnections` Node closes
 * sockets beyond the cap as they are accepted; an accept error (EMFILE when the process runs out
 * of descriptors anyway) is reported as a server 'error' event, which would otherwise crash the
 * process or be mistaken for a failed request: here it is logged and accepting goes on.
 */
export function applySocketLimits(server: Server, limits: SocketLimits, warn: (message: string) => void): void {
  server.maxConnections = limits.maxConnections;
  server.headersTimeout = limits.headersTimeoutMs;
  server.requestTimeout = limits.requestTimeoutMs;
  server.keepAliveTimeout = limits.keepAliveTimeoutMs;
  let lastWarned = 0;
  server.on('error', (error: NodeJS.ErrnoException) => {
    if (error.syscall !== 'accept' && !['EMFILE', 'ENFILE'].includes(error.code ?? '')) return;
    const now = Date.now();
    if (now - lastWarned > 10_000) {
      lastWarned = now;
      warn(`accept failed (${error.code}): connections are being refused until descriptors free up`);
    }
  });
}

/**
 * On shutdown, lets go of connections that carry no request. Node's `server.close()` closes idle
 * keep-alive connections, but not one that was opened and never sent a request (a browser's
 * preconnect, a probe, a slow client still in its headers): the close, and so the shutdown, would
 * wait for the idle timeout. Connections with a request in flight are left to finish it; Node
 * closes them after their response, since the server is no longer listening.
 */
export function releaseUnusedConnectionsOnClose(
  server: Server,
  addPreCloseHook: (hook: (done: () => void) => void) => void,
): void {
  const sockets = new Set<Socket>();
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  addPreCloseHook((done) => {
    // After this hook Fastify calls server.close(); a turn later no connection can be added.
    setImmediate(() => {
      for (const socket of sockets) {
        // Node sets `_httpMessage` to the response while a request is being answered.
        if (!(socket as Socket & { _httpMessage?: unknown })._httpMessage) socket.destroy();
      }
    });
    done();
  });
}
