export class TenantDto {
  id: string;
  name: string;
  created_at: string;
}

/** What `cli tenant create` prints, and what bootstrap creates. */
export class CreatedTenantDto {
  tenant_id: string;
  management_application_id: string;
  /** The management key in clear, shown this once. */
  management_key: string;
}
