import { HttpException, HttpStatus, Injectable } from '@nestjs/common';
import { requireOrgAdmin } from '../auth/org-access.js';
import type { Principal } from '../auth/principal.js';
import { decodeCursor, MAX_PAGE_LIMIT, pageOf, type PageQuery } from '../common/pagination.js';
import { DirectoryListingUnsupportedError, OrgDirectory, type DirectoryPage } from '../directory/org-directory.js';
import type { OrgDto, OrgMemberDto } from './dto/org.dto.js';
import { ERRORS } from '../common/error-messages.js';

/** The response shapes are the DTO classes themselves (one class per shape). */
export type OrgRecord = OrgDto;
export type MemberRecord = OrgMemberDto;

/** The caller's orgs and, for owners and admins, an org's members. */
@Injectable()
export class OrgsService {
  constructor(private readonly directory: OrgDirectory) {}

  /** `GET /orgs`: every org the session's user belongs to, newest membership first, paginated. */
  async listMine(principal: Principal, query: PageQuery): Promise<{ orgs: OrgRecord[]; next_cursor?: string }> {
    const page = pageRequest(query);
    const rows = await listing(() => this.directory.listUserOrgs(principal.userId, page));
    const { items, nextCursor } = pageOf(rows, page.limit);
    const body: { orgs: OrgRecord[]; next_cursor?: string } = {
      orgs: items.map((o) => ({ id: o.id, name: o.name, plan: o.plan, role: o.role })),
    };
    if (nextCursor) body.next_cursor = nextCursor;
    return body;
  }

  /** `GET /orgs/{org_id}/members`: owners and admins only. */
  async members(
    principal: Principal,
    orgId: string,
    query: PageQuery,
  ): Promise<{ members: MemberRecord[]; next_cursor?: string }> {
    await requireOrgAdmin(this.directory, principal, orgId);
    const page = pageRequest(query);
    const rows = await listing(() => this.directory.listMembers(orgId, page));
    const { items, nextCursor } = pageOf(rows, page.limit);
    const body: { members: MemberRecord[]; next_cursor?: string } = {
      members: items.map((m) => ({
        user_id: m.id,
        email: m.email,
        role: m.role,
        joined_at: m.createdAt.toISOString(),
      })),
    };
    if (nextCursor) body.next_cursor = nextCursor;
    return body;
  }
}

function pageRequest(query: PageQuery): DirectoryPage {
  return { after: query.cursor ? decodeCursor(query.cursor) : null, limit: query.limit ?? MAX_PAGE_LIMIT };
}

/** A host directory that cannot list answers 501, like any feature this deployment does not offer. */
async function listing<T>(read: () => Promise<T>): Promise<T> {
  try {
    return await read();
  } catch (error) {
    if (error instanceof DirectoryListingUnsupportedError) {
      throw new HttpException(
        { statusCode: 501, error: 'Not Implemented', message: ERRORS.listingUnsupported },
        HttpStatus.NOT_IMPLEMENTED,
      );
    }
    throw error;
  }
}
