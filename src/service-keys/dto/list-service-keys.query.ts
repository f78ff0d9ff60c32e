import { OmitType } from '@nestjs/swagger';
import { ListOrgApiKeysQuery } from '../../api-keys/dto/list-org-api-keys.query.js';

/** `GET /orgs/{org_id}/service-keys`: a page, narrowed by state (the org's list without its owner filter). */
export class ListServiceKeysQuery extends OmitType(ListOrgApiKeysQuery, ['user_id'] as const) {}
