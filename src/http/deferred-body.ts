import type { FastifyInstance } from 'fastify';
import { DeferredBodyError } from '../common/validation.js';

/**
 * Fastify parses JSON before any guard runs, so a malformed body would be answered 400 ahead of
 * the credential check (a missing credential must be 401, an API key on a lifecycle route 403,
 * keys not configured 501). The same parser (with prototype-poisoning refused) runs here, but a
 * parse error is handed to the route as a DeferredBodyError, which the body pipe raises after
 * authentication. The size limit stays first: an oversized body is refused (413) unread.
 */
/** A request whose JSON body's text was kept as received. */
export interface RawBodyCarrier {
  rawBody?: string;
}

export function deferJsonErrors(fastify: FastifyInstance): void {
  const parse = fastify.getDefaultJsonParser('error', 'error');
  fastify.removeContentTypeParser('application/json');
  fastify.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    // Signed webhooks in (POST /secret-scanning/github) are verified over the exact bytes received.
    (request as RawBodyCarrier).rawBody = body as string;
    parse(request, body as string, (error, value) => done(null, error ? new DeferredBodyError(error) : value));
  });
}
