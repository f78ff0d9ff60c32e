import { Controller, Get, Headers, Inject, Res } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import { ACCOUNT_SECURITY_HEADERS, type AccountAsset, type AccountAssetName } from './account-assets.js';

export const ACCOUNT_ASSETS = Symbol('ACCOUNT_ASSETS');

/**
 * The account page and its assets, all from this service (no CDN). The page talks to the same
 * JSON API as any client; this controller only serves files.
 */
@Controller('account')
export class AccountController {
  constructor(@Inject(ACCOUNT_ASSETS) private readonly assets: Record<AccountAssetName, AccountAsset>) {}

  @Get()
  page(@Headers('if-none-match') etag: string | undefined, @Res() reply: FastifyReply): void {
    this.send(reply, this.assets.page, etag);
  }

  @Get('assets/account.js')
  script(@Headers('if-none-match') etag: string | undefined, @Res() reply: FastifyReply): void {
    this.send(reply, this.assets.script, etag);
  }

  @Get('assets/account.css')
  style(@Headers('if-none-match') etag: string | undefined, @Res() reply: FastifyReply): void {
    this.send(reply, this.assets.style, etag);
  }

  @Get('assets/favicon.svg')
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
