import { API_VERSIONS, VersionTable, type ApiVersion } from './api-versions.js';
import { DEPRECATIONS, type Deprecation } from './deprecations.js';
import { VERSION_CHANGES, type VersionChange } from './version-changes.js';

/** What a deployment serves: its versions, how they differ, and what is deprecated. */
export class VersioningPolicy {
  readonly table: VersionTable;

  constructor(
    versions: readonly ApiVersion[] = API_VERSIONS,
    readonly changes: readonly VersionChange[] = VERSION_CHANGES,
    readonly deprecations: readonly Deprecation[] = DEPRECATIONS,
  ) {
    this.table = new VersionTable(versions, deprecations);
  }

  /** The deprecations of one operation (the whole operation, or one of its query parameters). */
  forOperation(operationId: string): Deprecation[] {
    return this.deprecations.filter((d) => 'operationId' in d.target && d.target.operationId === operationId);
  }
}
