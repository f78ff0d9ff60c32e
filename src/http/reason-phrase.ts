import { STATUS_CODES } from 'node:http';

/** The reason phrase of an HTTP status (`error` in our error bodies, the status line's text): Node's own table. */
export function reasonPhrase(status: number): string {
  return STATUS_CODES[status] ?? 'Error';
}
