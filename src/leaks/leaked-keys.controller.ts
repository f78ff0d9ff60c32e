import { TooManyRequests } from '../common/too-many-requests.js';
import {
  UseInterceptors,
  Body,
  Controller,
  Headers,
  HttpCode,
  Inject,
  Post,
  Req,
  Res,
  UnauthorizedException,
  BadRequestException,
  ServiceUnavailableException,
} from '@nestjs/common';
import { RequestOriginInterceptor } from '../audit/request-origin.interceptor.js';
import {
  ApiAcceptedResponse,
  ApiBody,
  ApiHeader,
  ApiOkResponse,
  ApiOperation,
  ApiResponse,
  ApiTags,
} from '@nestjs/swagger';
import { ApiErrors, BODY_ERRORS, ErrorBody } from '../common/openapi.js';
import { StrictBodyPipe } from '../common/validation.js';
import { GithubTokenReportDto, RevokeCredentialsDto } from './dto/credentials-revoke.dto.js';
import { GITHUB_SCANNING_KEYS, type GithubScanningKeys } from './github-keys.js';
import { LeakedKeysService, type GithubTokenReport } from './leaked-keys.service.js';
import { ReportThrottle } from './report-throttle.js';
import { ERRORS } from '../common/error-messages.js';

const MAX_GITHUB_TOKENS = 1000;

/** The GitHub scanning route, whose body limit is its own (see GITHUB_REPORT_BODY_LIMIT). */
export const GITHUB_SCANNING_PATH = '/secret-scanning/github';
/**
 * Room for a report of MAX_GITHUB_TOKENS tokens: about 1 KiB each (token, type, source and a
 * long blob URL), where the service's global body limit would refuse one of about 70.
 */
export const GITHUB_REPORT_BODY_LIMIT = 1024 * 1024;

/** Leaked keys, revoked by whoever finds them: GitHub's secret scanning, or anyone with the key. No credential needed. */
@ApiTags('leaked keys')
@UseInterceptors(RequestOriginInterceptor)
@Controller()
export class LeakedKeysController {
  constructor(
    private readonly leaks: LeakedKeysService,
    private readonly throttle: ReportThrottle,
    @Inject(GITHUB_SCANNING_KEYS) private readonly githubKeys: GithubScanningKeys,
  ) {}

  @Post('credentials/revoke')
  @HttpCode(202)
  @ApiOperation({
    operationId: 'revokeLeakedCredentials',
    summary: 'Revoke keys you found (no authentication)',
    description:
      'Every genuine key in the list is revoked right after the answer and its org is told (`api_key.leaked`). The answer is 202 whatever was found, and it does not wait for the revocation, so neither its body nor its time reveals which keys were valid.',
  })
  @ApiBody({ type: RevokeCredentialsDto })
  @ApiAcceptedResponse({ description: 'Accepted; empty body.' })
  @ApiErrors({
    400: 'credentials missing, not an array of strings, or not 1 to 100 items; an unknown field.',
    413: BODY_ERRORS[413],
    429: 'Too many reports from this address this minute; see Retry-After.',
    503: 'The database is unavailable; retry shortly.',
  })
  async revokeCredentials(
    @Req() req: { ip?: string },
    @Res({ passthrough: true }) res: unknown,
    @Body(new StrictBodyPipe(RevokeCredentialsDto)) dto: Readonly<RevokeCredentialsDto>,
  ): Promise<void> {
    const wait = await this.throttle.take(req.ip ?? 'unknown');
    if (wait > 0) {
      throw new TooManyRequests(res, { budget: 'leak_reports', message: ERRORS.tooManyReports, retryAfter: wait });
    }
    await this.leaks.report(dto.credentials);
  }

  @Post(GITHUB_SCANNING_PATH)
  @HttpCode(200)
  @ApiOperation({
    operationId: 'githubSecretScanning',
    summary: 'GitHub secret scanning partner endpoint',
    description:
      "GitHub's format: a JSON array of `{token, type, url, source}`, signed with ECDSA P-256 / SHA-256 over the raw body (`Github-Public-Key-Signature`, key chosen by `Github-Public-Key-Identifier` among GITHUB_SECRET_SCANNING_KEYS). Every true positive is revoked at once; the answer labels each token.",
  })
  @ApiHeader({ name: 'Github-Public-Key-Identifier', required: true })
  @ApiHeader({
    name: 'Github-Public-Key-Signature',
    required: true,
    description: 'base64 DER ECDSA signature of the raw body.',
  })
  @ApiBody({
    schema: {
      type: 'array',
      maxItems: MAX_GITHUB_TOKENS,
      items: {
        type: 'object',
        required: ['token', 'type'],
        properties: {
          token: { type: 'string' },
          type: { type: 'string' },
          url: { type: 'string' },
          source: { type: 'string' },
        },
      },
    },
  })
  @ApiOkResponse({ type: [GithubTokenReportDto] })
  @ApiErrors({
    400: 'The signed body is not an array of {token, type} (at most 1000).',
    413: "The body is over 1 MiB (this route's own limit); refused unread.",
    503: 'No GitHub keys configured (GITHUB_SECRET_SCANNING_KEYS), or the database is unavailable.',
  })
  // Not a bearer challenge (no WWW-Authenticate): the request is authenticated by its signature.
  @ApiResponse({ status: 401, description: 'Missing or bad signature, or an unknown key identifier.', type: ErrorBody })
  async github(
    @Req() req: { rawBody?: string },
    @Headers('github-public-key-identifier') identifier: string | undefined,
    @Headers('github-public-key-signature') signature: string | undefined,
  ): Promise<GithubTokenReport[]> {
    if (!this.githubKeys.configured) throw new ServiceUnavailableException(ERRORS.scanningNotConfigured);
    const raw = req.rawBody;
    if (raw === undefined || !this.githubKeys.verify(Buffer.from(raw, 'utf8'), identifier, signature)) {
      throw new UnauthorizedException(ERRORS.badGithubSignature);
    }
    let tokens: unknown;
    try {
      tokens = JSON.parse(raw);
    } catch {
      throw new BadRequestException(ERRORS.bodyNotJson);
    }
    if (!Array.isArray(tokens) || tokens.length > MAX_GITHUB_TOKENS || !tokens.every(isGithubToken)) {
      throw new BadRequestException(ERRORS.githubBody(MAX_GITHUB_TOKENS));
    }
    return this.leaks.githubReport(tokens);
  }
}

/** One entry of GitHub's secret-scanning report: `token` and `type` strings (other fields ignored). */
function isGithubToken(t: unknown): t is { token: string; type: string } {
  const entry = t as { token?: unknown; type?: unknown } | null | undefined;
  return typeof entry?.token === 'string' && typeof entry?.type === 'string';
}
