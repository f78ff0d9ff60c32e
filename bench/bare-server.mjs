// The baseline: a bare node:http server answering a JSON body the size of a /me response.
// Every ratio the bench prints is "service req/s ÷ this server's req/s in the same run".
import { createServer } from 'node:http';

const body = {
  user_id: '6f1c1f57-3b8e-4f44-9d7e-1b2a3c4d5e6f',
  org_id: '0a9b8c7d-6e5f-4a3b-8c2d-1e0f9a8b7c6d',
  email: 'bench@example.com',
  scopes: ['decisions:read'],
  org_role: 'owner',
  org_member_count: 1,
};

const server = createServer((req, res) => {
  const json = JSON.stringify(body);
  res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(json) });
  res.end(json);
});

server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`${JSON.stringify({ port: server.address().port })}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
