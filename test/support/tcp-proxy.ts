import net from 'node:net';

/** The PostgreSQL Terminate message ('X', length 4): what a client sends when it closes a connection cleanly. */
const TERMINATE = Buffer.from([0x58, 0, 0, 0, 4]);

interface Link {
  client: net.Socket;
  upstream: net.Socket | null;
  /** Bytes the client sent while no upstream existed yet (held during a black hole). */
  sawTerminate: boolean;
  /** Server bytes not yet forming a whole message (only when filtering notifications). */
  partial: Buffer;
}

/** PostgreSQL's NotificationResponse message type ('A'): what LISTEN delivers. */
const NOTIFICATION = 0x41;

/**
 * A TCP proxy in front of PostgreSQL that a test can break without touching the shared server:
 * - `refuse()`: stop listening and reset every connection (the database is down: ECONNREFUSED);
 * - `blackhole()`: accept connections but forward no byte either way (a partition or a frozen
 *   server: only timeouts can notice); bytes stay in the kernel buffers, as TCP would keep them;
 * - `restore()`: back to normal; held connections are connected and flushed;
 * - `latencyMs`: delays every chunk in both directions (slow database);
 * - `dropNotifications` (when started with `{ filterNotifications: true }`): forwards every
 *   server message but the notifications LISTEN delivers, as a pooler in transaction mode or a
 *   proxy that drops idle server-to-client traffic would: queries still answer, changes go unheard.
 */
export class TcpProxy {
  latencyMs = 0;
  dropNotifications = false;
  private server: net.Server;
  private readonly links = new Set<Link>();
  private mode: 'pass' | 'refuse' | 'blackhole' = 'pass';
  /** Connections closed so far, and how many of them ended with a Terminate message. */
  readonly closed = { total: 0, terminated: 0 };
  /** Called with each chunk the client sends upstream (e.g. to notice a query going out). */
  onClientData: ((chunk: Buffer) => void) | null = null;

  private constructor(
    private readonly target: { host: string; port: number },
    public port: number,
    private readonly filterNotifications: boolean,
  ) {
    this.server = this.createServer();
  }

  /** `filterNotifications`: read the server's messages, so `dropNotifications` can take effect (no TLS). */
  static async start(targetUrl: string, options: { filterNotifications?: boolean } = {}): Promise<TcpProxy> {
    const u = new URL(targetUrl);
    const proxy = new TcpProxy(
      { host: u.hostname, port: Number(u.port || 5432) },
      0,
      options.filterNotifications ?? false,
    );
    await proxy.listen(0);
    return proxy;
  }

  /** `url` with its host and port replaced by the proxy's. */
  urlFor(url: string): string {
    const u = new URL(url);
    u.hostname = '127.0.0.1';
    u.port = String(this.port);
    return u.toString();
  }

  get connections(): number {
    return this.links.size;
  }

  async refuse(): Promise<void> {
    this.mode = 'refuse';
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    for (const link of this.links) this.drop(link);
    await closed;
  }

  blackhole(): void {
    this.mode = 'blackhole';
    for (const link of this.links) {
      link.client.pause();
      link.upstream?.pause();
    }
  }

  async restore(): Promise<void> {
    const was = this.mode;
    this.mode = 'pass';
    if (was === 'refuse') {
      this.server = this.createServer();
      await this.listen(this.port);
    } else if (was === 'blackhole') {
      for (const link of this.links) {
        if (!link.upstream) this.connectUpstream(link);
        link.client.resume();
        link.upstream?.resume();
      }
    }
  }

  async close(): Promise<void> {
    for (const link of this.links) this.drop(link);
    await new Promise<void>((resolve) => (this.server.listening ? this.server.close(() => resolve()) : resolve()));
  }

  private createServer(): net.Server {
    return net.createServer((client) => {
      const link: Link = { client, upstream: null, sawTerminate: false, partial: Buffer.alloc(0) };
      this.links.add(link);
      client.on('data', (chunk) => {
        this.onClientData?.(chunk);
        if (chunk.length >= TERMINATE.length && chunk.subarray(chunk.length - TERMINATE.length).equals(TERMINATE)) {
          link.sawTerminate = true;
        }
        this.forward(chunk, () => link.upstream);
      });
      client.on('error', () => this.drop(link));
      client.on('close', () => this.drop(link));
      if (this.mode === 'blackhole') client.pause();
      else this.connectUpstream(link);
    });
  }

  private connectUpstream(link: Link): void {
    const upstream = net.connect(this.target.port, this.target.host);
    link.upstream = upstream;
    upstream.on('data', (chunk) => {
      const out = this.filterNotifications ? this.withoutNotifications(link, chunk) : chunk;
      if (out.length > 0) this.forward(out, () => link.client);
    });
    upstream.on('error', () => this.drop(link));
    upstream.on('close', () => this.drop(link));
  }

  private forward(chunk: Buffer, to: () => net.Socket | null): void {
    const write = () => {
      const socket = to();
      if (socket && !socket.destroyed) socket.write(chunk);
    };
    if (this.latencyMs > 0) setTimeout(write, this.latencyMs);
    else write();
  }

  /** The whole server messages of `chunk` (with what was held back before it), notifications dropped if asked. */
  private withoutNotifications(link: Link, chunk: Buffer): Buffer {
    let buf = Buffer.concat([link.partial, chunk]);
    const out: Buffer[] = [];
    while (buf.length >= 5 && buf.length >= 1 + buf.readUInt32BE(1)) {
      const size = 1 + buf.readUInt32BE(1);
      if (!(this.dropNotifications && buf[0] === NOTIFICATION)) out.push(buf.subarray(0, size));
      buf = buf.subarray(size);
    }
    link.partial = buf;
    return Buffer.concat(out);
  }

  private drop(link: Link): void {
    if (!this.links.delete(link)) return;
    this.closed.total++;
    if (link.sawTerminate) this.closed.terminated++;
    link.client.destroy();
    link.upstream?.destroy();
  }

  private listen(port: number): Promise<void> {
    return new Promise((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(port, '127.0.0.1', () => {
        this.server.off('error', reject);
        this.port = (this.server.address() as net.AddressInfo).port;
        resolve();
      });
    });
  }
}
