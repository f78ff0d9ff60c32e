import type { QueryRunner } from 'typeorm';

/**
 * Our migrations name tables without a schema. When the host's DataSource sets `schema` (e.g.
 * 'app'), the first statement of each migration points the migration's transaction at it, so the
 * tables land beside TypeORM's own `migrations` table whatever the connection's search_path.
 * Every migration of this module calls it first, in `up` and in `down`.
 */
export async function useDataSourceSchema(q: QueryRunner): Promise<void> {
  const schema = (q.connection.options as { schema?: string }).schema;
  // public stays second: types of extensions the host (or TypeORM's installExtensions) created there resolve.
  if (schema) await q.query(`SET LOCAL search_path TO ${q.connection.driver.escape(schema)}, public`);
}
