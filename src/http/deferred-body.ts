import { isUtf8 } from 'node:buffer';
import { BadRequestException } from '@nestjs/common';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { DeferredBodyError } from '../common/validation.js';
import { ERRORS } from '../common/error-messages.js';

/** Deepest nesting of arrays and objects a JSON body may have (validation recurses per level). */
export const MAX_JSON_DEPTH = 32;

/**
 * The deepest nesting of `[`/`{` in JSON text, stopping as soon as it passes `limit`: a linear
 * scan that skips strings, so a body of 10,000 brackets costs no recursion anywhere.
 */
export function jsonDepthExceeds(text: string, limit = MAX_JSON_DEPTH): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c)
        i++; // backslash: skip the escaped character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > limit) return true;
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return false;
}

/**
 * Fastify parses JSON before any guard runs, so a malformed body would be answered 400 ahead of
 * the credential check (a missing credential must be 401, an API key on a lifecycle route 403,
 * keys not configured 501). The same parser (with prototype-poisoning refused) runs here, but a
 * parse error is handed to the route as a DeferredBodyError, which the body pipe raises after
 * authentication. The size limit stays first: an oversized body is refused (413) unread.
 *
 * Before parsing, the raw bytes must be UTF-8 (Fastify would silently turn bad bytes into
 * U+FFFD) and the nesting at most MAX_JSON_DEPTH deep (deeper bodies overflowed the validator's
 * stack); each answers a 400 naming the limit, before any validation.
 */
/** A request whose JSON body's text was kept as received. */
export interface RawBodyCarrier {
  rawBody?: string;
}

export function deferJsonErrors(fastify: FastifyInstance): void {
  // Fastify's default JSON parser is the callback form (its type admits the promise form too).
  const parse = fastify.getDefaultJsonParser('error', 'error') as (
    request: FastifyRequest,
    body: string,
    done: (error: Error | null, value?: unknown) => void,
  ) => void;
  fastify.removeContentTypeParser('application/json');
  fastify.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body, done) => {
    const bytes = body as Buffer;
    if (!isUtf8(bytes)) {
      done(null, new DeferredBodyError(new BadRequestException(ERRORS.bodyNotUtf8)));
      return;
    }
    const text = bytes.toString('utf8');
    // Signed webhooks in (POST /secret-scanning/github) are verified over the exact bytes received.
    (request as RawBodyCarrier).rawBody = text;
    if (jsonDepthExceeds(text)) {
      done(null, new DeferredBodyError(new BadRequestException(ERRORS.bodyTooDeep(MAX_JSON_DEPTH))));
      return;
    }
    parse(request, text, (error, value) => done(null, error ? new DeferredBodyError(error) : value));
  });
}
