import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { reasonPhrase } from './reason-phrase.js';

/**
 * Answers for requests that never reach Nest: bytes Node's HTTP parser refuses, URLs the router
 * cannot decode, unsupported `Expect` headers. Fastify and Node answer these themselves with
 * bodies of their own (one echoing the whole path) and without the headers every other
 * response carries; these handlers give them the service's error shape and headers.
 */
export const BASE_HEADERS = {
  'X-Content-Type-Options': 'nosniff',
  'Cache-Control': 'no-store',
} as const;

/** How long an answer to a refused request may take to flush before its socket is destroyed. */
const CLIENT_ERROR_GRACE_MS = 1_000;

function errorBody(statusCode: number, message: string): string {
  return JSON.stringify({ statusCode, error: reasonPhrase(statusCode), message });
}

/** Fastify `frameworkErrors`: a malformed URL or an over-long path parameter, before any route or hook. */
export function frameworkErrors(error: { code?: string }, _request: FastifyRequest, reply: FastifyReply): void {
  const message =
    error.code === 'FST_ERR_MAX_PARAM_LENGTH'
      ? 'A path parameter is too long (ids are UUIDs)'
      : 'The URL is malformed (invalid percent-encoding)';
  void reply
    .code(400)
    .headers({ ...BASE_HEADERS, 'Content-Type': 'application/json; charset=utf-8' })
    .send(errorBody(400, message));
}

/** Fastify `clientErrorHandler`: requests Node's HTTP parser refuses (bad bytes, oversized headers). */
export function clientErrorHandler(error: Error & { code?: string }, socket: Socket): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  let status = 400;
  let message = 'The HTTP request is malformed';
  if (error.code === 'HPE_HEADER_OVERFLOW') {
    status = 431;
    message = 'The request headers are too large (limit 16 KiB)';
  } else if (error.code === 'ERR_HTTP_REQUEST_TIMEOUT') {
    status = 408;
    message = 'The request took too long to arrive';
  }
  const body = errorBody(status, message);
  const head = [
    `HTTP/1.1 ${status} ${reasonPhrase(status)}`,
    'Content-Type: application/json; charset=utf-8',
    `Content-Length: ${Buffer.byteLength(body)}`,
    ...Object.entries(BASE_HEADERS).map(([k, v]) => `${k}: ${v}`),
    'Connection: close',
  ];
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  // end() only half-closes: a peer that never reads would keep the descriptor. Destroy once the
  // answer is flushed, or after a short grace when it never can be.
  socket.end(`${head.join('\r\n')}\r\n\r\n${body}`, () => socket.destroy());
  setTimeout(() => socket.destroy(), CLIENT_ERROR_GRACE_MS).unref();
}

/** Node answers an `Expect` other than 100-continue with a bare 417; give it the usual shape. */
export function answerUnsupportedExpectations(server: Server): void {
  server.on('checkExpectation', (_request: IncomingMessage, response: ServerResponse) => {
    const body = errorBody(417, 'Only "Expect: 100-continue" is supported');
    response.writeHead(417, {
      ...BASE_HEADERS,
      'Content-Type': 'application/json; charset=utf-8',
      'Content-Length': Buffer.byteLength(body),
      Connection: 'close',
    });
    response.end(body);
  });
}
