// The baseline: a bare node:http server answering a JSON body the size of a /me response.
// Every ratio the bench prints is "service req/s ÷ this server's req/s in the same run".
import { createServer } from 'node:http';
import { ME_BODY } from './me-body.mjs';

const body = ME_BODY;

const server = createServer((req, res) => {
  const json = JSON.stringify(body);
  res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(json) });
  res.end(json);
});

server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`${JSON.stringify({ port: server.address().port })}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
