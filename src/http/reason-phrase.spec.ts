import { describe, expect, it } from 'vitest';
import { reasonPhrase } from './reason-phrase.js';

describe('reasonPhrase', () => {
  it('gives the standard phrase the error bodies and status lines have always carried', () => {
    expect([400, 401, 403, 404, 405, 408, 409, 413, 415, 417, 429, 431, 500, 501, 503].map(reasonPhrase)).toEqual([
      'Bad Request',
      'Unauthorized',
      'Forbidden',
      'Not Found',
      'Method Not Allowed',
      'Request Timeout',
      'Conflict',
      'Payload Too Large',
      'Unsupported Media Type',
      'Expectation Failed',
      'Too Many Requests',
      'Request Header Fields Too Large',
      'Internal Server Error',
      'Not Implemented',
      'Service Unavailable',
    ]);
  });

  it('names any other standard status in words too, and an unknown one "Error"', () => {
    expect([reasonPhrase(422), reasonPhrase(599)]).toEqual(['Unprocessable Entity', 'Error']);
  });
});
