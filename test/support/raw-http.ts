import net from 'node:net';

export interface RawResponse {
  status: number;
  /** Header names in lower case; repeated headers joined with ", ". */
  headers: Record<string, string>;
  text: string;
  body: unknown;
}

export interface RawRequest {
  method: string;
  /** Sent as is: may hold bytes no HTTP client library would send (NUL, bad escapes). */
  path: string;
  /** Sent as is (latin1). A Content-Length is added for a body unless a framing header is given. */
  headers?: Array<[string, string]>;
  body?: string | Buffer;
}

export class RawTimeoutError extends Error {}

/**
 * One HTTP/1.1 request over a fresh socket, byte for byte as given, so tests can send what
 * fetch and node:http refuse to. Rejects with RawTimeoutError when no complete answer comes in
 * `timeoutMs` (a hang is a failure, not a slow test).
 */
export function rawRequest(baseUrl: string, req: RawRequest, timeoutMs = 5_000): Promise<RawResponse> {
  const u = new URL(baseUrl);
  const body =
    req.body === undefined ? undefined : Buffer.isBuffer(req.body) ? req.body : Buffer.from(req.body, 'utf8');
  const lines = [`${req.method} ${req.path} HTTP/1.1`, `Host: ${u.host}`, 'Connection: close'];
  for (const [name, value] of req.headers ?? []) lines.push(`${name}: ${value}`);
  const framed = (req.headers ?? []).some(([n]) => /^(content-length|transfer-encoding)$/i.test(n));
  if (body !== undefined && !framed) lines.push(`Content-Length: ${body.length}`);
  const head = Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'latin1');

  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const socket = net.connect(Number(u.port), u.hostname);
    const timer = setTimeout(() => {
      socket.destroy();
      reject(
        new RawTimeoutError(
          `no complete response to ${req.method} ${JSON.stringify(req.path.slice(0, 80))} within ${timeoutMs} ms`,
        ),
      );
    }, timeoutMs);
    socket.on('connect', () => {
      socket.write(body ? Buffer.concat([head, body]) : head);
    });
    socket.on('data', (c) => {
      chunks.push(c);
      const parsed = tryParse(Buffer.concat(chunks), req.method);
      if (parsed) {
        clearTimeout(timer);
        socket.destroy();
        resolve(parsed);
      }
    });
    // The server may reset the connection right after answering (it refuses to read the rest).
    const finish = (error?: Error) => {
      clearTimeout(timer);
      const parsed = tryParse(Buffer.concat(chunks), req.method, true);
      if (parsed) resolve(parsed);
      else
        reject(
          error ??
            new Error(
              `connection closed without a complete response: ${JSON.stringify(Buffer.concat(chunks).toString('latin1').slice(0, 200))}`,
            ),
        );
    };
    socket.on('error', (e) => finish(e));
    socket.on('close', () => finish());
  });
}

function tryParse(buf: Buffer, method: string, ended = false): RawResponse | null {
  // Skip interim 1xx answers (100 Continue).
  while (/^HTTP\/1\.[01] 1\d\d /.test(buf.subarray(0, 16).toString('latin1'))) {
    const interim = buf.indexOf('\r\n\r\n');
    if (interim < 0) return null;
    buf = buf.subarray(interim + 4);
  }
  const end = buf.indexOf('\r\n\r\n');
  if (end < 0) return null;
  const [statusLine, ...headerLines] = buf.subarray(0, end).toString('latin1').split('\r\n');
  const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(statusLine)?.[1]);
  const headers: Record<string, string> = {};
  for (const line of headerLines) {
    const i = line.indexOf(':');
    const name = line.slice(0, i).trim().toLowerCase();
    const value = line.slice(i + 1).trim();
    headers[name] = headers[name] === undefined ? value : `${headers[name]}, ${value}`;
  }
  let rest = buf.subarray(end + 4);
  if (method === 'HEAD' || status === 204 || status === 304) rest = Buffer.alloc(0);
  else if (headers['content-length'] !== undefined) {
    const length = Number(headers['content-length']);
    if (rest.length < length) return null;
    rest = rest.subarray(0, length);
  } else if (headers['transfer-encoding']?.includes('chunked')) {
    const decoded = dechunk(rest);
    if (!decoded) return null;
    rest = decoded;
  } else if (!ended) return null;
  const text = rest.toString('utf8');
  let body: unknown;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    body = undefined;
  }
  return { status, headers, text, body };
}

function dechunk(buf: Buffer): Buffer | null {
  const parts: Buffer[] = [];
  let at = 0;
  for (;;) {
    const eol = buf.indexOf('\r\n', at);
    if (eol < 0) return null;
    const size = parseInt(buf.subarray(at, eol).toString('latin1'), 16);
    if (size === 0) return Buffer.concat(parts);
    if (buf.length < eol + 2 + size + 2) return null;
    parts.push(buf.subarray(eol + 2, eol + 2 + size));
    at = eol + 2 + size + 2;
  }
}
