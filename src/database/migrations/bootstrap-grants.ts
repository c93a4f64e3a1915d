import type { QueryRunner } from 'typeorm';

/**
 * The management application each tenant was created with (`created_by` null)
 * holds every management permission, including those added later; a migration that adds some grants
 * them to it (and to no application made through the API), and takes them back on the way down.
 */
export async function grantToBootstrapApplications(q: QueryRunner, permissions: string[]): Promise<void> {
  await q.query(
    `UPDATE applications
        SET permissions = ARRAY(SELECT DISTINCT p FROM unnest(permissions || $1::text[]) AS p ORDER BY p)
      WHERE type = 'management' AND created_by IS NULL AND NOT permissions @> $1::text[]`,
    [permissions],
  );
}

export async function revokeFromManagementApplications(q: QueryRunner, permissions: string[]): Promise<void> {
  await q.query(
    `UPDATE applications SET permissions = ARRAY(SELECT p FROM unnest(permissions) AS p WHERE NOT p = ANY($1::text[]))
      WHERE type = 'management'`,
    [permissions],
  );
}
