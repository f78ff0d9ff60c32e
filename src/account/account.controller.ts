import { Controller, Get, Headers, Inject, Res } from '@nestjs/common';
import { ApiExcludeEndpoint, ApiOkResponse, ApiOperation, ApiResponse, ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { ACCOUNT_SECURITY_HEADERS, type AccountAsset, type AccountAssetName } from './account-assets.js';

export const ACCOUNT_ASSETS = Symbol('ACCOUNT_ASSETS');

/**
 * The account page and its assets, all from this service (no CDN). The page talks to the same
 * JSON API as any client; this controller only serves files.
 */
@ApiTags('account')
@Controller('account')
export class AccountController {
  constructor(@Inject(ACCOUNT_ASSETS) private readonly assets: Record<AccountAssetName, AccountAsset>) {}

  @Get()
  @ApiOperation({
    operationId: 'accountPage',
    summary: 'Account page',
    description: 'The browser page for API keys and usage (HTML; it signs in with a session token and calls this API).',
  })
  @ApiOkResponse({ description: 'The page.', content: { 'text/html': { schema: { type: 'string' } } } })
  @ApiResponse({ status: 304, description: 'Not modified (If-None-Match matched the ETag).' })
  page(@Headers('if-none-match') etag: string | undefined, @Res() reply: FastifyReply): void {
    this.send(reply, this.assets.page, etag);
  }

  @Get('assets/account.js')
  @ApiExcludeEndpoint()
  script(@Headers('if-none-match') etag: string | undefined, @Res() reply: FastifyReply): void {
    this.send(reply, this.assets.script, etag);
  }

  @Get('assets/account.css')
  @ApiExcludeEndpoint()
  style(@Headers('if-none-match') etag: string | undefined, @Res() reply: FastifyReply): void {
    this.send(reply, this.assets.style, etag);
  }

  @Get('assets/favicon.svg')
  @ApiExcludeEndpoint()
  icon(@Headers('if-none-match') etag: string | undefined, @Res() reply: FastifyReply): void {
    this.send(reply, this.assets.icon, etag);
  }

  /** Revalidated on every load (no-cache + ETag), so a deploy is picked up at once. */
  private send(reply: FastifyReply, asset: AccountAsset, ifNoneMatch: string | undefined): void {
    reply.headers({ ...ACCOUNT_SECURITY_HEADERS, 'Cache-Control': 'no-cache', ETag: asset.etag });
    if (ifNoneMatch === asset.etag) {
      reply.code(304).send();
      return;
    }
    reply.type(asset.contentType).send(asset.body);
  }
}
