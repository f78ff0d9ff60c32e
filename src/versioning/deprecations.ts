/*
 * Deprecations: an operation, a query parameter of one, or a whole version can be marked
 * deprecated with a date and a sunset date. Answers that use it carry `Deprecation` (RFC 9745,
 * `@<unix seconds>`), `Sunset` (RFC 8594, an HTTP-date) and a `Link` to the changelog entry
 * (rel="deprecation"); past the sunset an operation (or parameter) answers 410 saying what
 * replaced it. Nothing is deprecated today: add entries here, with a changelog entry to link.
 */

export interface Deprecation {
  /** What is deprecated: an operation (by operationId), one of its query parameters, or a version. */
  target: { operationId: string; parameter?: string } | { version: string };
  deprecatedAt: Date;
  sunsetAt: Date;
  /** What replaced it, for the 410 body and the docs. */
  replacement: string;
  /** The changelog entry: absolute, or relative to the deployment. */
  link: string;
}

export const DEPRECATIONS: readonly Deprecation[] = [];

/** The three headers of a deprecation notice. */
export function deprecationHeaders(d: Deprecation): Record<string, string> {
  return {
    Deprecation: `@${Math.floor(d.deprecatedAt.getTime() / 1000)}`,
    Sunset: d.sunsetAt.toUTCString(),
    Link: `<${d.link}>; rel="deprecation"; type="text/html"`,
  };
}

/** The part of a deprecation the 410 body shows. */
export function goneMessage(d: Deprecation, what: string): string {
  return `${what} was removed on ${d.sunsetAt.toISOString().slice(0, 10)}: ${d.replacement}`;
}
